/**
 * Entity transfer: a retrieved transition's next state describes *its* entities
 * (`take mug 3 from cabinet 1` -> `You pick up the mug 3 from the cabinet 1.`); aligning
 * its action with the current one (`take apple 1 from countertop 2`) gives the renaming
 * that makes it describe the current action's entities instead.
 */
import type { ParsedAction } from '../adapter.js';
import { BoundedMemo } from './bounded-memo.js';

/** One renaming: `from` (in the retrieved transition) becomes `to` (in the current one). */
export type EntityPair = readonly [from: string, to: string];

/** The alignment of a retrieved action with the current one. */
export interface ActionAlignment {
  /** Action type both share (the grammar's verb, or the first word without a grammar). */
  type: string;
  /** Renamings, one per differing argument; empty when the actions are equal. */
  pairs: EntityPair[];
}

const NUMBER = /^\d+$/;

/**
 * Whether token `index` is structure (a verb, a preposition) rather than part of an
 * entity name: numbers and words followed by a number (`cabinet` in `cabinet 2`) are names.
 */
function isStructure(words: readonly string[], index: number): boolean {
  return !NUMBER.test(words[index]!) && !NUMBER.test(words[index + 1] ?? '');
}

function tokens(text: string): string[] {
  return text.trim().toLowerCase().split(/\s+/).filter(Boolean);
}

/**
 * Longest common subsequence of two token lists, as index pairs, where only structure
 * words anchor: in `take mug 3 from cabinet 1` vs `take apple 1 from cabinet 2` the shared
 * `1` and `cabinet` belong to entity names.
 */
function anchors(source: string[], target: string[]): Array<[number, number]> {
  const rows = source.length + 1;
  const columns = target.length + 1;
  const table = new Uint16Array(rows * columns);
  for (let i = source.length - 1; i >= 0; i -= 1) {
    for (let j = target.length - 1; j >= 0; j -= 1) {
      table[i * columns + j] =
        source[i] === target[j] && isStructure(source, i) && isStructure(target, j)
          ? table[(i + 1) * columns + j + 1]! + 1
          : Math.max(table[(i + 1) * columns + j]!, table[i * columns + j + 1]!);
    }
  }
  const result: Array<[number, number]> = [];
  let i = 0;
  let j = 0;
  while (i < source.length && j < target.length) {
    if (source[i] === target[j] && isStructure(source, i) && isStructure(target, j)) {
      result.push([i, j]);
      i += 1;
      j += 1;
    } else if (table[(i + 1) * columns + j]! >= table[i * columns + j + 1]!) i += 1;
    else j += 1;
  }
  return result;
}

/**
 * Aligns by tokens, without a grammar: the structure words both actions share (verbs,
 * prepositions) anchor the alignment and the spans between anchors pair up as entities
 * (names with their number, `mug 3`). Undefined when the actions share no leading verb,
 * a span has no counterpart, or a span holds a structure word (different shapes).
 */
export function alignActionTokens(source: string, target: string): ActionAlignment | undefined {
  const from = tokens(source);
  const to = tokens(target);
  const matched = anchors(from, to);
  if (matched.length === 0 || matched[0]![0] !== 0 || matched[0]![1] !== 0) return undefined;
  const pairs: EntityPair[] = [];
  const bounds = [...matched, [from.length, to.length] as [number, number]];
  for (let index = 0; index < bounds.length - 1; index += 1) {
    const [i, j] = bounds[index]!;
    const [nextI, nextJ] = bounds[index + 1]!;
    const sourceSpan = from.slice(i + 1, nextI).join(' ');
    const targetSpan = to.slice(j + 1, nextJ).join(' ');
    if ((sourceSpan === '') !== (targetSpan === '')) return undefined;
    // A structure word inside a span means the actions have different shapes.
    for (let k = i + 1; k < nextI; k += 1) if (isStructure(from, k)) return undefined;
    for (let k = j + 1; k < nextJ; k += 1) if (isStructure(to, k)) return undefined;
    if (sourceSpan !== targetSpan) pairs.push([sourceSpan, targetSpan]);
  }
  return { type: from[0]!, pairs };
}

/**
 * Aligns a retrieved action with the current one: argument by argument with the
 * domain's grammar when `parse` is given (both must parse to the same type and arity),
 * else by tokens ({@link alignActionTokens}). Undefined when they do not align.
 *
 * @example
 * alignActions('take mug 3 from cabinet 1', 'take apple 1 from countertop 2')
 * // { type: 'take', pairs: [['mug 3', 'apple 1'], ['cabinet 1', 'countertop 2']] }
 */
export function alignActions(
  source: string,
  target: string,
  parse?: (text: string) => ParsedAction,
): ActionAlignment | undefined {
  if (parse === undefined) return alignActionTokens(source, target);
  let from: ParsedAction;
  let to: ParsedAction;
  try {
    from = parse(source);
    to = parse(target);
  } catch {
    // Stored actions outside today's grammar (older data) cannot be aligned; skip them.
    return undefined;
  }
  if (from.type !== to.type || from.args.length !== to.args.length) return undefined;
  const pairs: EntityPair[] = [];
  for (const [index, argument] of from.args.entries()) {
    if (argument !== to.args[index]) pairs.push([argument, to.args[index]!]);
  }
  return { type: from.type, pairs };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Renames entities in `text` simultaneously (so `a -> b, b -> a` swaps), matching whole
 * names only (`apple 1` never matches inside `apple 12` or `pineapple 1`), case-insensitively.
 * Returns undefined when the pairs contradict each other (one name renamed two ways).
 *
 * @example transferEntities('You pick up the mug 3 from the cabinet 1.', [['mug 3', 'apple 1'], ['cabinet 1', 'countertop 2']])
 * // 'You pick up the apple 1 from the countertop 2.'
 */
export function transferEntities(text: string, pairs: readonly EntityPair[]): string | undefined {
  if (pairs.length === 0) return text;
  const renaming = new Map<string, string>();
  for (const [from, to] of pairs) {
    const key = from.toLowerCase();
    const known = renaming.get(key);
    if (known !== undefined && known !== to) return undefined;
    renaming.set(key, to);
  }
  // Longest names first so `cabinet 10` wins over `cabinet 1` in the alternation.
  const names = [...renaming.keys()].sort((a, b) => b.length - a.length);
  const pattern = namePatterns.get(names.join('\u0000'), () => namesPattern(names));
  return text.replace(pattern, (match) => renaming.get(match.toLowerCase()) ?? match);
}

/**
 * The pattern matching any of `names` as a whole name. Global, for `replace`, which starts
 * from the beginning of the text whatever the pattern's `lastIndex`.
 */
function namesPattern(names: readonly string[]): RegExp {
  return new RegExp(`(?<![\\w-])(${names.map(escapeRegExp).join('|')})(?![\\w-])`, 'gi');
}

/** Patterns of the name sets renamed (the same pairs recur from step to step). */
const namePatterns = new BoundedMemo<string, RegExp>(4096);

/**
 * Splits an action into a type and entity arguments without a grammar: the leading
 * structure words are the type (`go to`), each run of name words ending in a number is
 * an argument (`cabinet 2`). The fallback where no adapter grammar is given.
 *
 * @example parseActionByTokens('take mug 3 from cabinet 1') // { type: 'take', args: ['mug 3', 'cabinet 1'], text: ... }
 */
export function parseActionByTokens(text: string): ParsedAction {
  const words = tokens(text);
  const type: string[] = [];
  const args: string[] = [];
  let current: string[] = [];
  for (const [index, word] of words.entries()) {
    if (isStructure(words, index)) {
      if (current.length > 0) args.push(current.join(' '));
      current = [];
      if (args.length === 0) type.push(word);
    } else current.push(word);
  }
  if (current.length > 0) args.push(current.join(' '));
  return { type: type.join(' '), args, text: words.join(' ') };
}
