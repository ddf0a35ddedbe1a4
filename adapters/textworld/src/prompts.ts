/**
 * The TextWorld parts of DreamGym's prompts. The engine texts quoted here are the cooking
 * games' own (textworld 1.7.0), as the state mapper leaves them.
 */
import type { DomainPrompts } from '@dreamgym/core';

const ENVIRONMENT_DESCRIPTION = `TextWorld cooking games: a text adventure in a house (the kitchen, and in larger games a pantry, corridor, backyard ...). The task names a recipe of one to four ingredients with how each must be prepared; the agent must find every ingredient, cut it with the knife (slice, dice or chop) and cook it (fry on the stove, roast in the oven, grill on the BBQ) as the recipe says, then "prepare meal" in the kitchen with all ingredients in hand, then "eat meal".

States are English texts in the engine's phrasings:
- A room: "-= Kitchen =-" then a description: "You see a closed fridge. You can see a counter. On the counter you see a raw red potato and a knife. You see a stove." and its exits ("There is an exit to the north.").
- "open fridge": "You open the fridge, revealing a carrot and some milk." (or "You open the fridge." when empty). "close fridge": "You close the fridge."
- "take X from Y": "You take the carrot from the fridge." then "Your score has just gone up by one point." when the item is an ingredient of the recipe. "take X": "You pick up the knife from the ground." "drop X": "You drop the knife on the ground."
- "slice X with knife" (with the knife in hand): "You slice the carrot." "cook X with stove": "You fried the carrot." (oven: roasted; BBQ: grilled).
- Preparing an ingredient in a way the recipe does not ask (frying what must be roasted, cooking it twice: "You burned the carrot!") or eating an ingredient loses the game at once: "*** You lost! ***".
- "prepare meal" with every ingredient in hand, prepared as the recipe says: "Adding the meal to your inventory."; otherwise "You still miss something." "eat meal": "You eat the meal. Not bad. *** The End ***" (the game is won).
- "examine cookbook" shows the recipe; "inventory": "You are carrying: a sliced carrot and a knife." or "You are carrying nothing."
- A command that is not possible gives the engine's refusal ("You can't see any such thing.", "You need to take the knife first.", "That's already open.", "That's not a verb I recognise.") and changes nothing.
The episode succeeds, with reward 1, on the step that eats the meal made of every ingredient of the recipe, each prepared as it says (so a recipe of four ingredients needs all four); it fails when an ingredient is prepared the wrong way or eaten; every other step has reward 0.`;

const AGENT_INSTRUCTIONS = `You play a TextWorld cooking game by writing exactly one command per turn, in lower case, naming things exactly as the game does (red potato, fridge, knife). Commands:
- look, inventory, go north/south/east/west
- examine X, open X, close X
- take X, take X from Y, drop X, put X on Y, insert X into Y
- slice X with knife, dice X with knife, chop X with knife (hold both)
- cook X with stove (fry), cook X with oven (roast), cook X with bbq (grill) (hold X)
- prepare meal (in the kitchen, holding every ingredient prepared as the recipe says), then eat meal
Cook and cut each ingredient exactly as the recipe says, and only once: a wrong or repeated preparation loses the game.
Example for "Ingredients (1): carrot. Directions: slice the carrot, roast the carrot, prepare meal, eat meal.": open fridge -> take carrot from fridge -> take knife from counter -> slice carrot with knife -> cook carrot with oven -> prepare meal -> eat meal.`;

const TASK_GENERATION_GUIDANCE = `A good new TextWorld task is a recipe of the cooking game, written as the existing tasks are: "Cook the recipe of the cookbook, then eat the meal. Ingredients (N): A, B. Directions: slice the A, fry the A, dice the B, prepare meal, eat meal." Use only foods the kitchen of the initial state actually holds (in the fridge, on the counter or table), with one to four ingredients, each cut at most once (slice, dice or chop) and cooked at most once (fry, roast or grill), directions in that order per ingredient, then "prepare meal, eat meal". Make tasks harder or easier by adding or removing an ingredient or a preparation.`;

/** The TextWorld domain prompts. */
export const textworldPrompts: DomainPrompts = {
  environmentDescription: ENVIRONMENT_DESCRIPTION,
  agentInstructions: AGENT_INSTRUCTIONS,
  taskGenerationGuidance: TASK_GENERATION_GUIDANCE,
};
