/**
 * The WebArena action grammar: what a web agent writes, parsed into a typed action with a
 * canonical text, or rejected with an `ActionParseError` that says why and lists the forms.
 *
 * ```text
 * click [id]            hover [id]           type [id] [text] [0|1]     press [keys]
 * scroll [up|down]      new_tab              tab_focus [index]          close_tab
 * goto [url]            go_back              go_forward                 stop [answer]
 * ```
 *
 * `id` is an element id of the current observation (`[12] link 'Home'`). In `type`, the last
 * argument says whether Enter is pressed after the text (default 1, as in WebArena). `keys`
 * is a key or a combination such as `Control+a` or `Enter`.
 */
import { ActionParseError, type ParsedAction } from '@dreamgym/core';

/** The verbs of the grammar. */
export const WEB_ACTION_TYPES = [
  'click',
  'hover',
  'type',
  'press',
  'scroll',
  'new_tab',
  'tab_focus',
  'close_tab',
  'goto',
  'go_back',
  'go_forward',
  'stop',
] as const;
/** A verb of the web action grammar. */
export type WebActionType = (typeof WEB_ACTION_TYPES)[number];

/** A parsed web action. */
export type WebAction =
  | { type: 'click' | 'hover'; id: number }
  | { type: 'type'; id: number; text: string; pressEnter: boolean }
  | { type: 'press'; keys: string }
  | { type: 'scroll'; direction: 'up' | 'down' }
  | { type: 'new_tab' | 'close_tab' | 'go_back' | 'go_forward' }
  | { type: 'tab_focus'; index: number }
  | { type: 'goto'; url: string }
  | { type: 'stop'; answer: string };

/** Every form of the grammar, for prompts and error messages. */
export const WEB_ACTION_FORMS: readonly string[] = [
  'click [id]',
  'hover [id]',
  'type [id] [text] [0|1]',
  'press [keys]',
  'scroll [up|down]',
  'new_tab',
  'tab_focus [index]',
  'close_tab',
  'goto [url]',
  'go_back',
  'go_forward',
  'stop [answer]',
];

function fail(action: string, reason: string): never {
  throw new ActionParseError(
    `"${action}" is not a web action: ${reason}. Actions: ${WEB_ACTION_FORMS.map((form) => `\`${form}\``).join(', ')}; id is an element id from the observation, as in \`click [12]\`.`,
    { action },
  );
}

/** Modifier and key names agents write, mapped to Playwright's key names. */
const KEY_NAMES: Record<string, string> = {
  ctrl: 'Control',
  control: 'Control',
  cmd: 'Meta',
  command: 'Meta',
  meta: 'Meta',
  win: 'Meta',
  alt: 'Alt',
  option: 'Alt',
  shift: 'Shift',
  enter: 'Enter',
  return: 'Enter',
  esc: 'Escape',
  escape: 'Escape',
  tab: 'Tab',
  space: 'Space',
  backspace: 'Backspace',
  delete: 'Delete',
  del: 'Delete',
  insert: 'Insert',
  home: 'Home',
  end: 'End',
  pageup: 'PageUp',
  pagedown: 'PageDown',
  up: 'ArrowUp',
  down: 'ArrowDown',
  left: 'ArrowLeft',
  right: 'ArrowRight',
  arrowup: 'ArrowUp',
  arrowdown: 'ArrowDown',
  arrowleft: 'ArrowLeft',
  arrowright: 'ArrowRight',
};

/** Playwright key names without an alias above (`F5`, `KeyA`, `Digit1`, `NumpadEnter`). */
const NAMED_KEY = /^(F([1-9]|1[0-9]|2[0-4])|Key[A-Z]|Digit[0-9]|Numpad\w+)$/;

/**
 * Normalizes a key combination (`ctrl+A`, `Enter`, `Meta+Shift+z`) to Playwright's names
 * (`Control+A`); undefined when a part is not a key.
 */
export function normalizeKeyCombination(keys: string): string | undefined {
  const trimmed = keys.trim();
  if (trimmed === '') return undefined;
  if (trimmed === '+') return '+';
  // `Control++` presses the plus key with Control.
  const parts = trimmed.endsWith('++')
    ? [...trimmed.slice(0, -2).split('+'), '+']
    : trimmed.split('+');
  const normalized: string[] = [];
  for (const raw of parts) {
    const part = raw.trim();
    const known = KEY_NAMES[part.toLowerCase()];
    if (known) normalized.push(known);
    else if ([...part].length === 1) normalized.push(part);
    else if (NAMED_KEY.test(part)) normalized.push(part);
    else return undefined;
  }
  return normalized.join('+');
}

/** The bracketed arguments at the start of `rest`: `[12] [x]` -> `['12', 'x']` (no nesting). */
function simpleArguments(rest: string): string[] | undefined {
  const args: string[] = [];
  let remaining = rest.trim();
  while (remaining !== '') {
    const match = /^\[([^\]]*)\]\s*/.exec(remaining);
    if (!match) return undefined;
    args.push(match[1]!.trim());
    remaining = remaining.slice(match[0].length);
  }
  return args;
}

/** Everything between the first `[` and the last `]` of `rest`, which must hold nothing else. */
function freeArgument(rest: string): string | undefined {
  const trimmed = rest.trim();
  if (!trimmed.startsWith('[') || !trimmed.endsWith(']')) return undefined;
  return trimmed.slice(1, -1);
}

function elementId(action: string, verb: string, value: string | undefined): number {
  if (value === undefined || !/^\d+$/.test(value)) {
    fail(
      action,
      `${verb} needs the id of an element of the observation in brackets, as in \`${verb} [12]\`${value === undefined ? '' : `, not [${value}]`}`,
    );
  }
  return Number(value);
}

/** The canonical text of a parsed action. */
export function formatWebAction(action: WebAction): string {
  switch (action.type) {
    case 'click':
    case 'hover':
      return `${action.type} [${action.id}]`;
    case 'type':
      return `type [${action.id}] [${action.text}] [${action.pressEnter ? 1 : 0}]`;
    case 'press':
      return `press [${action.keys}]`;
    case 'scroll':
      return `scroll [${action.direction}]`;
    case 'tab_focus':
      return `tab_focus [${action.index}]`;
    case 'goto':
      return `goto [${action.url}]`;
    case 'stop':
      return `stop [${action.answer}]`;
    default:
      return action.type;
  }
}

/**
 * Parses one action of the grammar. Verbs are case-insensitive; `scroll [direction=down]`
 * (WebArena's prompt form) is accepted as `scroll [down]`, a bare `stop` as `stop []`.
 *
 * @throws ActionParseError saying what is wrong and listing the forms.
 * @example
 * parseWebAction('type [13] [red shoes] [1]'); // { type: 'type', id: 13, text: 'red shoes', pressEnter: true }
 */
export function parseWebAction(text: string): WebAction {
  const action = text;
  const trimmed = text.trim();
  if (trimmed === '') fail(action, 'it is empty');
  const verbMatch = /^([A-Za-z_]+)\s*(.*)$/s.exec(trimmed);
  if (!verbMatch) fail(action, 'it does not start with a verb');
  const verb = verbMatch[1]!.toLowerCase();
  const rest = verbMatch[2]!;
  if (!(WEB_ACTION_TYPES as readonly string[]).includes(verb)) {
    fail(action, `"${verbMatch[1]}" is not a verb of the grammar`);
  }
  switch (verb as WebActionType) {
    case 'click':
    case 'hover': {
      const args = simpleArguments(rest);
      if (args?.length !== 1)
        fail(action, `${verb} takes exactly one argument, the element id: \`${verb} [12]\``);
      return { type: verb as 'click' | 'hover', id: elementId(action, verb, args[0]) };
    }
    case 'type': {
      const idMatch = /^\[\s*([^\]]*?)\s*\]\s*(.*)$/s.exec(rest.trim());
      if (!idMatch) fail(action, 'type needs an element id and a text: `type [12] [hello] [1]`');
      const id = elementId(action, 'type', idMatch[1]);
      const remainder = idMatch[2]!.trim();
      const withFlag = /^\[(.*)\]\s*\[\s*([01])\s*\]$/s.exec(remainder);
      if (withFlag)
        return { type: 'type', id, text: withFlag[1]!, pressEnter: withFlag[2] === '1' };
      const textOnly = freeArgument(remainder);
      if (textOnly === undefined) {
        fail(
          action,
          'type needs the text in brackets after the id, and optionally [0] or [1] for pressing Enter after it: `type [12] [hello] [1]`',
        );
      }
      return { type: 'type', id, text: textOnly, pressEnter: true };
    }
    case 'press': {
      const keys = freeArgument(rest);
      const normalized = keys === undefined ? undefined : normalizeKeyCombination(keys);
      if (keys === undefined || normalized === undefined) {
        fail(
          action,
          'press needs a key or key combination in brackets, such as `press [Enter]` or `press [Control+a]`',
        );
      }
      return { type: 'press', keys: normalized };
    }
    case 'scroll': {
      const args = simpleArguments(rest);
      const direction =
        args?.length === 1 ? args[0]!.toLowerCase().replace(/^direction\s*=\s*/, '') : undefined;
      if (direction !== 'up' && direction !== 'down') fail(action, 'scroll takes [up] or [down]');
      return { type: 'scroll', direction };
    }
    case 'tab_focus': {
      const args = simpleArguments(rest);
      if (args?.length !== 1 || !/^\d+$/.test(args[0]!)) {
        fail(action, 'tab_focus needs the tab index in brackets, counted from 0: `tab_focus [1]`');
      }
      return { type: 'tab_focus', index: Number(args[0]) };
    }
    case 'goto': {
      const url = freeArgument(rest)?.trim();
      if (!url) fail(action, 'goto needs a URL in brackets: `goto [http://example.com/page]`');
      return { type: 'goto', url };
    }
    case 'stop': {
      if (rest.trim() === '') return { type: 'stop', answer: '' };
      const answer = freeArgument(rest);
      if (answer === undefined)
        fail(
          action,
          'stop takes the answer in brackets (empty when there is none): `stop [42]` or `stop []`',
        );
      return { type: 'stop', answer: answer.trim() };
    }
    default: {
      if (rest.trim() !== '') fail(action, `${verb} takes no arguments`);
      return { type: verb as 'new_tab' | 'close_tab' | 'go_back' | 'go_forward' };
    }
  }
}

/** The arguments of a parsed action as text, in order (core's `ParsedAction.args`). */
function argumentsOf(action: WebAction): string[] {
  switch (action.type) {
    case 'click':
    case 'hover':
      return [String(action.id)];
    case 'type':
      return [String(action.id), action.text, action.pressEnter ? '1' : '0'];
    case 'press':
      return [action.keys];
    case 'scroll':
      return [action.direction];
    case 'tab_focus':
      return [String(action.index)];
    case 'goto':
      return [action.url];
    case 'stop':
      return [action.answer];
    default:
      return [];
  }
}

/**
 * Parses an action into core's {@link ParsedAction} (`type`, `args`, canonical `text`): the
 * `parseAction` of every web domain's adapter.
 *
 * @throws ActionParseError when `text` is not in the grammar.
 */
export function parseWebActionText(text: string): ParsedAction {
  const action = parseWebAction(text);
  return { type: action.type, args: argumentsOf(action), text: formatWebAction(action) };
}
