/**
 * What the outcome judge reads of a step: relational facts about the step's arguments, the
 * episode and the instruction (see `OutcomeJudge`), and their hashed features.
 */
import type { ParsedAction } from '../adapter.js';
import { combineHashes, hashText } from '../policy/hashed-features.js';

const NUMBER = /^\d+$/;

/** Lower-cased words of `text` (letters and digits). */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
}

/** The name words of an entity argument (`apple 1` -> `apple`): its words less numbers. */
export function nameOf(argument: string): string {
  return words(argument)
    .filter((word) => !NUMBER.test(word))
    .join(' ');
}

/** Whether the instruction holds `word`, in the singular or a plural (`apple`, `apples`, `boxes`). */
export function mentions(instruction: ReadonlySet<string>, word: string): boolean {
  return instruction.has(word) || instruction.has(`${word}s`) || instruction.has(`${word}es`);
}

const DETERMINERS = new Set(['the', 'a', 'an', 'some', 'any', 'this', 'that', 'these', 'those']);

/**
 * In how many ways the instruction names `name`: its occurrences in the instruction's word
 * sequence (its words in a row, plurals too), told apart by the word before each (past
 * determiners). "then eat the meal ... prepare meal, eat meal" names the meal in two ways
 * (`eat`, `prepare`); "dice the pepper, roast the pepper" the pepper in two.
 */
export function mentionCount(name: string, sequence: readonly string[]): number {
  return mentionContexts(name, sequence).size;
}

/** The words before each mention of `name` in the instruction (past determiners; `''` at its start). */
export function mentionContexts(name: string, sequence: readonly string[]): Set<string> {
  const parts = name.split(' ');
  const same = (word: string, part: string) =>
    word === part || word === `${part}s` || word === `${part}es`;
  const contexts = new Set<string>();
  for (let start = 0; start + parts.length <= sequence.length; start += 1) {
    if (!parts.every((part, offset) => same(sequence[start + offset]!, part))) continue;
    let before = start - 1;
    while (before >= 0 && DETERMINERS.has(sequence[before]!)) before -= 1;
    contexts.add(before < 0 ? '' : sequence[before]!);
  }
  return contexts;
}

/** How much of `argument`'s name the instruction mentions: all, part or none of its words. */
export function instructionRelation(argument: string, instruction: ReadonlySet<string>): string {
  const name = nameOf(argument).split(' ').filter(Boolean);
  if (name.length === 0) return 'none';
  const present = name.filter((word) => mentions(instruction, word)).length;
  return present === name.length ? 'all' : present === 0 ? 'none' : 'part';
}

const NUMBER_WORDS = [
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
];

/** The first number the instruction asks for (`two`, `4`), or undefined. */
function instructionNumber(instructionWords: readonly string[]): number | undefined {
  for (const word of instructionWords) {
    if (NUMBER.test(word)) return Number(word);
    const index = NUMBER_WORDS.indexOf(word);
    if (index >= 0) return index + 1;
  }
  return undefined;
}

/** A parsed step: its action type and arguments, or undefined outside the grammar. */
export type Parsed =
  | (Pick<ParsedAction, 'type' | 'args'> & {
      /**
       * The words of the action's text that are neither its type nor its arguments: what a
       * grammar keeps beside ids (a web element's role and name, `button 'OK'`).
       */
      label?: readonly string[];
    })
  | undefined;

/** {@link Parsed} of a parsed action: its type, arguments and label words. */
export function parsedOf(
  action: Pick<ParsedAction, 'type' | 'args' | 'text'>,
): NonNullable<Parsed> {
  const known = new Set([
    ...words(action.type),
    ...action.args.flatMap((argument) => words(argument)),
  ]);
  const label = words(action.text).filter((word) => !known.has(word));
  return label.length === 0
    ? { type: action.type, args: action.args }
    : { type: action.type, args: action.args, label };
}

/**
 * The acts the episode did to the entities named `name`: each as its type, the slot the item
 * held and the names of its other arguments (`cook/0|oven`, `dice/0|knife`).
 */
export function actsOn(name: string, steps: readonly Parsed[]): Set<string> {
  const acts = new Set<string>();
  for (const step of steps) {
    if (step === undefined) continue;
    step.args.forEach((argument, slot) => {
      if (nameOf(argument) !== name) return;
      const others = step.args
        .filter((_, other) => other !== slot)
        .map(nameOf)
        .sort();
      acts.add(`${step.type}/${slot}|${others.join(',')}`);
    });
  }
  return acts;
}

/** What a judge learned of its data's language, which the facts read. */
export interface FactVocabulary {
  /** Names of the entities the data's actions acted on (`apple`, `red potato`). */
  entityNames: Iterable<string>;
  /** The data's action types (`take`, `chop`): acts an instruction may ask for by name. */
  actionTypes: ReadonlySet<string>;
  /**
   * What an instruction word asks to be done to the item after it (`roast` -> `cook/0|oven`:
   * `InstructionMeanings`).
   */
  meanings: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * The relational facts of one step (strings; the judge hashes them). Exported for tests and
 * for reading what the judge sees.
 *
 * Two kinds: facts about this step's arguments (named in the instruction? what the episode
 * last did with them?) and facts about the whole episode after this step against the whole
 * instruction: how many entities the instruction names are in the role this step gives its
 * arguments (`two`, `all four`), and how many of the instruction's entity names no step has
 * yet acted on in that role or at all (every named item handled). `entityNames` are the
 * names of the entities the judge's data acted on; those the instruction mentions are the
 * ones it names (their words in a row), touched or not.
 */
export function outcomeFacts(
  instruction: string,
  history: readonly Parsed[],
  action: Parsed,
  vocabulary: Partial<FactVocabulary> = {},
): { atoms: string[]; instructionWords: string[] } {
  const { entityNames = [], actionTypes = new Set(), meanings = new Map() } = vocabulary;
  const instructionWords = [...new Set(words(instruction))];
  const present = new Set(instructionWords);
  const atoms = new Set<string>();
  if (action === undefined) {
    atoms.add('a:unparsed');
    return { atoms: [...atoms], instructionWords };
  }
  const v = action.type;
  atoms.add(`a:${v}`);
  const before = episodeRoles(history);
  const { last, ever, byName } = before;
  if (action.label !== undefined) {
    // How much of the label the instruction mentions (`button 'OK'` for "Click the OK button").
    const mentioned = action.label.filter((word) => mentions(present, word)).length;
    atoms.add(
      `a:${v}:label=${mentioned === action.label.length ? 'all' : mentioned === 0 ? 'none' : 'part'}`,
    );
  }
  action.args.forEach((argument, slot) => {
    const prefix = `a:${v}:${slot}`;
    atoms.add(`${prefix}:instr=${instructionRelation(argument, present)}`);
    atoms.add(`${prefix}:last=${last.get(argument) ?? 'none'}`);
    for (const role of ever.get(argument) ?? []) atoms.add(`${prefix}:ever=${role}`);
    for (const other of byName.get(nameOf(argument)) ?? []) {
      if (other.entity !== argument) atoms.add(`${prefix}:other=${other.role}`);
    }
  });
  // The state of every entity the episode touched that the instruction names, or that has no
  // name but an id (a web element): its last role, and whether the instruction names it
  // (holding the task's object; the task's object heated). Entities alike in both are a group,
  // and what each did before is said of all or only some of the group: three named items put,
  // one of them never taken. Things the instruction does not name (a knife, a drawer on the
  // way) are left out: demonstrations handle them one way (the knife put down before the
  // meal), so a fact about them would refuse a success that handles them otherwise.
  const groups = new Map<string, string[]>();
  for (const [entity, role] of last) {
    const relation = instructionRelation(entity, present);
    if (relation === 'none' && nameOf(entity) !== '') continue;
    const key = `${role}:instr=${relation}`;
    const group = groups.get(key) ?? [];
    group.push(entity);
    groups.set(key, group);
  }
  for (const [key, group] of groups) {
    atoms.add(`s:${key}`);
    const role = key.slice(0, key.indexOf(':instr='));
    const relation = key.slice(key.indexOf(':instr=') + 1);
    const earlier = new Map<string, number>();
    for (const entity of group) {
      for (const was of ever.get(entity) ?? []) {
        if (was !== role) earlier.set(was, (earlier.get(was) ?? 0) + 1);
      }
    }
    for (const [was, count] of earlier) {
      atoms.add(`s:${role}:was=${was}:${relation}${count === group.length ? '' : ':some'}`);
    }
  }
  // The episode after this step, against the whole instruction.
  const after = episodeRoles([...history, action]);
  const sequence = words(instruction);
  const named = new Set<string>();
  for (const name of entityNames) {
    if (name !== '' && mentionCount(name, sequence) > 0) named.add(name);
  }
  for (const entity of after.last.keys()) {
    if (instructionRelation(entity, present) === 'all') named.add(nameOf(entity));
  }
  /** Whether some of the instruction's entity names have no entity ever in a role `allowed` takes. */
  const missing = (allowed: (role: string) => boolean) => {
    for (const name of named) {
      if (!(after.byName.get(name) ?? []).some(({ role }) => allowed(role))) return 'some';
    }
    return 'none';
  };
  if (named.size > 0) {
    atoms.add(`e:untouched=${missing(() => true)}`);
    const steps = [...history, action].filter((step) => step !== undefined);
    let short = false;
    let unasked = false;
    /** Whether some word the instruction says of an item has a learned meaning: undone, or done. */
    let meant: 'missing' | 'done' | undefined;
    for (const name of named) {
      const acts = new Set(
        (after.byName.get(name) ?? []).map(({ role }) => role.slice(0, role.lastIndexOf('/'))),
      );
      // An act may name its object outside its arguments (`prepare meal`: no argument, `meal`
      // in its label).
      for (const step of steps) {
        if (mentionCount(name, [...words(step.type), ...(step.label ?? [])]) > 0)
          acts.add(step.type);
      }
      const contexts = mentionContexts(name, sequence);
      // An instruction names an item in as many ways as there are things to do with it ("dice
      // the pepper, roast the pepper"): one acted on in fewer ways is not done yet.
      if (acts.size < contexts.size) short = true;
      // The acts the instruction asks for by name ("chop the carrot": `chop`, where the
      // grammar has such an act), each done to the item: slicing it is not chopping it.
      for (const context of contexts) {
        if (actionTypes.has(context) && !acts.has(context)) unasked = true;
      }
      // The acts its words mean where the grammar has no act of that name ("roast the potato":
      // cooked with the oven, not the stove).
      const done = actsOn(name, steps);
      for (const context of contexts) {
        const meaning = meanings.get(context);
        if (meaning === undefined) continue;
        if ([...meaning].some((act) => done.has(act))) meant ??= 'done';
        else meant = 'missing';
      }
    }
    if (meant !== undefined) atoms.add(`e:meant=${meant}`);
    atoms.add(`e:short=${short ? 'some' : 'none'}`);
    atoms.add(`e:asked-acts=${unasked ? 'missing' : 'done'}`);
    atoms.add(`e:${v}:missing=${missing((role) => role.startsWith(`${v}/`))}`);
  }
  // How many named entities are now in the role this step gives them, against the number the
  // instruction asks for (`two`, `4`): relative, so that a count never seen in the data reads
  // like the counts that were.
  const wanted = instructionNumber(instructionWords);
  action.args.forEach((_, slot) => {
    const role = `${v}/${slot}`;
    if (named.size > 0) atoms.add(`e:${role}:missing=${missing((other) => other === role)}`);
    if (wanted === undefined) return;
    let count = 0;
    for (const [entity, now] of after.last) {
      if (now === role && instructionRelation(entity, present) === 'all') count += 1;
    }
    atoms.add(`e:${role}:count=${count === wanted ? 'asked' : count < wanted ? 'fewer' : 'more'}`);
  });
  return { atoms: [...atoms], instructionWords };
}

/** What an episode did with each entity: its last role, every role, and the entities by name. */
function episodeRoles(steps: readonly Parsed[]): {
  last: Map<string, string>;
  ever: Map<string, Set<string>>;
  byName: Map<string, Array<{ entity: string; role: string }>>;
} {
  const last = new Map<string, string>();
  const ever = new Map<string, Set<string>>();
  const byName = new Map<string, Array<{ entity: string; role: string }>>();
  for (const step of steps) {
    if (step === undefined) continue;
    step.args.forEach((argument, slot) => {
      const role = `${step.type}/${slot}`;
      last.set(argument, role);
      const roles = ever.get(argument) ?? new Set<string>();
      roles.add(role);
      ever.set(argument, roles);
      const name = nameOf(argument);
      const seen = byName.get(name) ?? [];
      seen.push({ entity: argument, role });
      byName.set(name, seen);
    });
  }
  return { last, ever, byName };
}

/** Hashes the atoms, their pairs, and each atom with each instruction word. */
export function hashFeatures(
  facts: { atoms: string[]; instructionWords: string[] },
  mask: number,
): Uint32Array {
  const atomHashes = facts.atoms.map((atom) => hashText(atom));
  const wordHashes = facts.instructionWords.map((word) => hashText(word, 0x5bd1e995));
  const features: number[] = [hashText('bias') & mask];
  for (let i = 0; i < atomHashes.length; i += 1) {
    const atom = atomHashes[i]!;
    features.push(atom & mask);
    for (let j = i + 1; j < atomHashes.length; j += 1) {
      // Pairs are unordered: combine the smaller hash first.
      const other = atomHashes[j]!;
      features.push(
        (atom < other ? combineHashes(atom, other) : combineHashes(other, atom)) & mask,
      );
    }
    for (const word of wordHashes) features.push(combineHashes(word, atom) & mask);
  }
  return Uint32Array.from(features);
}
