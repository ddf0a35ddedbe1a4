/**
 * The cooking games' goal, from their rules (the adapter's `goalCheck`): eating the meal wins
 * when the meal was prepared after every direction of the recipe was done, each cut with the
 * knife, each cooking on its appliance and only once (a second cooking burns the food), with
 * every ingredient handled. The outcome judge learns this from the offline episodes; the
 * rules settle the episodes the data did not show it (a tool still in hand, another order).
 */
import type { GoalCheckInput } from '@dreamgym/core/mdp';
import { parseTextworldAction } from './action-grammar.js';

/** The direction a cooking on each appliance performs. */
const COOKING_ON: Record<string, string> = { stove: 'fry', oven: 'roast', bbq: 'grill' };

/** The recipe's directions before `eat meal`, as the instruction writes them. */
function directionsOf(instruction: string): string[] | undefined {
  const match = /Directions: (.*)\.$/.exec(instruction.trim());
  if (!match) return undefined;
  return match[1]!
    .split(', ')
    .map((direction) => direction.trim().toLowerCase())
    .filter((direction) => direction !== 'eat meal');
}

/** The ingredients the instruction names (`Ingredients (2): carrot, red potato.`). */
function ingredientsOf(instruction: string): string[] {
  const match = /Ingredients \(\d+\): ([^.]*)\./.exec(instruction);
  return match ? match[1]!.split(', ').map((name) => name.trim().toLowerCase()) : [];
}

/**
 * Whether eating the meal after `history` wins the game: `undefined` for any other action or
 * an instruction without the cookbook's directions.
 */
export function textworldGoalCheck({ task, history, action }: GoalCheckInput): boolean | undefined {
  if (action.trim().toLowerCase() !== 'eat meal') return undefined;
  const directions = directionsOf(task.instruction);
  if (directions === undefined) return undefined;
  const done = new Map<string, number>();
  const handled = new Set<string>();
  let preparedAfterAll = false;
  for (const step of history) {
    let parsed: ReturnType<typeof parseTextworldAction>;
    try {
      parsed = parseTextworldAction(step.action);
    } catch {
      continue;
    }
    const [first, second] = parsed.args.map((argument) => argument.toLowerCase());
    if (first) handled.add(first);
    let direction: string | undefined;
    if (['slice', 'dice', 'chop'].includes(parsed.type) && second === 'knife')
      direction = `${parsed.type} the ${first}`;
    if (parsed.type === 'cook' && second && COOKING_ON[second])
      direction = `${COOKING_ON[second]} the ${first}`;
    if (parsed.type === 'prepare') {
      preparedAfterAll = directions.every(
        (wanted) => wanted === 'prepare meal' || (done.get(wanted) ?? 0) > 0,
      );
      continue;
    }
    if (direction !== undefined) done.set(direction, (done.get(direction) ?? 0) + 1);
  }
  const cookedOnce = directions.every(
    (wanted) => !/^(fry|roast|grill) /.test(wanted) || done.get(wanted) === 1,
  );
  const everyIngredient = ingredientsOf(task.instruction).every((name) => handled.has(name));
  return preparedAfterAll && cookedOnce && everyIngredient;
}
