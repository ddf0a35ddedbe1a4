/**
 * Task mutation, the embedded curriculum generator: another recipe in the same kitchen. The
 * recipe gains or loses an ingredient (the goal's entity count changes), swaps an ingredient
 * for another food the kitchen shows, or prepares one differently with a cooker the kitchen has.
 */
import type { SeededRandom, Task } from '@dreamgym/core';
import { worldOf } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { mentionedTextworldEntities } from './episode-tracker.js';
import {
  TEXTWORLD_CUTTING,
  type TextworldIngredient,
  TextworldIngredientSchema,
  textworldInstruction,
} from './recipe.js';
import { TEXTWORLD_FOODS } from './vocabulary.js';

/** The most ingredients a cooking game's recipe has. */
const MAX_INGREDIENTS = 4;
const COOKING_BY_COOKER: Record<string, TextworldIngredient['cooking']> = {
  stove: 'fried',
  oven: 'roasted',
  bbq: 'grilled',
};

type Mutation = 'remove' | 'add' | 'swap' | 'prepare';

/** The foods and cookers the first state shows (its text and its admissible commands). */
function kitchenOf(task: Task): { foods: string[]; cookings: TextworldIngredient['cooking'][] } {
  const first = task.initialObservation;
  if (first === undefined) return { foods: [], cookings: [] };
  const shown = mentionedTextworldEntities(`${first.text}\n${(first.actions ?? []).join('.\n')}`);
  const foods = shown.filter((name) => (TEXTWORLD_FOODS as readonly string[]).includes(name));
  const cookings = shown.flatMap((name) => {
    const cooking = COOKING_BY_COOKER[name];
    return cooking ? [cooking] : [];
  });
  const kinds: TextworldIngredient['cooking'][] = ['raw', ...new Set(cookings)];
  return { foods: foods.sort(), cookings: kinds.sort() };
}

function describe(ingredients: readonly TextworldIngredient[]): string {
  return ingredients
    .map(({ name, cooking, cutting }) => `${name.replace(/ /g, '-')}.${cooking}.${cutting}`)
    .join('+');
}

/**
 * A variation of a cooking task in the same kitchen (same `initialObservation` and world),
 * or undefined when `task` is not a TextWorld recipe task or nothing can change. The child
 * is not playable on the real engine (no game has its recipe): its meta drops `game` and
 * keeps the parent's as `baseGame`.
 */
export function mutateTextworldTask(task: Task, random: SeededRandom): Task | undefined {
  const parsed = z.array(TextworldIngredientSchema).min(1).safeParse(task.meta.ingredients);
  if (!parsed.success) return undefined;
  const ingredients = parsed.data;
  const { foods, cookings } = kitchenOf(task);
  const inRecipe = new Set(ingredients.map((ingredient) => ingredient.name));
  const others = foods.filter((food) => !inRecipe.has(food));
  const mutations: Mutation[] = [];
  if (ingredients.length > 1) mutations.push('remove');
  if (others.length > 0) mutations.push('swap');
  if (others.length > 0 && ingredients.length < MAX_INGREDIENTS) mutations.push('add');
  if (cookings.length > 1) mutations.push('prepare');
  if (mutations.length === 0) return undefined;

  const mutation = random.choice(mutations);
  const next = ingredients.map((ingredient) => ({ ...ingredient }));
  const at = random.int(next.length);
  if (mutation === 'remove') {
    next.splice(at, 1);
  } else if (mutation === 'swap') {
    next[at]!.name = random.choice(others);
  } else if (mutation === 'add') {
    next.push({
      name: random.choice(others),
      cooking: random.choice(cookings),
      cutting: random.choice(TEXTWORLD_CUTTING),
    });
  } else {
    const current = next[at]!;
    const changes = [
      ...cookings.filter((cooking) => cooking !== current.cooking).map((cooking) => ({ cooking })),
      ...TEXTWORLD_CUTTING.filter((cutting) => cutting !== current.cutting).map((cutting) => ({
        cutting,
      })),
    ];
    Object.assign(current, random.choice(changes));
  }
  if (describe(next) === describe(ingredients)) return undefined;

  const { game, ...meta } = task.meta;
  const baseGame = typeof game === 'string' ? game : String(task.meta.baseGame ?? task.id);
  return {
    id: `${baseGame}~${describe(next)}`,
    domain: task.domain,
    instruction: textworldInstruction(next),
    origin: 'generated',
    parentId: task.id,
    ...(task.initialObservation === undefined
      ? {}
      : { initialObservation: task.initialObservation }),
    meta: {
      ...meta,
      baseGame,
      // The same kitchen: what its episodes showed answers the child's episodes too.
      world: worldOf(task),
      ingredients: next,
      ingredientCount: next.length,
      mutation,
    },
  };
}
