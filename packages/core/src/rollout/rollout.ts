/**
 * Rollout collection: a policy plays tasks in many environment instances at once, with
 * groups of n rollouts per task for group-relative methods (GRPO), recording per step
 * what a trainer needs (observation, candidates, action, log-probability, reward, done,
 * timing).
 */
import { BudgetExhaustedError, ConfigError, EnvironmentError } from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import type {
  ExperienceSource,
  Observation,
  Step,
  Task,
  Trajectory,
  Transition,
} from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import { candidateActionsAt, type Policy } from '../policy/policy.js';
import type { SeededRandom } from '../random/seeded-random.js';

/** One step of a rollout. */
export interface RolloutStep {
  /** s_t. */
  observation: Observation;
  /** The actions the policy chose from (the observation's list, else the adapter's candidates). */
  candidates: string[];
  /** a_t. */
  action: string;
  /** log pi(a_t | s_t) under the acting policy, when it reported one. */
  logprob: number | undefined;
  /** r_{t+1}: the environment's reward plus the policy's penalty (see `penalty`). */
  reward: number;
  /** The environment's own reward. */
  environmentReward: number;
  /** The policy's reward penalty for this step (0, or negative for invalid outputs). */
  penalty: number;
  /** True when the environment ended the episode after this action. */
  done: boolean;
  /** True when a limit of the environment (step cap, budget), not the task, ended it. */
  truncated: boolean;
  /** The environment's `info` for this step. */
  info: Record<string, unknown>;
  /** The policy's diagnostics for this step. */
  policyInfo: Record<string, unknown> | undefined;
  /** Seconds the policy took to decide. */
  actSeconds: number;
  /** Seconds the environment took to step. */
  stepSeconds: number;
}

/** One episode of a task, one member of its task's group. */
export interface Rollout {
  /** Unique within a collection: `<task id>#<rollout index in group>`. */
  id: string;
  task: Task;
  /** Group key: rollouts of the same task in one collection share it (GRPO's `uid`). */
  groupId: string;
  /** Index of this rollout within its group, 0..n-1. */
  indexInGroup: number;
  steps: RolloutStep[];
  /** s_T, the observation after the last action. */
  finalObservation: Observation;
  /** The task was accomplished (the environment's `info.success`, else a positive final reward). */
  success: boolean;
  /** Sum of the steps' rewards (penalties included). */
  totalReward: number;
  /**
   * A limit, not the task, ended the episode: the collector's `maxSteps`, or the
   * environment's own cap (`StepResult.truncated`), or the sim-to-real budget.
   */
  truncated: boolean;
  /**
   * The sim-to-real budget ran out mid-episode (`BudgetExhaustedError`): the episode is
   * incomplete, so it counts neither as a success nor as a failure.
   */
  budgetExhausted: boolean;
  /** Seconds from reset to the last step. */
  seconds: number;
  /**
   * Earlier attempts of this episode lost to an environment failure (an `EnvironmentError`,
   * such as an engine that crashed or hung and was restarted); 0 normally.
   */
  retries: number;
}

/** Options of {@link RolloutCollector}. */
export interface RolloutCollectorOptions {
  /** Creates one environment instance; called once per concurrent slot, reused across episodes. */
  environmentFactory: () => Environment | Promise<Environment>;
  /** Episodes run at once (environment instances). Default 8. */
  concurrency?: number;
  /** Steps after which the collector stops an episode (`truncated`). */
  maxSteps: number;
  /**
   * Candidate actions where an observation does not list them (`DomainAdapter.candidateActions`).
   */
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[];
  /**
   * Times an episode lost to an environment failure (an `EnvironmentError` from `reset` or
   * `step`: a crashed or hung engine, a dropped connection) is played again from `reset`,
   * with the same random stream, before the collection fails. Default 1.
   */
  episodeRetries?: number;
}

/** What to collect. */
export interface CollectOptions {
  policy: Policy;
  tasks: readonly Task[];
  /** Rollouts per task (the group size n). Default 1. */
  rolloutsPerTask?: number;
  /**
   * Seeds the per-episode sampling streams; advanced once per collection so successive
   * collections differ. Episode k of a collection always gets the same stream for a given
   * state, however episodes interleave.
   */
  random: SeededRandom;
  /** Take the most likely action (evaluation). Default false. */
  greedy?: boolean;
  signal?: AbortSignal;
  /** Called as each episode ends (in the order they end), with how many of all have ended. */
  onEpisode?: (rollout: Rollout, progress: { done: number; total: number }) => void;
  /**
   * Called at every state of every episode before the policy acts, and waited for: where the
   * environment can fork, the caller may fork it there (forked continuations' credit). An
   * episode played again after an environment failure calls it again for its states.
   */
  onState?: (state: EpisodeState) => void | Promise<void>;
}

/** Where an episode stands when the policy is about to act (what `onState` sees). */
export interface EpisodeState {
  /** The episode's index in the collection: task order, then index in its group. */
  episode: number;
  /** Steps taken before this state (the state is s_stepIndex). */
  stepIndex: number;
  /** The environment, in that state: fork it to play on from there. */
  environment: Environment;
}

function validatePositiveInteger(value: number, field: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(`${field} must be a positive integer, got ${value}.`, { field });
  }
}

/**
 * Runs episodes over a pool of environment instances. Keep one collector across training
 * iterations so environments (processes, browsers, servers) start once; `close()` at the end.
 */
export class RolloutCollector {
  private readonly pool: Environment[] = [];
  private readonly concurrency: number;
  private readonly episodeRetries: number;
  private closed = false;

  constructor(private readonly options: RolloutCollectorOptions) {
    this.concurrency = options.concurrency ?? 8;
    validatePositiveInteger(this.concurrency, 'concurrency');
    this.episodeRetries = options.episodeRetries ?? 1;
    if (!Number.isInteger(this.episodeRetries) || this.episodeRetries < 0) {
      throw new ConfigError(`episodeRetries must be an integer >= 0, got ${this.episodeRetries}.`, {
        field: 'episodeRetries',
      });
    }
    validatePositiveInteger(options.maxSteps, 'maxSteps');
  }

  /** Plays every task `rolloutsPerTask` times; rollouts come back grouped in task order. */
  async collect(options: CollectOptions): Promise<Rollout[]> {
    if (this.closed) throw new ConfigError('collect() on a closed RolloutCollector.');
    const rolloutsPerTask = options.rolloutsPerTask ?? 1;
    validatePositiveInteger(rolloutsPerTask, 'rolloutsPerTask');
    const jobs: { task: Task; indexInGroup: number }[] = [];
    for (const task of options.tasks) {
      for (let index = 0; index < rolloutsPerTask; index += 1)
        jobs.push({ task, indexInGroup: index });
    }
    const base = options.random.fork('rollouts');
    options.random.nextUint32();
    const results: Rollout[] = new Array(jobs.length);
    const slots = Math.min(this.concurrency, jobs.length);
    while (this.pool.length < slots) this.pool.push(await this.options.environmentFactory());
    let next = 0;
    let ended = 0;
    const worker = async (environment: Environment) => {
      while (next < jobs.length) {
        if (options.signal?.aborted) throw options.signal.reason ?? new Error('Rollout aborted.');
        const jobIndex = next;
        next += 1;
        const job = jobs[jobIndex]!;
        results[jobIndex] = await this.runEpisode(
          environment,
          options.policy,
          job.task,
          job.indexInGroup,
          () => base.fork(`episode:${jobIndex}`),
          { ...options, episode: jobIndex },
        );
        ended += 1;
        options.onEpisode?.(results[jobIndex]!, { done: ended, total: jobs.length });
      }
    };
    await Promise.all(this.pool.slice(0, slots).map(worker));
    return results;
  }

  /** Closes every environment instance. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const environments = this.pool.splice(0);
    await Promise.all(environments.map((environment) => environment.close()));
  }

  /** Plays one episode, again from `reset` (same stream) when the environment fails. */
  private async runEpisode(
    environment: Environment,
    policy: Policy,
    task: Task,
    indexInGroup: number,
    stream: () => SeededRandom,
    options: CollectOptions & { episode: number },
  ): Promise<Rollout> {
    const allowed = this.episodeRetries;
    for (let retries = 0; ; retries += 1) {
      try {
        return {
          ...(await this.playEpisode(environment, policy, task, indexInGroup, stream(), options)),
          retries,
        };
      } catch (error) {
        if (!EnvironmentError.isInstance(error) || (retries === 0 && allowed === 0)) throw error;
        if (retries >= allowed) {
          throw new EnvironmentError(
            `${(error as Error).message} (the episode failed ${retries + 1} times; episodeRetries is ${allowed})`,
            { cause: error },
          );
        }
      }
    }
  }

  private async playEpisode(
    environment: Environment,
    policy: Policy,
    task: Task,
    indexInGroup: number,
    random: SeededRandom,
    options: CollectOptions & { episode: number },
  ): Promise<Omit<Rollout, 'retries'>> {
    const started = performance.now();
    let observation: Observation;
    try {
      observation = await environment.reset(task);
    } catch (error) {
      throw new EnvironmentError(
        `reset() failed for task ${task.id}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    const { onState, episode } = options;
    const played = await playOn({
      environment,
      policy,
      task,
      observation,
      history: [],
      random,
      maxSteps: this.options.maxSteps,
      ...(this.options.candidateActions ? { candidateActions: this.options.candidateActions } : {}),
      greedy: options.greedy ?? false,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(onState
        ? { onState: (stepIndex: number) => onState({ episode, stepIndex, environment }) }
        : {}),
    });
    const { steps } = played;
    let { success } = played;
    const last = steps.at(-1);
    if (!success && last?.done && last.info.success === undefined && last.environmentReward > 0) {
      success = true;
    }
    return {
      id: `${task.id}#${indexInGroup}`,
      task,
      groupId: task.id,
      indexInGroup,
      steps,
      finalObservation: played.observation,
      success,
      totalReward: steps.reduce((total, step) => total + step.reward, 0),
      truncated: !played.done || last?.truncated === true,
      budgetExhausted: played.budgetExhausted,
      seconds: (performance.now() - started) / 1000,
    };
  }
}

/** Where {@link playOn} starts: an environment in the state `observation`, after `history`. */
export interface PlayOnOptions {
  environment: Environment;
  policy: Policy;
  task: Task;
  /** The current state (s_t). */
  observation: Observation;
  /** The episode's steps before it (t of them); the steps played are appended to it. */
  history: Step[];
  random: SeededRandom;
  /** The episode's step limit, counted from its start (the history included). */
  maxSteps: number;
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[];
  greedy: boolean;
  signal?: AbortSignal;
  /** Called at each state before the policy acts, with the number of steps taken before it. */
  onState?: (stepIndex: number) => void | Promise<void>;
}

/** What {@link playOn} played. */
export interface PlayedSteps {
  steps: RolloutStep[];
  /** The state after the last step. */
  observation: Observation;
  /** The environment reported success at some step. */
  success: boolean;
  /** The environment ended the episode (otherwise the step limit or the budget did). */
  done: boolean;
  /** The sim-to-real budget ran out mid-way. */
  budgetExhausted: boolean;
}

/**
 * Plays an episode on from a state until the environment ends it, `maxSteps` steps in all are
 * taken, or the real-transition budget runs out: a collected episode from its reset, a forked
 * continuation from the state it was forked at.
 */
export async function playOn(options: PlayOnOptions): Promise<PlayedSteps> {
  const { environment, policy, task, history, random } = options;
  let { observation } = options;
  const steps: RolloutStep[] = [];
  let success = false;
  let done = false;
  let budgetExhausted = false;
  while (!done && history.length < options.maxSteps) {
    if (options.signal?.aborted) throw options.signal.reason ?? new Error('Rollout aborted.');
    await options.onState?.(history.length);
    const candidates = [...candidateActionsAt(observation, history, options.candidateActions)];
    const actStarted = performance.now();
    const decision = await policy.act(observation, {
      task,
      history,
      candidates,
      random,
      greedy: options.greedy,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const stepStarted = performance.now();
    let result: Awaited<ReturnType<Environment['step']>>;
    try {
      result = await environment.step(decision.action);
    } catch (error) {
      if (!BudgetExhaustedError.isInstance(error)) throw error;
      budgetExhausted = true;
      break;
    }
    const stepEnded = performance.now();
    const penalty = decision.rewardPenalty ?? 0;
    const reward = result.reward + penalty;
    done = result.done;
    if (result.info.success === true) success = true;
    steps.push({
      observation,
      candidates,
      action: decision.action,
      logprob: decision.logprob,
      reward,
      environmentReward: result.reward,
      penalty,
      done,
      truncated: result.truncated === true,
      info: result.info,
      policyInfo: decision.info,
      actSeconds: (stepStarted - actStarted) / 1000,
      stepSeconds: (stepEnded - stepStarted) / 1000,
    });
    history.push({
      observation,
      action: decision.action,
      reward,
      done,
      ...(result.truncated ? { truncated: true } : {}),
    });
    observation = result.observation;
  }
  return { steps, observation, success, done, budgetExhausted };
}

/** Collects rollouts with a one-off collector that is closed afterwards. */
export async function collectRollouts(
  options: RolloutCollectorOptions & CollectOptions,
): Promise<Rollout[]> {
  const collector = new RolloutCollector(options);
  try {
    return await collector.collect(options);
  } finally {
    await collector.close();
  }
}

/**
 * A rollout as a core `Trajectory`; each step's `info` holds `logprob`, `candidates`,
 * `environmentReward`, `penalty`, `actSeconds`, `stepSeconds`, the environment's info under
 * `env`, and any per-step `extra` (advantages, say) merged in.
 */
export function rolloutToTrajectory(
  rollout: Rollout,
  source: ExperienceSource,
  extra?: (stepIndex: number) => Record<string, unknown>,
): Trajectory {
  return {
    id: rollout.id,
    task: rollout.task,
    steps: rollout.steps.map((step, index) => ({
      observation: step.observation,
      action: step.action,
      reward: step.reward,
      done: step.done,
      info: {
        ...(step.logprob === undefined ? {} : { logprob: step.logprob }),
        candidates: step.candidates,
        environmentReward: step.environmentReward,
        penalty: step.penalty,
        actSeconds: step.actSeconds,
        stepSeconds: step.stepSeconds,
        env: step.info,
        ...(step.policyInfo ? { policy: step.policyInfo } : {}),
        ...extra?.(index),
      },
    })),
    finalObservation: rollout.finalObservation,
    source,
    success: rollout.success,
    meta: {
      groupId: rollout.groupId,
      indexInGroup: rollout.indexInGroup,
      truncated: rollout.truncated,
      budgetExhausted: rollout.budgetExhausted,
    },
  };
}

/**
 * A rollout's transitions for the replay buffer (through `trajectoryToTransitions`, the one
 * place a `Transition` is built), with `trajectoryId` as their episode id (`<id>#<step>`
 * their ids) and `policyVersion` (the iteration that collected them) when given.
 */
export function rolloutToTransitions(
  rollout: Rollout,
  source: ExperienceSource,
  options: { trajectoryId: string; policyVersion?: number },
): Transition[] {
  const transitions = trajectoryToTransitions(rolloutToTrajectory(rollout, source), {
    trajectoryId: options.trajectoryId,
  });
  const { policyVersion } = options;
  return policyVersion === undefined
    ? transitions
    : transitions.map((transition) => ({ ...transition, policyVersion }));
}
