/**
 * The ALFWorld command grammar, as the game files (`game.tw-pddl`, field `grammar`)
 * define it. Objects and receptacles are always named by type and number
 * (`apple 1`, `countertop 2`): the engine answers anything else with `Nothing happens.`
 */
import { ActionParseError, type ParsedAction } from '@dreamgym/core';

/** The verbs of ALFWorld commands, in the order of {@link ALFWORLD_ACTION_FORMS}. */
export type AlfworldActionType =
  | 'go to'
  | 'open'
  | 'close'
  | 'take'
  | 'put'
  | 'clean'
  | 'heat'
  | 'cool'
  | 'slice'
  | 'use'
  | 'examine'
  | 'inventory'
  | 'look';

interface ActionForm {
  type: AlfworldActionType;
  /** Human-readable form for error messages and prompts. */
  form: string;
  /** Words between the arguments: `['from']` for `take O from R`. */
  separators: readonly string[];
}

const FORMS: readonly ActionForm[] = [
  { type: 'go to', form: 'go to R', separators: [] },
  { type: 'open', form: 'open R', separators: [] },
  { type: 'close', form: 'close R', separators: [] },
  { type: 'take', form: 'take O from R', separators: ['from'] },
  { type: 'put', form: 'put O in/on R', separators: ['in/on'] },
  { type: 'clean', form: 'clean O with R', separators: ['with'] },
  { type: 'heat', form: 'heat O with R', separators: ['with'] },
  { type: 'cool', form: 'cool O with R', separators: ['with'] },
  { type: 'slice', form: 'slice O with K', separators: ['with'] },
  { type: 'use', form: 'use O', separators: [] },
  { type: 'examine', form: 'examine X', separators: [] },
  { type: 'inventory', form: 'inventory', separators: [] },
  { type: 'look', form: 'look', separators: [] },
];

/**
 * Every command form ALFWorld accepts, e.g. `take O from R` (O an object such as
 * `apple 1`, R a receptacle such as `countertop 1`, K a knife, X either).
 *
 * The game grammar also lists receptacle-object variants (`put O into O`,
 * `put O in R`) that ALFWorld's tasks never need and no expert trajectory uses; they
 * are rejected with a hint to use `put O in/on R`.
 */
export const ALFWORLD_ACTION_FORMS: readonly string[] = FORMS.map((form) => form.form);

/** An object or receptacle name: a type word and an instance number (`alarmclock 2`). */
const ENTITY = /^[a-z]+ \d+$/;

function formsList(): string {
  return ALFWORLD_ACTION_FORMS.map((form) => `\`${form}\``).join(', ');
}

function fail(action: string, reason: string): never {
  throw new ActionParseError(
    `"${action}" is not an ALFWorld command: ${reason}. Valid forms: ${formsList()}, where O, R, K and X are names with their number such as \`apple 1\` or \`countertop 2\`.`,
    { action },
  );
}

function normalize(text: string): string {
  return text.trim().toLowerCase().replace(/\s+/g, ' ');
}

/** Splits `rest` at the separators, in order, into entity arguments. */
function splitArguments(
  rest: string,
  separators: readonly string[],
  action: string,
  form: string,
): string[] {
  const args: string[] = [];
  let remaining = rest;
  for (const separator of separators) {
    const at = remaining.indexOf(` ${separator} `);
    if (at < 0) fail(action, `\`${form}\` needs \` ${separator} \` between its arguments`);
    args.push(remaining.slice(0, at));
    remaining = remaining.slice(at + separator.length + 2);
  }
  args.push(remaining);
  for (const argument of args) {
    if (!ENTITY.test(argument)) {
      fail(
        action,
        `"${argument}" is not an object or receptacle name (a type and its number, such as \`apple 1\`)`,
      );
    }
  }
  return args;
}

/**
 * Parses an ALFWorld command. Case and spacing are normalized in `text` (the engine's
 * form); `args` are the object and receptacle names in order.
 *
 * @throws ActionParseError listing the valid forms when `text` is not a command.
 * @example
 * parseAlfworldAction('Take Apple 1 from  countertop 2')
 * // { type: 'take', args: ['apple 1', 'countertop 2'], text: 'take apple 1 from countertop 2' }
 */
export function parseAlfworldAction(text: string): ParsedAction {
  const normalized = normalize(text);
  if (normalized === '') fail(text, 'it is empty');
  if (normalized === 'inventory' || normalized === 'look') {
    return { type: normalized, args: [], text: normalized };
  }
  const form = FORMS.find(
    (candidate) =>
      candidate.type !== 'inventory' &&
      candidate.type !== 'look' &&
      normalized.startsWith(`${candidate.type} `),
  );
  if (form === undefined) {
    fail(
      text,
      normalized.startsWith('look ') || normalized.startsWith('inventory ')
        ? '`look` and `inventory` take no arguments'
        : 'it starts with no known verb',
    );
  }
  const rest = normalized.slice(form.type.length + 1);
  if (form.type === 'put' && !rest.includes(' in/on ')) {
    fail(text, 'placing is written `put O in/on R`, with the literal `in/on`');
  }
  const args = splitArguments(rest, form.separators, text, form.form);
  return { type: form.type, args, text: normalized };
}

/**
 * Writes a command from its type and arguments, the inverse of {@link parseAlfworldAction}.
 *
 * @example formatAlfworldAction('put', ['apple 1', 'fridge 1']) // 'put apple 1 in/on fridge 1'
 */
export function formatAlfworldAction(type: AlfworldActionType, args: readonly string[]): string {
  const form = FORMS.find((candidate) => candidate.type === type)!;
  const words: string[] = [type];
  for (const [index, argument] of args.entries()) {
    if (index > 0) words.push(form.separators[index - 1]!);
    words.push(argument);
  }
  return words.join(' ');
}
