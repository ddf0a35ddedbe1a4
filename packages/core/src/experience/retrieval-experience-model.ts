/**
 * `RetrievalExperienceModel`: the embedded experience model, no LLM. It predicts the next
 * state from the retrieved transitions D_k (their next states, with entity names
 * transferred to the current action), keeps the episode consistent with what the
 * history already showed, and predicts reward and termination from the labels of the
 * neighbours (`done`, `reward`, `trajectorySuccess`). Every vote weighs a neighbour by how
 * often its transition occurred (the buffer's per-record `count`), so the outcome seen
 * most often in the real data wins, as it would if every duplicate were stored.
 */
import type { ParsedAction } from '../adapter.js';
import { ConfigError, EnvironmentError } from '../errors.js';
import type { Observation, Trajectory } from '../mdp/schemas.js';
import type { ScoredTransition } from '../replay/retriever.js';
import { BoundedMemo } from './bounded-memo.js';
import { alignActions, parseActionByTokens, transferEntities } from './entity-transfer.js';
import { type ConsistencyHints, recallFromHistory } from './episode-consistency.js';
import type {
  ExperienceInput,
  ExperienceModel,
  ExperiencePrediction,
  InitialStateInput,
} from './experience-model.js';
import { mentionsEntity } from './listing.js';
import type { RewardRuleInput } from './outcome-reward.js';
import type { WorldMemory } from './world-memory.js';

/** Options of {@link RetrievalExperienceModel}. */
export interface RetrievalExperienceModelOptions {
  /**
   * The domain's action grammar (`adapter.parseAction`), to align the arguments of a
   * retrieved action with the current one. Without it, actions are aligned by tokens.
   */
  parseAction?: (text: string) => ParsedAction;
  /** What the domain's actions do, for episode consistency and listing edits. */
  hints?: ConsistencyHints;
  /**
   * The reward rule the synthetic environment applies to this model's predictions (its
   * `rewardRule`). Default: outcome reward.
   */
  reward?: RewardRuleInput;
  /**
   * Weight multiplier of a neighbour whose action equals the current one (nothing to
   * rename, so its outcome transfers most reliably). Default 2.
   */
  exactActionWeight?: number;
  /**
   * Weight multiplier of a neighbour whose renamed entities do not occur in its next
   * state, so the transfer cannot be checked. Default 0.05.
   */
  unverifiedWeight?: number;
  /**
   * Softness of the similarity weighting: a neighbour scoring `d` below the nearest one
   * weighs `exp(-d / temperature)`. Default 0.02 (0.05 less cosine: a twelfth of the weight).
   */
  temperature?: number;
  /**
   * Pseudo-weight of "the episode goes on" in the termination vote, in units of one
   * perfectly matching neighbour occurring once. Episodes end rarely, so when the neighbours that end an
   * episode relate to their tasks unlike the current action to its task (a `put` of an
   * object the task never mentions), their weak votes lose to it. Default 0.25.
   */
  terminalPrior?: number;
  /**
   * What the offline data saw of each task's own world (`WorldMemory.fromTrajectories`): an
   * action on one entity that this world's data took answers as it did there, before any
   * neighbour from another world is asked. The episode's own history still comes first.
   */
  worldMemory?: WorldMemory;
  /** Identifies the model. Default `retrieval`. */
  id?: string;
  /**
   * Accumulates where `predict` spends its time (for profiling a synthetic step, as the
   * experience benchmark does); left out, nothing is timed.
   */
  timings?: RetrievalModelTimings;
}

/** Milliseconds `RetrievalExperienceModel.predict` spent per part, accumulated over calls. */
export interface RetrievalModelTimings {
  /** Aligning each retrieved action with the current one (parsing both): which neighbours fit. */
  alignment: number;
  /** Transferring entity names into the neighbours' next states, and checking the transfer. */
  transfer: number;
  /** Episode consistency: what the history already showed. */
  consistency: number;
  /** The votes on next state, termination and reward, and the instruction overlaps they use. */
  voting: number;
  /** Calls timed. */
  calls: number;
}

/** Fresh zeroed {@link RetrievalModelTimings}. */
export function emptyRetrievalModelTimings(): RetrievalModelTimings {
  return { alignment: 0, transfer: 0, consistency: 0, voting: 0, calls: 0 };
}

/** Most action texts whose parse is remembered (the memo is emptied when it is full). */
const PARSE_MEMO = 16384;

/** Score from which a neighbour counts as a phi twin of the query (float rounding below 1). */
const TWIN_SCORE = 1 - 1e-5;

/** One next-state candidate and the neighbours that support it. */
interface Candidate {
  text: string;
  weight: number;
  demoIds: string[];
}

/** The words of an instruction, as {@link instructionOverlap} matches them. */
function instructionWords(instruction: string): ReadonlySet<string> {
  return new Set(instruction.toLowerCase().split(/[^a-z0-9]+/));
}

/** The entity-name words of each argument list (a parsed action's, kept by the parse memo). */
const nameWords = new WeakMap<readonly string[], readonly string[]>();

/** The lower-cased words of `args` that name (not number) an entity. */
function nameWordsOf(args: readonly string[]): readonly string[] {
  let words = nameWords.get(args);
  if (words === undefined) {
    words = args.flatMap((argument) =>
      argument
        .toLowerCase()
        .split(/\s+/)
        .filter((word) => word !== '' && !/^\d+$/.test(word)),
    );
    nameWords.set(args, words);
  }
  return words;
}

/** Share of the entity-name words of `args` that occur in `instruction`. */
export function instructionOverlap(
  args: readonly string[],
  instruction: string | ReadonlySet<string>,
): number {
  const words = nameWordsOf(args);
  if (words.length === 0) return 0;
  const present = typeof instruction === 'string' ? instructionWords(instruction) : instruction;
  return words.filter((word) => present.has(word)).length / words.length;
}

/**
 * How many occurrences a neighbour votes with: its buffer `count` for grounded experience
 * (offline, real). A synthetic transition's count only says how often this model guessed
 * it, so it votes once, lest repeated guesses outvote the data.
 */
export function occurrenceWeight(demo: ScoredTransition): number {
  if (demo.transition.source === 'synthetic') return 1;
  const count = demo.count ?? 1;
  return Number.isFinite(count) && count > 1 ? count : 1;
}

/** Whether a stored transition ended its episode with success. */
function endedInSuccess(demo: ScoredTransition): boolean {
  return (
    demo.transition.done &&
    (demo.transition.reward > 0 || demo.transition.trajectorySuccess === true)
  );
}

/** The embedded, LLM-free experience model. */
export class RetrievalExperienceModel implements ExperienceModel {
  readonly id: string;
  private readonly parse: (text: string) => ParsedAction;
  private readonly hints: ConsistencyHints;
  readonly rewardRule?: RewardRuleInput;
  private readonly exactActionWeight: number;
  private readonly unverifiedWeight: number;
  private readonly terminalPrior: number;
  private readonly temperature: number;
  private readonly timings: RetrievalModelTimings | undefined;
  private readonly worldMemory: WorldMemory | undefined;
  /**
   * Parses remembered by action text (a thrown error too): one step parses the current
   * action once per neighbour and per history step, and the same neighbours recur.
   */
  private readonly parsed = new BoundedMemo<string, ParsedAction | Error>(PARSE_MEMO);
  /** Word sets of instructions (neighbours of the same tasks recur). */
  private readonly instructions = new BoundedMemo<string, ReadonlySet<string>>(PARSE_MEMO);
  private instructionWordsOf(instruction: string): ReadonlySet<string> {
    return this.instructions.get(instruction, instructionWords);
  }
  private readonly parseRemembered = (text: string): ParsedAction => {
    const result = this.parsed.get(text, (action) => {
      try {
        return this.parse(action);
      } catch (error) {
        return error instanceof Error ? error : new Error(String(error));
      }
    });
    if (result instanceof Error) throw result;
    return result;
  };

  constructor(options: RetrievalExperienceModelOptions = {}) {
    this.id = options.id ?? 'retrieval';
    this.parse = options.parseAction ?? parseActionByTokens;
    this.hints = options.hints ?? {};
    if (options.reward !== undefined) this.rewardRule = options.reward;
    this.exactActionWeight = options.exactActionWeight ?? 2;
    this.unverifiedWeight = options.unverifiedWeight ?? 0.05;
    this.terminalPrior = options.terminalPrior ?? 0.25;
    this.temperature = options.temperature ?? 0.02;
    this.timings = options.timings;
    this.worldMemory = options.worldMemory;
    if (!(this.temperature > 0)) {
      throw new ConfigError(
        `RetrievalExperienceModel: temperature must be positive, got ${this.temperature}.`,
        {
          field: 'temperature',
        },
      );
    }
  }

  async predict(input: ExperienceInput): Promise<ExperiencePrediction> {
    const timings = this.timings;
    let mark = timings ? performance.now() : 0;
    /** Adds the time since the last mark to `part`. */
    const lap = (part: 'alignment' | 'transfer' | 'consistency' | 'voting') => {
      if (!timings) return;
      const now = performance.now();
      timings[part] += now - mark;
      mark = now;
    };
    const parse = this.parseRemembered;
    const candidates = new Map<string, Candidate>();
    const aligned: Array<{
      demo: ScoredTransition;
      weight: number;
      overlap: number;
      text: string;
    }> = [];
    let currentArgs: readonly string[] = [];
    try {
      currentArgs = parse(input.action).args;
    } catch {
      // An action outside the grammar still gets neighbours by tokens below.
    }
    const topScore = input.demos.reduce((best, demo) => Math.max(best, demo.score), -1);
    // Grounded neighbours with the very same phi (state and action; score 1) show what
    // followed exactly here: when there are any, they alone vote, however many merely
    // similar ones occurred more often (the most specific evidence first, as in n-gram
    // back-off). A synthetic twin is only this model's earlier guess, so it neither
    // silences the others nor survives their silencing.
    const isGroundedTwin = (demo: ScoredTransition) =>
      demo.score >= TWIN_SCORE && demo.transition.source !== 'synthetic';
    const twinsOnly = input.demos.some(isGroundedTwin);
    for (const demo of input.demos) {
      if (twinsOnly && !isGroundedTwin(demo)) continue;
      const alignment = alignActions(demo.transition.action, input.action, parse);
      lap('alignment');
      if (!alignment) continue;
      const text = transferEntities(demo.transition.nextState.text, alignment.pairs);
      if (text === undefined) {
        lap('transfer');
        continue;
      }
      // Similarity weights fall off steeply: a near-exact neighbour outvotes several
      // merely similar ones, while equally close neighbours vote as equals. A renamed
      // entity its outcome never mentions (`go left` for `go right`) may still have shaped
      // that outcome, so such a transfer is barely trusted.
      const verified = alignment.pairs.every(([from]) =>
        mentionsEntity(demo.transition.nextState.text, from),
      );
      lap('transfer');
      const weight =
        Math.exp((demo.score - topScore) / this.temperature) *
        (alignment.pairs.length === 0
          ? this.exactActionWeight
          : verified
            ? 1
            : this.unverifiedWeight) *
        occurrenceWeight(demo);
      const candidate = candidates.get(text) ?? { text, weight: 0, demoIds: [] };
      candidate.weight += weight;
      candidate.demoIds.push(demo.transition.id);
      candidates.set(text, candidate);
      const demoArgs =
        alignment.pairs.length === 0 ? currentArgs : this.safeArgs(demo.transition.action);
      aligned.push({
        demo,
        weight,
        overlap: instructionOverlap(demoArgs, this.instructionWordsOf(demo.transition.instruction)),
        text,
      });
      lap('voting');
    }

    const recollection = recallFromHistory(input, parse, this.hints);
    lap('consistency');
    let best: Candidate | undefined;
    for (const candidate of candidates.values()) {
      if (!best || candidate.weight > best.weight) best = candidate;
    }
    const noEffect = this.hints.noEffectObservations?.[0] ?? 'Nothing happens.';
    const remembered =
      recollection === undefined
        ? this.worldMemory?.recall(input.task, input.history, input.action)
        : undefined;
    const text = recollection?.text ?? remembered ?? best?.text ?? noEffect;

    // Termination and success: the real or offline neighbours that lead to the predicted next state vote
    // (so the outcome agrees with the state: "The door is locked." never ends in success),
    // weighted by similarity and by how alike the action relates to its task (a `put` of
    // the task's object ends it, another does not).
    const overlap = instructionOverlap(
      currentArgs,
      this.instructionWordsOf(input.task.instruction),
    );
    // Only grounded experience votes: a synthetic transition's outcome is this model's own
    // earlier guess, and letting it vote would let one wrong success breed more.
    const voters = (best ? aligned.filter((entry) => entry.text === best.text) : aligned).filter(
      (entry) => entry.demo.transition.source !== 'synthetic',
    );
    let total = 0;
    let doneWeight = 0;
    let successWeight = 0;
    let rewardSum = 0;
    for (const entry of voters) {
      const weight = entry.weight * (1 - Math.abs(overlap - entry.overlap)) + 1e-9;
      total += weight;
      rewardSum += weight * entry.demo.transition.reward;
      if (entry.demo.transition.done) doneWeight += weight;
      if (endedInSuccess(entry.demo)) successWeight += weight;
    }
    const judgedDone =
      recollection === undefined && total > 0 && doneWeight / (total + this.terminalPrior) > 0.5;
    const judgedSuccess = judgedDone && successWeight / doneWeight > 0.5;
    const outcome = {
      done: judgedDone,
      success: judgedSuccess,
      reward: total > 0 ? rewardSum / total : 0,
    };

    const reasoning = recollection
      ? `The episode already showed this (step ${recollection.fromStep + 1})${recollection.edits.length > 0 ? `, updated by ${recollection.edits.join(', ')}` : ''}.`
      : remembered !== undefined
        ? "This world's own offline episodes saw this."
        : best
          ? `${best.demoIds.length} of ${aligned.length} aligned neighbours (of ${input.demos.length} retrieved) lead here; nearest: ${best.demoIds[0]}.`
          : `No retrieved transition matches "${input.action}"; assuming it has no effect.`;
    lap('voting');
    if (timings) timings.calls += 1;
    return {
      reasoning,
      observation: { text },
      ...outcome,
      info: {
        predictedBy: recollection
          ? 'history'
          : remembered !== undefined
            ? 'world'
            : best
              ? 'neighbours'
              : 'default',
        supportingDemoIds: best?.demoIds ?? [],
        doneProbability: total > 0 ? doneWeight / (total + this.terminalPrior) : 0,
      },
    };
  }

  /** Adds real trajectories to the world memory (sim-to-real's episodes). */
  learn(trajectories: readonly Trajectory[]): void {
    this.worldMemory?.add(trajectories);
  }

  /**
   * The initial state of the most similar stored task: the `state` of the best-scored
   * demo at step 0 (the caller retrieves demos by the task's instruction).
   */
  async initialState(input: InitialStateInput): Promise<Observation> {
    const first = input.demos.find((demo) => demo.transition.stepIndex === 0);
    if (!first) {
      throw new EnvironmentError(
        `Cannot synthesise an initial state for task ${input.task.id}: none of the ${input.demos.length} retrieved transitions starts an episode. Give the task an \`initialObservation\`, or add offline trajectories of similar tasks to the replay buffer.`,
      );
    }
    const { text, actions } = first.transition.state;
    return actions === undefined ? { text } : { text, actions };
  }

  private safeArgs(action: string): readonly string[] {
    try {
      return this.parseRemembered(action).args;
    } catch {
      return [];
    }
  }
}
