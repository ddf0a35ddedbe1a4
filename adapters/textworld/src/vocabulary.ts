/**
 * The things of TextWorld's cooking games (`textworld/challenges/tw_cooking/cooking.py` of
 * textworld 1.7.0: `FOODS`, `ENTITIES`, `DOORS`), for reading synthetic states that list no
 * admissible commands: what the text mentions, what can be taken, opened, cooked with.
 */

/** Every food of the cooking games (all splits). */
export const TEXTWORLD_FOODS = [
  'banana',
  'black pepper',
  'block of cheese',
  'carrot',
  'chicken breast',
  'chicken leg',
  'chicken wing',
  'cilantro',
  'egg',
  'flour',
  'green apple',
  'green bell pepper',
  'green hot pepper',
  'lettuce',
  'milk',
  'olive oil',
  'orange bell pepper',
  'parsley',
  'peanut oil',
  'pork chop',
  'purple potato',
  'red apple',
  'red bell pepper',
  'red hot pepper',
  'red onion',
  'red potato',
  'red tuna',
  'salt',
  'sugar',
  'tomato',
  'vegetable oil',
  'water',
  'white onion',
  'white tuna',
  'yellow apple',
  'yellow bell pepper',
  'yellow onion',
  'yellow potato',
] as const;

/** Things that hold others and open: containers (and the oven, which also cooks). */
export const TEXTWORLD_CONTAINERS = ['fridge', 'refrigerator', 'toolbox', 'oven'] as const;

/** Things that hold others on top. */
export const TEXTWORLD_SUPPORTERS = [
  'counter',
  'table',
  'kitchen island',
  'shelf',
  'patio table',
  'patio chair',
  'showcase',
  'sofa',
  'couch',
  'bed',
  'toilet',
  'workbench',
  'stove',
] as const;

/** What cooks: the stove fries, the oven roasts, the BBQ grills. */
export const TEXTWORLD_COOKERS = ['stove', 'oven', 'bbq'] as const;

/** Doors between rooms (they open and close). */
export const TEXTWORLD_DOORS = [
  'frosted-glass door',
  'plain door',
  'sliding patio door',
  'patio door',
  'screen door',
  'barn door',
  'wooden door',
  'front door',
  'fiberglass door',
  'sliding door',
  'commercial glass door',
] as const;

/** Portable things that are not food. */
export const TEXTWORLD_TOOLS = ['knife', 'cookbook', 'recipe book', 'meal'] as const;

/** The cutting verbs, which need the knife in hand. */
export const TEXTWORLD_CUTTING_VERBS = ['slice', 'dice', 'chop'] as const;
