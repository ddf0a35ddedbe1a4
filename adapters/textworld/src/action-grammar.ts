/**
 * The action grammar: TextWorld's commands, as the cooking games' command templates write
 * them (`take {o} from {c}`, `cook {f} with {stove}` ...): a verb with none, one or two entity
 * arguments. The canonical text is lower-case with single spaces and no articles before the
 * entities, which is how the engine lists its admissible commands.
 */
import { ActionParseError, type ParsedAction } from '@dreamgym/core';

/** Commands without arguments. */
const BARE = ['look', 'inventory', 'prepare meal'] as const;
/** Directions of `go`. */
export const TEXTWORLD_DIRECTIONS = ['north', 'south', 'east', 'west'] as const;
/** Verbs of one entity. */
const ONE = ['examine', 'take', 'drop', 'eat', 'drink', 'open', 'close'] as const;
/** Verbs of two entities, with the word between them. */
const TWO: Record<string, readonly string[]> = {
  take: ['from'],
  put: ['on'],
  insert: ['into'],
  cook: ['with'],
  slice: ['with'],
  dice: ['with'],
  chop: ['with'],
  lock: ['with'],
  unlock: ['with'],
};

/** The forms of the grammar, for error messages and prompts. */
export const TEXTWORLD_ACTION_FORMS = [
  'look',
  'inventory',
  'go north|south|east|west',
  'examine X',
  'take X',
  'take X from Y',
  'drop X',
  'put X on Y',
  'insert X into Y',
  'open X',
  'close X',
  'cook X with Y',
  'slice X with Y',
  'dice X with Y',
  'chop X with Y',
  'lock X with Y',
  'unlock X with Y',
  'eat X',
  'drink X',
  'prepare meal',
] as const;

/** The action types (`ParsedAction.type`): the verbs. */
export type TextworldActionType =
  | (typeof ONE)[number]
  | keyof typeof TWO
  | 'look'
  | 'inventory'
  | 'prepare'
  | 'go';

const ENTITY_WORD = /^[a-z0-9][a-z0-9'&-]*$/;
const ARTICLES = new Set(['the', 'a', 'an', 'some']);

function reject(text: string, why: string): never {
  throw new ActionParseError(
    `"${text}" is not a TextWorld command: ${why}. The forms are: ${TEXTWORLD_ACTION_FORMS.join('; ')} (X and Y name things the game shows, e.g. "slice red potato with knife").`,
    { action: text },
  );
}

/** An entity's words without a leading article, or undefined when they name nothing. */
function entity(words: readonly string[]): string | undefined {
  const start = words.length > 1 && ARTICLES.has(words[0]!) ? 1 : 0;
  const rest = words.slice(start);
  if (rest.length === 0 || !rest.every((word) => ENTITY_WORD.test(word))) return undefined;
  return rest.join(' ');
}

/**
 * Parses one TextWorld command to `{ type, args, text }`; `text` is canonical and parses to
 * itself.
 *
 * @throws ActionParseError naming the command and listing the forms.
 * @example
 * parseTextworldAction('Slice the Red Potato with knife');
 * // { type: 'slice', args: ['red potato', 'knife'], text: 'slice red potato with knife' }
 */
export function parseTextworldAction(text: string): ParsedAction {
  const words = text.trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) reject(text, 'it is empty');
  const joined = words.join(' ');
  if ((BARE as readonly string[]).includes(joined)) {
    return { type: words[0]!, args: [], text: joined };
  }
  const [verb, ...rest] = words as [string, ...string[]];
  if (verb === 'go') {
    if (rest.length === 1 && (TEXTWORLD_DIRECTIONS as readonly string[]).includes(rest[0]!)) {
      return { type: 'go', args: [rest[0]!], text: joined };
    }
    reject(text, `go takes one direction (${TEXTWORLD_DIRECTIONS.join(', ')})`);
  }
  const links = TWO[verb];
  if (links) {
    const at = rest.findIndex((word, index) => index > 0 && links.includes(word));
    if (at > 0) {
      const first = entity(rest.slice(0, at));
      const second = entity(rest.slice(at + 1));
      if (first === undefined || second === undefined) {
        reject(text, `"${verb} X ${rest[at]} Y" needs two things`);
      }
      return {
        type: verb,
        args: [first, second],
        text: `${verb} ${first} ${rest[at]} ${second}`,
      };
    }
    if (verb !== 'take') reject(text, `"${verb}" takes "${verb} X ${links[0]} Y"`);
  }
  if ((ONE as readonly string[]).includes(verb)) {
    const first = entity(rest);
    if (first === undefined) reject(text, `"${verb}" takes one thing: "${verb} X"`);
    return { type: verb, args: [first], text: `${verb} ${first}` };
  }
  reject(text, `"${verb}" is not one of its verbs`);
}
