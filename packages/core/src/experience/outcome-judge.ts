/**
 * `OutcomeJudge`: does this step end the episode, and does it accomplish the task? Learned
 * from real episodes (successes and failures), not written per domain.
 *
 * Why a separate judge: an experience model that votes the outcome from similar stored
 * transitions pays for any `put` that resembles an expert's last step, whatever the
 * episode did before (a `put` of something never taken, of the wrong object, without the
 * heating the task asks for). RL finds those actions first. Success depends on how the
 * episode's actions relate to the instruction and to each other, so the judge reads exactly
 * that: relational facts about the action's arguments (named in the instruction? what the
 * episode last did with them? did it ever heat, take or place them?) and about the state of
 * every entity the episode touched, crossed with each other and with the instruction's
 * words, in a logistic model. The words that matter ("hot", "two", "clean") and the facts
 * they need are learned from the data.
 *
 * Real data never shows what the engine refuses outright (a `put` of something not held is
 * not admissible, so it never appears), so training adds counterfactual negatives from each
 * successful final step: the same step with the history's steps on one of its arguments
 * removed (the precondition not established), and with one argument replaced by another
 * entity of the episode (the wrong object or receptacle).
 */
import type { ParsedAction } from '../adapter.js';
import type { Step, Task, Trajectory } from '../mdp/schemas.js';
import { combineHashes, hashText } from '../policy/hashed-features.js';
import { SeededRandom } from '../random/seeded-random.js';
import { parseActionByTokens } from './entity-transfer.js';

/** Options of {@link OutcomeJudge.train}. */
export interface OutcomeJudgeOptions {
  /** The domain's action grammar (`adapter.parseAction`). Default: actions split by tokens. */
  parseAction?: (text: string) => ParsedAction;
  /** log2 of the number of hashed weights. Default 18. */
  hashBits?: number;
  /** Passes over the training steps. Default 6. */
  epochs?: number;
  /** AdaGrad learning rate. Default 0.2. */
  learningRate?: number;
  /** L2 penalty per step on the weights touched. Default 1e-6. */
  l2?: number;
  /** Counterfactual negatives per successful final step (history ablation, argument swap). Default true. */
  counterfactuals?: boolean;
  /** Probability from which a step is judged to end the episode (or succeed). Default 0.5. */
  threshold?: number;
  /** Seeds the order of the training steps. Default 0. */
  seed?: number;
}

/** What the judge is asked: the task, the episode so far, and the action taken now. */
export interface OutcomeQuery {
  task: Pick<Task, 'instruction'>;
  history: readonly Pick<Step, 'action'>[];
  action: string;
}

/** The judge's verdict on one step. */
export interface OutcomeVerdict {
  /** P(the episode ends after this step). */
  doneProbability: number;
  /** P(the task is accomplished | the episode ends here). */
  successProbability: number;
  /** `doneProbability >= threshold`. */
  done: boolean;
  /** `done` and `successProbability >= threshold`. */
  success: boolean;
}

/** One labelled training step. */
interface Example {
  features: Uint32Array;
  done: boolean;
  success: boolean;
}

/** What the judge was trained on, for logs and reports. */
export interface OutcomeJudgeSummary {
  /** Real or offline steps read. */
  steps: number;
  /** Of which ended their episode (truncations excluded). */
  doneSteps: number;
  /** Of which ended it with success. */
  successSteps: number;
  /** Counterfactual negatives added. */
  counterfactuals: number;
  /** Trajectories read. */
  trajectories: number;
}

const NUMBER = /^\d+$/;

/** Lower-cased words of `text` (letters and digits). */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
}

/** The name words of an entity argument (`apple 1` -> `apple`): its words less numbers. */
function nameOf(argument: string): string {
  return words(argument)
    .filter((word) => !NUMBER.test(word))
    .join(' ');
}

/** How much of `argument`'s name the instruction mentions: all, part or none of its words. */
function instructionRelation(argument: string, instruction: ReadonlySet<string>): string {
  const name = nameOf(argument).split(' ').filter(Boolean);
  if (name.length === 0) return 'none';
  const present = name.filter((word) => instruction.has(word)).length;
  return present === name.length ? 'all' : present === 0 ? 'none' : 'part';
}

/** A parsed step: its action type and arguments, or undefined outside the grammar. */
type Parsed = Pick<ParsedAction, 'type' | 'args'> | undefined;

/**
 * The relational facts of one step (strings; the judge hashes them). Exported for tests and
 * for reading what the judge sees.
 */
export function outcomeFacts(
  instruction: string,
  history: readonly Parsed[],
  action: Parsed,
): { atoms: string[]; instructionWords: string[] } {
  const instructionWords = [...new Set(words(instruction).filter((word) => !NUMBER.test(word)))];
  const present = new Set(instructionWords);
  const atoms = new Set<string>();
  if (action === undefined) {
    atoms.add('a:unparsed');
    return { atoms: [...atoms], instructionWords };
  }
  const v = action.type;
  atoms.add(`a:${v}`);
  // What the episode last did with each entity, and everything it ever did with it.
  const last = new Map<string, string>();
  const ever = new Map<string, Set<string>>();
  const byName = new Map<string, Array<{ entity: string; role: string }>>();
  for (const step of history) {
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
  action.args.forEach((argument, slot) => {
    const prefix = `a:${v}:${slot}`;
    atoms.add(`${prefix}:instr=${instructionRelation(argument, present)}`);
    atoms.add(`${prefix}:last=${last.get(argument) ?? 'none'}`);
    for (const role of ever.get(argument) ?? []) atoms.add(`${prefix}:ever=${role}`);
    for (const other of byName.get(nameOf(argument)) ?? []) {
      if (other.entity !== argument) atoms.add(`${prefix}:other=${other.role}`);
    }
  });
  // The state of every entity the episode touched: its last role, and whether the
  // instruction names it (holding the task's object; the task's object heated).
  for (const [entity, role] of last) {
    const relation = instructionRelation(entity, present);
    atoms.add(`s:${role}:instr=${relation}`);
    for (const earlier of ever.get(entity) ?? []) {
      if (earlier !== role) atoms.add(`s:${role}:was=${earlier}:instr=${relation}`);
    }
  }
  return { atoms: [...atoms], instructionWords };
}

/** Hashes the atoms, their pairs, and each atom with each instruction word. */
function hashFeatures(
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

function sigmoid(x: number): number {
  return x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
}

/** A logistic model over hashed features, trained by AdaGrad. */
class HashedLogistic {
  readonly weights: Float64Array;
  private readonly squares: Float64Array;

  constructor(size: number) {
    this.weights = new Float64Array(size);
    this.squares = new Float64Array(size).fill(1e-8);
  }

  probability(features: Uint32Array): number {
    let sum = 0;
    for (const index of features) sum += this.weights[index]!;
    return sigmoid(sum);
  }

  update(features: Uint32Array, label: boolean, rate: number, l2: number): void {
    const gradient = this.probability(features) - (label ? 1 : 0);
    for (const index of features) {
      const g = gradient + l2 * this.weights[index]!;
      this.squares[index]! += g * g;
      this.weights[index]! -= (rate * g) / Math.sqrt(this.squares[index]!);
    }
  }
}

/**
 * Whether a step ended its episode for a reason other than a cut-off. A step marked
 * `info.truncated`, or the last step of a trajectory marked `meta.truncated` or
 * `meta.budgetExhausted` (a rollout's record), did not end it: the episode was cut off.
 */
function endedEpisode(step: Step, trajectory: Trajectory, last: boolean): boolean {
  if (!step.done || step.info?.truncated === true) return false;
  const cut = trajectory.meta?.truncated === true || trajectory.meta?.budgetExhausted === true;
  return !(last && cut && !trajectory.success && !(step.reward > 0));
}

/** Labelled steps made from trajectories, and what they hold. */
interface ExampleBatch {
  examples: Example[];
  summary: OutcomeJudgeSummary;
}

/** The learned outcome judge. */
export class OutcomeJudge {
  private readonly done: HashedLogistic;
  private readonly success: HashedLogistic;
  private readonly parse: (text: string) => ParsedAction;
  private readonly mask: number;
  private readonly threshold: number;
  private readonly rate: number;
  private readonly l2: number;
  private readonly counterfactuals: boolean;
  private readonly random: SeededRandom;
  private readonly parsed = new Map<string, Parsed>();
  /** A few actions of each type in the data, to stand in for a final step. */
  private readonly actionsByType = new Map<string, NonNullable<Parsed>[]>();
  /** What the judge was trained on. */
  readonly summary: OutcomeJudgeSummary = {
    steps: 0,
    doneSteps: 0,
    successSteps: 0,
    counterfactuals: 0,
    trajectories: 0,
  };

  private constructor(options: OutcomeJudgeOptions) {
    const bits = options.hashBits ?? 18;
    this.mask = (1 << bits) - 1;
    this.done = new HashedLogistic(1 << bits);
    this.success = new HashedLogistic(1 << bits);
    this.parse = options.parseAction ?? parseActionByTokens;
    this.threshold = options.threshold ?? 0.5;
    this.rate = options.learningRate ?? 0.2;
    this.l2 = options.l2 ?? 1e-6;
    this.counterfactuals = options.counterfactuals !== false;
    this.random = new SeededRandom(options.seed ?? 0);
  }

  /**
   * Trains a judge on real or offline trajectories (expert demonstrations and exploration;
   * synthetic trajectories are skipped: their outcomes are a model's guesses). Returns
   * undefined when the data shows no episode that ended, so there is nothing to learn.
   */
  static train(
    trajectories: readonly Trajectory[],
    options: OutcomeJudgeOptions = {},
  ): OutcomeJudge | undefined {
    const judge = new OutcomeJudge(options);
    const batch = judge.examplesOf(trajectories);
    if (batch.summary.doneSteps === 0) return undefined;
    judge.fit(batch, options.epochs ?? 6);
    return judge;
  }

  /**
   * Learns from more real trajectories (the real episodes of sim-to-real, as they come), with
   * `epochs` passes over them alone: the judge co-evolves with the policy whose real
   * behaviour it is asked about.
   */
  learn(trajectories: readonly Trajectory[], epochs = 2): void {
    this.fit(this.examplesOf(trajectories), epochs);
  }

  private fit(batch: ExampleBatch, epochs: number): void {
    const { examples, summary } = batch;
    for (const key of Object.keys(summary) as (keyof OutcomeJudgeSummary)[])
      this.summary[key] += summary[key];
    const order = examples.map((_, index) => index);
    for (let epoch = 0; epoch < epochs; epoch += 1) {
      this.random.shuffle(order);
      for (const index of order) {
        const example = examples[index]!;
        this.done.update(example.features, example.done, this.rate, this.l2);
        if (example.done)
          this.success.update(example.features, example.success, this.rate, this.l2);
      }
    }
  }

  /** The labelled steps of `trajectories`, with the counterfactual negatives of their successes. */
  private examplesOf(trajectories: readonly Trajectory[]): ExampleBatch {
    const examples: Example[] = [];
    const summary: OutcomeJudgeSummary = {
      steps: 0,
      doneSteps: 0,
      successSteps: 0,
      counterfactuals: 0,
      trajectories: 0,
    };
    /** Successful final steps, the seeds of the counterfactual negatives. */
    const finals: Final[] = [];
    const add = (
      instruction: string,
      history: readonly Parsed[],
      action: Parsed,
      done: boolean,
      success: boolean,
    ) => {
      examples.push({
        features: hashFeatures(outcomeFacts(instruction, history, action), this.mask),
        done,
        success,
      });
    };
    for (const trajectory of trajectories) {
      if (trajectory.source === 'synthetic') continue;
      summary.trajectories += 1;
      const instruction = trajectory.task.instruction;
      const history: Parsed[] = [];
      trajectory.steps.forEach((step, index) => {
        const action = this.parseRemembered(step.action);
        const last = index === trajectory.steps.length - 1;
        const done = endedEpisode(step, trajectory, last);
        const success = done && (step.reward > 0 || (last && trajectory.success));
        add(instruction, history, action, done, success);
        summary.steps += 1;
        if (done) summary.doneSteps += 1;
        if (success) summary.successSteps += 1;
        if (success && action !== undefined)
          finals.push({ instruction, history: [...history], action });
        if (action !== undefined) {
          const seen = this.actionsByType.get(action.type) ?? [];
          if (seen.length < 64) seen.push(action);
          this.actionsByType.set(action.type, seen);
        }
        history.push(action);
      });
    }
    if (this.counterfactuals) {
      const others = [...this.actionsByType.values()];
      for (const final of finals) {
        summary.counterfactuals += addCounterfactuals(final, others, this.random, add);
      }
    }
    return { examples, summary };
  }

  /** Judges one step: does it end the episode, and with success? */
  judge(query: OutcomeQuery): OutcomeVerdict {
    const history = query.history.map((step) => this.parseRemembered(step.action));
    const features = hashFeatures(
      outcomeFacts(query.task.instruction, history, this.parseRemembered(query.action)),
      this.mask,
    );
    const doneProbability = this.done.probability(features);
    // While every ended episode seen had one outcome, that outcome is certain.
    const { doneSteps, successSteps } = this.summary;
    const successProbability =
      successSteps === doneSteps ? 1 : successSteps === 0 ? 0 : this.success.probability(features);
    const done = doneProbability >= this.threshold;
    return {
      doneProbability,
      successProbability,
      done,
      success: done && successProbability >= this.threshold,
    };
  }

  private parseRemembered(text: string): Parsed {
    if (!this.parsed.has(text)) {
      let result: Parsed;
      try {
        const { type, args } = this.parse(text);
        result = { type, args };
      } catch {
        result = undefined;
      }
      if (this.parsed.size >= 8192) this.parsed.clear();
      this.parsed.set(text, result);
    }
    return this.parsed.get(text);
  }
}

/** A successful final step: the instruction, the history before it, and its action. */
interface Final {
  instruction: string;
  history: Parsed[];
  action: NonNullable<Parsed>;
}

/**
 * Negatives the real engine never shows, made from one successful final step:
 * - its history without one of the steps that acted on two or more entities, one of them an
 *   argument of the step or an entity the instruction names (the object never taken, never
 *   heated, the first of two never placed). Steps on one entity (navigation, opening) are
 *   kept: an expert's path has detours whose removal changes nothing;
 * - the step with one argument replaced by another entity the episode acted on (the wrong
 *   object or receptacle);
 * - each other type of action in its place (from `others`, actions of the data grouped by
 *   type): what the episode did before makes no success by itself, only the right act does;
 * - an entity the instruction names swapped, in the whole episode, for one it does not name.
 */
function addCounterfactuals(
  final: Final,
  others: readonly (readonly NonNullable<Parsed>[])[],
  random: SeededRandom,
  add: (
    instruction: string,
    history: readonly Parsed[],
    action: Parsed,
    done: boolean,
    success: boolean,
  ) => void,
): number {
  const { instruction, history, action } = final;
  let added = 0;
  const present = new Set(words(instruction));
  const involved = (argument: string) =>
    action.args.includes(argument) || instructionRelation(argument, present) === 'all';
  history.forEach((step, index) => {
    if (step === undefined || step.args.length < 2 || !step.args.some(involved)) return;
    add(
      instruction,
      history.filter((_, other) => other !== index),
      action,
      false,
      false,
    );
    added += 1;
  });
  const entities = [
    ...new Set(history.flatMap((step) => (step === undefined ? [] : step.args))),
  ].filter((entity) => !action.args.includes(entity) && nameOf(entity) !== '');
  if (entities.length > 0 && action.args.length > 0) {
    const slot = random.int(action.args.length);
    const replacement = entities[random.int(entities.length)]!;
    if (nameOf(replacement) !== nameOf(action.args[slot]!)) {
      const args = action.args.map((argument, index) => (index === slot ? replacement : argument));
      add(instruction, history, { type: action.type, args }, false, false);
      added += 1;
    }
  }
  for (const examples of others) {
    if (examples[0]!.type === action.type) continue;
    add(instruction, history, examples[random.int(examples.length)]!, false, false);
    added += 1;
  }
  // The object the instruction names swapped for another throughout the episode: the same
  // acts on the wrong object (`take keychain 2`, then the lamp, for "look at creditcard").
  const named = [
    ...new Set([...history.flatMap((step) => step?.args ?? []), ...action.args]),
  ].filter((entity) => instructionRelation(entity, present) === 'all');
  const strangers = others
    .flatMap((examples) => examples.flatMap((example) => example.args))
    .filter((entity) => nameOf(entity) !== '' && instructionRelation(entity, present) === 'none');
  if (named.length > 0 && strangers.length > 0) {
    const from = named[random.int(named.length)]!;
    const to = strangers[random.int(strangers.length)]!;
    const rename = (step: Parsed): Parsed =>
      step && {
        type: step.type,
        args: step.args.map((argument) => (argument === from ? to : argument)),
      };
    add(instruction, history.map(rename), rename(action), false, false);
    added += 1;
  }
  return added;
}
