/**
 * Relational features of the embedded policy: how a candidate action relates to the task's
 * instruction and to the episode so far, with no word of the action's identity in them. An
 * action is split into its verb (its first word) and its arguments (the rest); each feature
 * is the verb joined with a relation of the arguments: named in the instruction, in the
 * current observation, in an earlier observation, acted on before (how often, how long ago,
 * with which verb), revealed an instruction word when acted on, the same action as the last
 * one. "Take the thing the instruction names that the last step revealed" and "do not search
 * a place already searched" are then one weight each, whatever the world, the object or the
 * place: what is learned in one world carries to another. Nothing here knows a domain's
 * sentences; the only convention used is that an action starts with its verb.
 */
import { combineHashes, hashText } from './hashed-features.js';

const TOKEN_PATTERN = /[\p{L}\p{N}]+/gu;

/** Lower-cased word tokens (letters and digits) of `text`, in order, duplicates kept. */
function wordsOf(text: string): string[] {
  return [...text.toLowerCase().matchAll(TOKEN_PATTERN)].map((match) => match[0]);
}

/** Function words: they relate nothing, so they are no argument. */
const FUNCTION_WORDS = new Set([
  'a',
  'an',
  'the',
  'to',
  'in',
  'on',
  'at',
  'of',
  'from',
  'with',
  'into',
  'onto',
  'and',
  'or',
  'for',
  'by',
  'it',
  'is',
  'you',
  'your',
  'some',
]);

const NAMESPACE = hashText('relational');

/** What a candidate is scored against: the instruction and the episode so far. */
export interface RelationalContext {
  /** The task's instruction. */
  instruction: string;
  /** The observation the policy acts on. */
  observation: string;
  /** Actions taken before, oldest first. */
  previousActions: readonly string[];
  /**
   * The observation each previous action was taken at (aligned with `previousActions`):
   * the first is the task's initial observation. The observation that followed action k is
   * entry k + 1, or the current observation for the last action.
   */
  previousObservations: readonly string[];
}

interface ParsedAction {
  verb: string;
  /** Argument words (function words left out), in order. */
  words: string[];
  /** Entities: consecutive argument word pairs and, for a one-word argument, the word. */
  entities: string[];
}

function parseAction(action: string): ParsedAction {
  const all = wordsOf(action);
  const verb = all[0] ?? '';
  const words = all.slice(1).filter((word) => !FUNCTION_WORDS.has(word));
  const entities: string[] = [];
  for (let index = 0; index + 1 < words.length; index += 1) {
    entities.push(`${words[index]} ${words[index + 1]}`);
  }
  if (words.length === 1) entities.push(words[0]!);
  return { verb, words, entities };
}

/** The episode's facts every candidate is related to, computed once per decision. */
export class RelationalDecision {
  private readonly instructionWords: Set<string>;
  private readonly currentWords: Set<string>;
  private readonly earlierWords: Set<string>;
  private readonly currentText: string;
  private readonly earlierText: string;
  private readonly instructionVerb: string;
  private readonly lastVerb: string;
  private readonly lastAction: string;
  private readonly steps: number;
  /** Per previous action: its parse, and whether what followed it named instruction words. */
  private readonly previous: { action: string; parsed: ParsedAction; revealed: boolean }[];

  constructor(context: RelationalContext) {
    const instructionAll = wordsOf(context.instruction);
    this.instructionWords = new Set(instructionAll.filter((word) => !FUNCTION_WORDS.has(word)));
    this.instructionVerb = instructionAll[0] ?? '';
    this.currentText = normalise(context.observation);
    this.currentWords = new Set(wordsOf(context.observation));
    const earlier = context.previousObservations.map(normalise);
    this.earlierText = earlier.join('\n');
    this.earlierWords = new Set(wordsOf(this.earlierText));
    this.steps = context.previousActions.length;
    this.previous = context.previousActions.map((action, index) => {
      const parsed = parseAction(action);
      const after = index + 1 < earlier.length ? earlier[index + 1]! : this.currentText;
      const own = new Set(parsed.words);
      let revealed = false;
      for (const word of wordsOf(after)) {
        if (this.instructionWords.has(word) && !own.has(word)) {
          revealed = true;
          break;
        }
      }
      return { action: normalise(action), parsed, revealed };
    });
    const last = this.previous[this.previous.length - 1];
    this.lastVerb = last?.parsed.verb ?? '<start>';
    this.lastAction = last?.action ?? '';
  }

  /** Hashed feature indices (masked by `mask`) of `action` in this decision. */
  features(action: string, mask: number): number[] {
    const parsed = parseAction(action);
    const normalised = normalise(action);
    const verb = hashText(parsed.verb, NAMESPACE);
    const taskVerb = combineHashes(verb, hashText(this.instructionVerb, NAMESPACE));
    const out: number[] = [];
    /** One relation, joined with the verb alone and with the verb and the task's first word. */
    const add = (relation: string) => {
      const hash = hashText(relation, NAMESPACE);
      out.push(combineHashes(verb, hash) & mask);
      out.push(combineHashes(taskVerb, hash) & mask);
    };
    add('verb');
    add(`after ${this.lastVerb}`);
    add(`steps ${bucket(this.steps, [0, 1, 3, 6, 12, 20])}`);

    // Arguments: where each one's words were seen, by position in the action.
    let named = 0;
    parsed.words.forEach((word, index) => {
      const inInstruction = this.instructionWords.has(word);
      if (inInstruction) named += 1;
      const digits = /^\p{N}+$/u.test(word);
      const flags = `${inInstruction ? 'I' : '-'}${this.currentWords.has(word) ? 'C' : '-'}${this.earlierWords.has(word) ? 'E' : '-'}`;
      add(`arg ${Math.min(index, 3)} ${digits ? 'n' : 'w'} ${flags}`);
    });
    add(`named ${Math.min(named, 3)} of ${Math.min(parsed.words.length, 4)}`);

    // Entities: seen where, acted on how often, how long ago and how, and what that revealed.
    let acted = 0;
    let since = Number.POSITIVE_INFINITY;
    let revealed = false;
    let seenNow = false;
    let seenEarlier = false;
    const priorVerbs = new Set<string>();
    for (const entity of parsed.entities) {
      if (this.currentText.includes(` ${entity} `)) seenNow = true;
      if (this.earlierText.includes(` ${entity} `)) seenEarlier = true;
      this.previous.forEach((step, index) => {
        if (!step.parsed.entities.includes(entity)) return;
        acted += 1;
        since = Math.min(since, this.steps - index);
        priorVerbs.add(step.parsed.verb);
        if (step.revealed) revealed = true;
      });
    }
    add(`seen ${seenNow ? 'now' : '-'} ${seenEarlier ? 'before' : '-'}`);
    add(`acted ${bucket(acted, [0, 1, 2, 4])}`);
    add(`since ${since === Number.POSITIVE_INFINITY ? 'never' : bucket(since, [1, 2, 3, 6, 12])}`);
    add(`revealed ${revealed ? 'yes' : 'no'} named ${Math.min(named, 2)}`);
    for (const prior of priorVerbs) add(`prior ${prior} named ${Math.min(named, 2)}`);
    let repeats = 0;
    for (const step of this.previous) if (step.action === normalised) repeats += 1;
    add(`repeat ${bucket(repeats, [0, 1, 2, 4])}`);
    if (normalised === this.lastAction) add('same as last');
    return out;
  }
}

/** Words joined by single spaces, padded with one on each side: `includes(' drawer 1 ')` is whole words. */
function normalise(text: string): string {
  return ` ${wordsOf(text).join(' ')} `;
}

/** The largest of `edges` not above `value`, as a label (`3+` past the last edge). */
function bucket(value: number, edges: readonly number[]): string {
  let label = `${edges[0]}`;
  for (const edge of edges) if (value >= edge) label = `${edge}`;
  return value > edges[edges.length - 1]! ? `${label}+` : label;
}
