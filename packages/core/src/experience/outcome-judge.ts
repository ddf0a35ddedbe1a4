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
 * episode last did with them? did it ever heat, take or place them?), about the state of
 * every entity the episode touched, and about the whole episode against the whole
 * instruction (named items still to handle, how many are done against the number asked:
 * `outcome-facts.ts`), crossed with each other and with the instruction's words, in a
 * logistic model. The words that matter ("hot", "two", "clean") and the facts they need are
 * learned from the data.
 *
 * Real data never shows what the engine refuses outright (a `put` of something not held is
 * not admissible, so it never appears), so training adds counterfactual negatives from each
 * successful final step: the same step with the history's steps on one of its arguments
 * removed (the precondition not established), and with one argument replaced by another
 * entity of the episode (the wrong object or receptacle): `outcome-counterfactuals.ts`.
 */
import type { ParsedAction } from '../adapter.js';
import type { Step, Task, Trajectory } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import type { ActionRefusal } from './action-refusal.js';
import { BoundedMemo } from './bounded-memo.js';
import { parseActionByTokens } from './entity-transfer.js';
import { InstructionMeanings } from './instruction-meanings.js';
import { addCounterfactuals, type Final } from './outcome-counterfactuals.js';
import {
  hashFeatures,
  mentionCount,
  nameOf,
  outcomeFacts,
  type Parsed,
  parsedOf,
  words,
} from './outcome-facts.js';

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
  /**
   * How the domain answers an action it does not admit (`learnActionRefusal` on the
   * same data): a judged model answers such a step with no change and no reward. Default:
   * nothing is refused.
   */
  refusal?: ActionRefusal;
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

/** {@link OutcomeJudge.evaluate}'s counts. */
export interface OutcomeJudgeEvaluation {
  /** Steps that really ended their episode with success. */
  successes: number;
  /** Of which the judge paid (true-success recall = recalled / successes). */
  recalled: number;
  /** Every other real step (not ended, ended in failure). */
  otherSteps: number;
  /** Of which the judge paid (false successes). */
  paidOtherSteps: number;
  /** Counterfactual negatives made from the successes. */
  counterfactuals: number;
  /** Of which the judge paid. */
  paidCounterfactuals: number;
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
  private readonly parsed = new BoundedMemo<string, Parsed>(8192);
  /** A few actions of each type in the data, to stand in for a final step. */
  private readonly actionsByType = new Map<string, NonNullable<Parsed>[]>();
  /** The names of the entities the data's actions acted on (`apple`, `red potato`). */
  private readonly entityNames = new Set<string>();
  /** The action types of the data (`take`, `chop`): acts an instruction may ask for by name. */
  private readonly actionTypes = new Set<string>();
  /** What the instruction words of the data's successes ask to be done (`roast`: the oven). */
  private readonly meanings = new InstructionMeanings();
  /** Of those, the ones each instruction mentions (a cache: instructions repeat). */
  private readonly namedIn = new BoundedMemo<string, string[]>(8192);
  /** How the domain answers an action it does not admit (absent: nothing is refused). */
  readonly refusal: ActionRefusal | undefined;
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
    this.refusal = options.refusal;
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
      examples.push({ features: this.featuresOf(instruction, history, action), done, success });
    };
    // The vocabulary first: an instruction's named entities are known before any step is read.
    this.rememberVocabulary(trajectories);
    summary.trajectories = trajectories.filter(({ source }) => source !== 'synthetic').length;
    for (const { instruction, history, action, done, success } of this.labelledSteps(
      trajectories,
    )) {
      add(instruction, history, action, done, success);
      summary.steps += 1;
      if (done) summary.doneSteps += 1;
      if (success) summary.successSteps += 1;
      if (success && action !== undefined) finals.push({ instruction, history, action });
      if (action !== undefined) {
        const seen = this.actionsByType.get(action.type) ?? [];
        if (seen.length < 64) seen.push(action);
        this.actionsByType.set(action.type, seen);
      }
    }
    if (this.counterfactuals) {
      const others = [...this.actionsByType.values()];
      const meanings = this.meanings.meanings();
      for (const final of finals) {
        summary.counterfactuals += addCounterfactuals(final, others, meanings, this.random, add);
      }
    }
    return { examples, summary };
  }

  /**
   * How this judge does on real trajectories it was not trained on, teacher-forced: each
   * step judged from the real history, and the counterfactual negatives of each success (its
   * history without a step that prepared an argument, the wrong object, another act in the
   * final step's place, a named entity swapped for another) judged too. The pre-flight check
   * reads it on held-out offline episodes.
   */
  evaluate(trajectories: readonly Trajectory[]): OutcomeJudgeEvaluation {
    const figures: OutcomeJudgeEvaluation = {
      successes: 0,
      recalled: 0,
      otherSteps: 0,
      paidOtherSteps: 0,
      counterfactuals: 0,
      paidCounterfactuals: 0,
    };
    const finals: Final[] = [];
    for (const { instruction, history, action, success } of this.labelledSteps(trajectories)) {
      const paid = this.verdictOf(this.featuresOf(instruction, history, action)).success;
      if (success) {
        figures.successes += 1;
        if (paid) figures.recalled += 1;
        if (action !== undefined) finals.push({ instruction, history, action });
      } else {
        figures.otherSteps += 1;
        if (paid) figures.paidOtherSteps += 1;
      }
    }
    const others = [...this.actionsByType.values()];
    const meanings = this.meanings.meanings();
    const random = new SeededRandom(1);
    for (const final of finals) {
      addCounterfactuals(final, others, meanings, random, (instruction, history, action) => {
        figures.counterfactuals += 1;
        if (this.verdictOf(this.featuresOf(instruction, history, action)).success)
          figures.paidCounterfactuals += 1;
      });
    }
    return figures;
  }

  /**
   * Every step of the real trajectories (synthetic ones are skipped: their outcomes are a
   * model's guesses), parsed, with the history before it and whether it really ended the
   * episode, with success.
   */
  private *labelledSteps(trajectories: readonly Trajectory[]): Generator<{
    instruction: string;
    history: Parsed[];
    action: Parsed;
    done: boolean;
    success: boolean;
  }> {
    for (const trajectory of trajectories) {
      if (trajectory.source === 'synthetic') continue;
      const instruction = trajectory.task.instruction;
      const history: Parsed[] = [];
      for (const [index, step] of trajectory.steps.entries()) {
        const action = this.parseRemembered(step.action);
        const last = index === trajectory.steps.length - 1;
        const done = endedEpisode(step, trajectory, last);
        const success = done && (step.reward > 0 || (last && trajectory.success));
        yield { instruction, history: [...history], action, done, success };
        history.push(action);
      }
    }
  }

  /** Judges one step: does it end the episode, and with success? */
  judge(query: OutcomeQuery): OutcomeVerdict {
    const history = query.history.map((step) => this.parseRemembered(step.action));
    return this.verdictOf(
      this.featuresOf(query.task.instruction, history, this.parseRemembered(query.action)),
    );
  }

  private verdictOf(features: Uint32Array): OutcomeVerdict {
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

  private featuresOf(instruction: string, history: readonly Parsed[], action: Parsed): Uint32Array {
    return hashFeatures(
      outcomeFacts(instruction, history, action, {
        entityNames: this.namedBy(instruction),
        actionTypes: this.actionTypes,
        meanings: this.meanings.meanings(),
      }),
      this.mask,
    );
  }

  /** The names of the data's entities that `instruction` mentions. */
  private namedBy(instruction: string): string[] {
    return this.namedIn.get(instruction, () => {
      const sequence = words(instruction);
      return [...this.entityNames].filter((name) => mentionCount(name, sequence) > 0);
    });
  }

  /**
   * Learns the data's entity names and action types, then what its successes' instruction
   * words mean.
   */
  private rememberVocabulary(trajectories: readonly Trajectory[]): void {
    const before = this.entityNames.size;
    const real = trajectories.filter(({ source }) => source !== 'synthetic');
    for (const trajectory of real) {
      for (const step of trajectory.steps) {
        const parsed = this.parseRemembered(step.action);
        if (parsed !== undefined) this.actionTypes.add(parsed.type);
        for (const argument of parsed?.args ?? []) {
          const name = nameOf(argument);
          if (name !== '') this.entityNames.add(name);
        }
      }
    }
    if (this.entityNames.size !== before) this.namedIn.clear();
    for (const trajectory of real) {
      if (!trajectory.success) continue;
      const instruction = trajectory.task.instruction;
      this.meanings.add(
        instruction,
        trajectory.steps.map((step) => this.parseRemembered(step.action)),
        this.namedBy(instruction),
      );
    }
  }

  private parseRemembered(text: string): Parsed {
    return this.parsed.get(text, (action) => {
      try {
        return parsedOf(this.parse(action));
      } catch {
        return undefined;
      }
    });
  }
}
