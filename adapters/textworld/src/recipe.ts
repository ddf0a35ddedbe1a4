/**
 * A cooking game's recipe: its ingredients and how each is prepared, and the task
 * instruction written from them (the recipe the game's cookbook shows, which the game's
 * objective sends the player to read).
 */
import { z } from 'zod';

/** How an ingredient is cooked: TextWorld's `TYPES_OF_COOKING`. */
export const TEXTWORLD_COOKING = ['raw', 'fried', 'roasted', 'grilled'] as const;
/** How an ingredient is cut: TextWorld's `TYPES_OF_CUTTING`. */
export const TEXTWORLD_CUTTING = ['uncut', 'chopped', 'sliced', 'diced'] as const;

const COOKING_VERB: Record<string, string> = { fried: 'fry', roasted: 'roast', grilled: 'grill' };
const CUTTING_VERB: Record<string, string> = { chopped: 'chop', sliced: 'slice', diced: 'dice' };

/** One ingredient of a recipe. */
export const TextworldIngredientSchema = z.object({
  /** The food's name in the game (`red potato`). */
  name: z.string().min(1),
  /** How it must be cooked. */
  cooking: z.enum(TEXTWORLD_COOKING),
  /** How it must be cut. */
  cutting: z.enum(TEXTWORLD_CUTTING),
});
export type TextworldIngredient = z.infer<typeof TextworldIngredientSchema>;

/**
 * The cookbook's directions for `ingredients`, in its order: each ingredient's cutting, then
 * its cooking, then `prepare meal`.
 */
export function recipeDirections(ingredients: readonly TextworldIngredient[]): string[] {
  const directions: string[] = [];
  for (const { name, cooking, cutting } of ingredients) {
    const cut = CUTTING_VERB[cutting];
    const cook = COOKING_VERB[cooking];
    if (cut) directions.push(`${cut} the ${name}`);
    if (cook) directions.push(`${cook} the ${name}`);
  }
  directions.push('prepare meal');
  return directions;
}

/**
 * The task instruction of a recipe: the ingredients named and counted, and the directions,
 * ending with eating the meal (the game is won when the meal is eaten).
 *
 * @example
 * textworldInstruction([{ name: 'carrot', cooking: 'roasted', cutting: 'sliced' }]);
 * // 'Cook the recipe of the cookbook, then eat the meal. Ingredients (1): carrot.
 * //  Directions: slice the carrot, roast the carrot, prepare meal, eat meal.'
 */
export function textworldInstruction(ingredients: readonly TextworldIngredient[]): string {
  const names = ingredients.map((ingredient) => ingredient.name);
  return `Cook the recipe of the cookbook, then eat the meal. Ingredients (${names.length}): ${names.join(', ')}. Directions: ${[...recipeDirections(ingredients), 'eat meal'].join(', ')}.`;
}
