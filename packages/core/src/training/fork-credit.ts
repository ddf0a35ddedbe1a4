/**
 * Step-level credit from forked continuations (`trainer.credit: 'fork'`). A synthetic
 * environment can fork at any state, which real ones cannot: at chosen states of each episode
 * the collector forks it, and after the collection `continuations` episodes played on from each
 * fork by the current policy estimate the state's value V(s_t) by Monte Carlo. A step's
 * advantage is then its own: its return-to-go G_t against V(s_t), not its episode's reward
 * against its group's (VinePPO's estimator, with the environment doing the restoring that
 * real agent environments cannot).
 *
 * Every fork plays with its own random stream (`<episode>:<step>:<continuation>`) drawn from
 * the trainer's, so the values, and the run, come out the same however continuations
 * interleave, and a run resumed from its checkpoint repeats them exactly.
 */
import { ConfigError } from '../errors.js';
import { type Environment, forkEnvironment } from '../mdp/environment.js';
import type { Observation, Step } from '../mdp/schemas.js';
import type { Policy } from '../policy/policy.js';
import type { SeededRandom } from '../random/seeded-random.js';
import { type EpisodeState, playOn, type Rollout } from '../rollout/rollout.js';
import { discountedReturns } from './advantages.js';

/** How forked continuations value the states of an episode. */
export interface ForkCreditOptions {
  /** Continuations played from each chosen state (K). Default 4. */
  continuations?: number;
  /**
   * Fork at every `every`-th state of an episode (s_0, s_every, ...). Default 1: every state.
   * A step between two chosen states is measured against the value of the chosen state before
   * it.
   */
  every?: number;
}

/** {@link ForkCreditOptions} with defaults filled in. */
export interface ForkCreditSettings {
  continuations: number;
  every: number;
}

/** The settings of `options`, checked. */
export function forkCreditSettings(options: ForkCreditOptions = {}): ForkCreditSettings {
  const settings = { continuations: options.continuations ?? 4, every: options.every ?? 1 };
  for (const [field, value] of Object.entries(settings)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new ConfigError(`trainer.forks.${field} must be a positive integer, got ${value}.`, {
        field: `trainer.forks.${field}`,
      });
    }
  }
  return settings;
}

/** What playing the continuations needs besides the forks. */
export interface ForkPlayOptions {
  policy: Policy;
  /** The trainer's stream: one draw seeds every continuation's. */
  random: SeededRandom;
  /** The episode's step limit, counted from its start. */
  maxSteps: number;
  /** Continuations stepping at once. */
  concurrency: number;
  /** Discount of the returns (1 for GRPO). */
  gamma: number;
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[];
  signal?: AbortSignal;
}

/** The values forks gave one collection's episodes. */
export interface ForkValues {
  /** V(s_t) of every step of each episode (collection order), by Monte Carlo over its forks. */
  values: number[][];
  /** Synthetic steps the continuations took. */
  steps: number;
  /** States forked. */
  states: number;
}

/** The forks of one collection: made while it plays, played after it. */
export class ForkedStates {
  /** Per episode (collection index), per chosen step index, the environment forked there. */
  private readonly forks = new Map<number, Map<number, Environment>>();

  constructor(private readonly settings: ForkCreditSettings) {}

  /**
   * The collector's `onState`: forks the episode's environment at every chosen state (an
   * episode played again after a failure replaces its forks).
   */
  readonly onState = async ({ episode, stepIndex, environment }: EpisodeState): Promise<void> => {
    if (stepIndex % this.settings.every !== 0) return;
    let forks = this.forks.get(episode);
    if (!forks || stepIndex === 0) {
      forks = new Map();
      this.forks.set(episode, forks);
    }
    forks.set(stepIndex, await forkEnvironment(environment, 'the training environment'));
  };

  /**
   * Plays `continuations` episodes on from every fork of `rollouts` (the collection, in its
   * order) and returns the Monte-Carlo value of each of their states; closes the forks.
   */
  async values(rollouts: readonly Rollout[], options: ForkPlayOptions): Promise<ForkValues> {
    const { continuations } = this.settings;
    const base = options.random.fork('fork-credit');
    options.random.nextUint32();
    const jobs: { episode: number; stepIndex: number; continuation: number }[] = [];
    rollouts.forEach((rollout, episode) => {
      for (let stepIndex = 0; stepIndex < rollout.steps.length; stepIndex += 1) {
        if (!this.forks.get(episode)?.has(stepIndex)) continue;
        for (let continuation = 0; continuation < continuations; continuation += 1)
          jobs.push({ episode, stepIndex, continuation });
      }
    });
    const returns = new Array<number>(jobs.length);
    let steps = 0;
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const index = next;
        next += 1;
        const job = jobs[index]!;
        const rollout = rollouts[job.episode]!;
        const environment = await forkEnvironment(
          this.forks.get(job.episode)!.get(job.stepIndex)!,
          'a forked environment',
        );
        try {
          const played = await playOn({
            environment,
            policy: options.policy,
            task: rollout.task,
            observation: rollout.steps[job.stepIndex]!.observation,
            history: historyBefore(rollout, job.stepIndex),
            random: base.fork(`${job.episode}:${job.stepIndex}:${job.continuation}`),
            maxSteps: options.maxSteps,
            ...(options.candidateActions ? { candidateActions: options.candidateActions } : {}),
            greedy: false,
            ...(options.signal ? { signal: options.signal } : {}),
          });
          steps += played.steps.length;
          returns[index] =
            discountedReturns(
              played.steps.map((step) => step.reward),
              options.gamma,
            )[0] ?? 0;
        } finally {
          await environment.close();
        }
      }
    };
    try {
      const workers = Math.max(1, Math.min(options.concurrency, jobs.length));
      await Promise.all(Array.from({ length: workers }, worker));
    } finally {
      await this.close();
    }
    const sums = new Map<string, number>();
    jobs.forEach((job, index) => {
      const key = `${job.episode}:${job.stepIndex}`;
      sums.set(key, (sums.get(key) ?? 0) + returns[index]!);
    });
    const values = rollouts.map((rollout, episode) => {
      let value = 0;
      return rollout.steps.map((_, stepIndex) => {
        const sum = sums.get(`${episode}:${stepIndex}`);
        if (sum !== undefined) value = sum / continuations;
        return value;
      });
    });
    return { values, steps, states: sums.size };
  }

  /** Closes every fork not played yet. */
  async close(): Promise<void> {
    const forks = [...this.forks.values()].flatMap((byStep) => [...byStep.values()]);
    this.forks.clear();
    await Promise.all(forks.map((environment) => environment.close()));
  }
}

/** The steps of `rollout` before step `stepIndex`, as a policy sees its history. */
function historyBefore(rollout: Rollout, stepIndex: number): Step[] {
  return rollout.steps.slice(0, stepIndex).map((step) => ({
    observation: step.observation,
    action: step.action,
    reward: step.reward,
    done: step.done,
    ...(step.truncated ? { truncated: true } : {}),
  }));
}

/**
 * Each step's own advantage: its discounted return-to-go G_t against V(s_t), in batch order
 * (episode, then step).
 *
 * @param values V(s_t) per step of each episode, as {@link ForkedStates.values} gives them
 */
export function forkAdvantages(
  rollouts: readonly Rollout[],
  values: readonly (readonly number[])[],
  gamma: number,
): { advantages: number[]; returns: number[] } {
  const advantages: number[] = [];
  const returns: number[] = [];
  rollouts.forEach((rollout, episode) => {
    const toGo = discountedReturns(
      rollout.steps.map((step) => step.reward),
      gamma,
    );
    toGo.forEach((value, step) => {
      returns.push(value);
      advantages.push(value - values[episode]![step]!);
    });
  });
  return { advantages, returns };
}

/** The progress line of an iteration's forks: states forked, their steps, and the run's total. */
export function forkCreditLine(
  iteration: number,
  update: { steps: number; forkSteps?: number; forkStates?: number },
  total: number,
): string {
  return `iteration ${iteration}: fork credit: ${update.forkStates ?? 0} states forked, ${update.forkSteps ?? 0} synthetic steps in their continuations beside the episodes' ${update.steps} (${total} fork steps in all)`;
}
