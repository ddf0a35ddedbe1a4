/**
 * On-policy fidelity: how far the synthetic environment can be trusted on the episodes a
 * policy actually plays. Theorem 1's error terms are taken under the policy's own state
 * distribution, and RL finds first the actions a model pays for and reality refuses, so a
 * model that imitates expert steps well says little. Three views of one policy, side by side:
 * - free-running: success in the synthetic and in the real environment on the same tasks;
 * - synthetic-success precision: each successful synthetic episode's actions replayed on
 *   the real environment, and the share that really succeeds;
 * - teacher-forced: each step of the policy's real episodes predicted by the experience
 *   model from the real history, with the false-success rate and true-success recall.
 */
import type { DomainAdapter } from '../adapter.js';
import { EnvironmentError } from '../errors.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import type { Environment } from '../mdp/environment.js';
import type { Observation, Step, StepResult, Task, Trajectory } from '../mdp/schemas.js';
import type { Policy } from '../policy/policy.js';
import type { SeededRandom } from '../random/seeded-random.js';
import type { TransitionRetriever } from '../replay/retriever.js';
import { EnvironmentPool } from '../rollout/environment-pool.js';
import type { Rollout } from '../rollout/rollout.js';
import { wilsonInterval95 } from './evaluation-metrics.js';
import {
  evaluateExperienceModel,
  type FidelityFigures,
  type StepDisagreement,
} from './experience-fidelity.js';
import { evaluatePolicy } from './policy-evaluation.js';
import { exactMatch } from './text-similarity.js';

/** A success rate with its 95% Wilson interval. */
export interface SuccessEstimate {
  /** successes / episodes (0 without episodes). */
  rate: number;
  /** The 95% Wilson interval [low, high] of the rate. */
  interval95: [number, number];
  /** Episodes that succeeded. */
  successes: number;
  /** Episodes played. */
  episodes: number;
}

/** The first step of a replay where the real environment answered otherwise than the synthetic one. */
export interface ReplayDisagreement {
  /** Index t of the step in the episode. */
  stepIndex: number;
  /** The action both environments were given. */
  action: string;
  /** s_{t+1}'s text in the synthetic episode. */
  syntheticNextState: string;
  /** s_{t+1}'s text on the real environment (e.g. `Nothing happens.`). */
  realNextState: string;
  /** r_{t+1} in the synthetic episode. */
  syntheticReward: number;
  /** r_{t+1} on the real environment. */
  realReward: number;
  /** Whether the synthetic episode ended after the step. */
  syntheticDone: boolean;
  /** Whether the real episode ended after the step. */
  realDone: boolean;
}

/** One successful synthetic episode replayed on the real environment. */
export interface SyntheticSuccessReplay {
  /** The synthetic rollout's id (`<task id>#<index>`). */
  episodeId: string;
  /** The task's id. */
  taskId: string;
  /** The task's instruction. */
  instruction: string;
  /** The synthetic episode's actions, in order. */
  actions: string[];
  /** Actions the real environment was given (fewer when it ended first). */
  stepsReplayed: number;
  /** The real environment ended the episode (before or at the last action). */
  realEnded: boolean;
  /** The replay really succeeded (`info.success`, else a positive final reward). */
  realSuccess: boolean;
  /** The first step whose real outcome (next-state text, reward or `done`) differed; absent when none did. */
  firstDisagreement?: ReplayDisagreement;
}

/** The share of synthetic successes that are real ones. */
export interface SyntheticSuccessPrecision {
  /** reallySucceeded / replayed (0 without replays). */
  rate: number;
  /** The 95% Wilson interval of the rate. */
  interval95: [number, number];
  /** Successful synthetic episodes replayed on the real environment. */
  replayed: number;
  /** Replays that succeeded on the real environment. */
  reallySucceeded: number;
  /** Every replay, in task order. */
  replays: SyntheticSuccessReplay[];
}

/** One task played free-running in both environments. */
export interface OnPolicyEpisodePair {
  /** The task's id. */
  taskId: string;
  /** The task's instruction. */
  instruction: string;
  /** The synthetic episode's outcome and length. */
  synthetic: { success: boolean; steps: number };
  /** The real episode's outcome and length. */
  real: { success: boolean; steps: number };
}

/** What {@link measureOnPolicyFidelity} reports. */
export interface OnPolicyFidelityReport {
  /** `ExperienceModel.id` of the model measured. */
  experienceModelId: string;
  /** `Policy.id` of the policy whose episodes were measured. */
  policyId: string;
  /** Tasks played (one episode each per environment). */
  tasks: number;
  /** The step limit of every episode. */
  maxSteps: number;
  /** Whether the policy took its most likely action (else it sampled). */
  greedy: boolean;
  /** Free-running success in the synthetic environment. */
  syntheticSuccess: SuccessEstimate;
  /** Free-running success in the real environment, on the same tasks. */
  realSuccess: SuccessEstimate;
  /** Successful synthetic episodes replayed action by action on the real environment. */
  syntheticSuccessPrecision: SyntheticSuccessPrecision;
  /** Teacher-forced on the policy's real episodes: the share of steps the model predicts as a successful end that is none. */
  falseSuccessRate: number;
  /** Teacher-forced: among real successful final steps, the share the model predicts as successful. */
  trueSuccessRecall: number;
  /** Teacher-forced: the share of steps whose predicted next state equals the real one. */
  nextStateExact: number;
  /** Every teacher-forced figure over all steps of the policy's real episodes. */
  teacherForced: FidelityFigures;
  /** The teacher-forced figures per action type (`adapter.parseAction(action).type`, `unparsed` outside the grammar). */
  byActionType: Record<string, FidelityFigures>;
  /** The worst teacher-forced steps: false successes, then missed successes, then the lowest next-state F1. */
  worstDisagreements: StepDisagreement[];
  /** Each task's synthetic and real episode, in task order. */
  episodes: OnPolicyEpisodePair[];
}

/** The stages of a measurement, in order. */
export type OnPolicyFidelityPhase = 'synthetic' | 'real' | 'replay' | 'teacher-forced';

/** Progress of a measurement: episodes (steps, when teacher-forced) done in the current phase. */
export interface OnPolicyFidelityProgress {
  /** The phase running. */
  phase: OnPolicyFidelityPhase;
  /** Episodes (teacher-forced: steps) done in the phase. */
  done: number;
  /** Episodes (teacher-forced: steps) of the phase in all. */
  total: number;
  /** Whether the episode that just ended succeeded (absent for teacher-forced steps). */
  success?: boolean;
}

/** Options of {@link measureOnPolicyFidelity}. */
export interface OnPolicyFidelityOptions {
  /** The policy measured (e.g. a run's checkpoint). */
  policy: Policy;
  /** The tasks, played once each in each environment. */
  tasks: readonly Task[];
  /** The domain: its grammar groups steps by action type, its candidates feed the policy. */
  adapter: Pick<DomainAdapter, 'name' | 'parseAction' | 'candidateActions'>;
  /** Creates one synthetic environment (built on `experienceModel`); called once per concurrent slot. */
  syntheticEnvironment: () => Environment | Promise<Environment>;
  /** Creates one real environment; instances are shared by the real episodes and the replays. */
  realEnvironment: () => Environment | Promise<Environment>;
  /** The model predicting the teacher-forced steps: the synthetic environment's own. */
  experienceModel: ExperienceModel;
  /** Where the teacher-forced demonstrations come from (the synthetic environment's buffer). */
  retriever?: TransitionRetriever;
  /** Demonstrations per teacher-forced step. Default 4 (0 without a retriever). */
  k?: number;
  /** Give the model the real history when teacher-forced (as the synthetic environment does). Default `true`. */
  useHistory?: boolean;
  /** Steps after which an episode is cut off. */
  maxSteps: number;
  /** Take the most likely action (default true), or sample. */
  greedy?: boolean;
  /** Randomness for sampling; forks are drawn, the stream is never advanced. */
  random: SeededRandom;
  /** Synthetic environments stepping at once. Default 4. */
  concurrency?: number;
  /** Real environments stepping at once (free-running and replays). Default 1. */
  realConcurrency?: number;
  /** How many of the worst teacher-forced disagreements the report keeps. Default 20. */
  worstDisagreements?: number;
  /** Cancels the measurement between episodes. */
  signal?: AbortSignal;
  /** Called as each episode (teacher-forced: trajectory) ends. */
  onProgress?: (progress: OnPolicyFidelityProgress) => void;
}

function estimate(rollouts: readonly Rollout[]): SuccessEstimate {
  const successes = rollouts.filter((rollout) => rollout.success).length;
  return {
    rate: rollouts.length === 0 ? 0 : successes / rollouts.length,
    interval95: wilsonInterval95(successes, rollouts.length),
    successes,
    episodes: rollouts.length,
  };
}

/**
 * A real rollout as a trajectory whose rewards are the environment's own: a policy's
 * penalties for its invalid outputs are not the model's to predict. Nor is a cut by the real
 * environment's own step limit (MiniWoB++'s pages stop at 10 actions by default, below a
 * run's 30): like the measurement's own limit, it ends no task, so it is no end.
 */
function realTrajectory(rollout: Rollout): Trajectory {
  return {
    id: rollout.id,
    task: rollout.task,
    steps: rollout.steps.map((step) => ({
      observation: step.observation,
      action: step.action,
      reward: step.environmentReward,
      done: step.done && !step.truncated,
      ...(step.truncated ? { truncated: true } : {}),
    })),
    finalObservation: rollout.finalObservation,
    source: 'real',
    success: rollout.success,
  };
}

/**
 * Plays a synthetic episode's actions in order on `environment` from `reset`, until they run
 * out or the environment ends the episode. Success is judged as `RolloutCollector` judges it.
 */
async function replay(environment: Environment, rollout: Rollout): Promise<SyntheticSuccessReplay> {
  await environment.reset(rollout.task);
  let firstDisagreement: ReplayDisagreement | undefined;
  let success = false;
  let last: StepResult | undefined;
  let stepsReplayed = 0;
  for (const [index, step] of rollout.steps.entries()) {
    const result = await environment.step(step.action);
    stepsReplayed += 1;
    last = result;
    if (result.info.success === true) success = true;
    const syntheticNext = rollout.steps[index + 1]?.observation ?? rollout.finalObservation;
    if (
      firstDisagreement === undefined &&
      (!exactMatch(result.observation.text, syntheticNext.text) ||
        result.reward !== step.environmentReward ||
        result.done !== step.done)
    ) {
      firstDisagreement = {
        stepIndex: index,
        action: step.action,
        syntheticNextState: syntheticNext.text,
        realNextState: result.observation.text,
        syntheticReward: step.environmentReward,
        realReward: result.reward,
        syntheticDone: step.done,
        realDone: result.done,
      };
    }
    if (result.done) break;
  }
  const realEnded = last?.done === true;
  if (!success && realEnded && last!.info.success === undefined && last!.reward > 0) success = true;
  return {
    episodeId: rollout.id,
    taskId: rollout.task.id,
    instruction: rollout.task.instruction,
    actions: rollout.steps.map((step) => step.action),
    stepsReplayed,
    realEnded,
    realSuccess: success,
    ...(firstDisagreement ? { firstDisagreement } : {}),
  };
}

/** Replays every rollout on environments leased from `pool`, `realConcurrency` at once; results in order. */
async function replayAll(
  rollouts: readonly Rollout[],
  pool: EnvironmentPool,
  options: OnPolicyFidelityOptions,
): Promise<SyntheticSuccessReplay[]> {
  const results: SyntheticSuccessReplay[] = new Array(rollouts.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    const environment = await pool.lease();
    try {
      while (next < rollouts.length) {
        options.signal?.throwIfAborted();
        const index = next;
        next += 1;
        const rollout = rollouts[index]!;
        // An engine that crashed under the replay is restarted by its environment; one more
        // try, as the rollout collector gives an episode.
        results[index] = await replay(environment, rollout).catch((error: unknown) => {
          if (!EnvironmentError.isInstance(error)) throw error;
          return replay(environment, rollout);
        });
        done += 1;
        options.onProgress?.({
          phase: 'replay',
          done,
          total: rollouts.length,
          success: results[index]!.realSuccess,
        });
      }
    } finally {
      await environment.close();
    }
  };
  const slots = Math.min(options.realConcurrency ?? 1, rollouts.length);
  await Promise.all(Array.from({ length: slots }, worker));
  return results;
}

/**
 * Measures how far `experienceModel`'s synthetic environment agrees with the real one on
 * `policy`'s own episodes: free-running success in both, the precision of synthetic
 * successes replayed on the real environment, and teacher-forced fidelity on the policy's
 * real episodes (false-success rate and true-success recall overall and per action type,
 * and the worst disagreements).
 */
export async function measureOnPolicyFidelity(
  options: OnPolicyFidelityOptions,
): Promise<OnPolicyFidelityReport> {
  const greedy = options.greedy ?? true;
  const random = options.random.fork('on-policy-fidelity');
  const realConcurrency = options.realConcurrency ?? 1;
  const common = {
    policy: options.policy,
    tasks: options.tasks,
    maxSteps: options.maxSteps,
    greedy,
    random,
    candidateActions: (observation: Observation, history: readonly Step[]) =>
      options.adapter.candidateActions(observation, history),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const progress =
    (phase: OnPolicyFidelityPhase) =>
    (rollout: Rollout, { done, total }: { done: number; total: number }) =>
      options.onProgress?.({ phase, done, total, success: rollout.success });

  const synthetic = await evaluatePolicy({
    ...common,
    environment: 'synthetic',
    environmentFactory: options.syntheticEnvironment,
    concurrency: options.concurrency ?? 4,
    onEpisode: progress('synthetic'),
  });
  // Real environments are costly to start (an engine process each): the free-running
  // episodes and the replays lease them from one pool.
  const pool = new EnvironmentPool(options.realEnvironment);
  let real: Awaited<ReturnType<typeof evaluatePolicy>>;
  let replays: SyntheticSuccessReplay[];
  try {
    real = await evaluatePolicy({
      ...common,
      environment: 'real',
      environmentFactory: () => pool.lease(),
      concurrency: realConcurrency,
      onEpisode: progress('real'),
    });
    replays = await replayAll(
      synthetic.rollouts.filter((rollout) => rollout.success),
      pool,
      options,
    );
  } finally {
    await pool.closeAll();
  }

  const trajectories = real.rollouts.map(realTrajectory);
  const totalSteps = trajectories.reduce((sum, trajectory) => sum + trajectory.steps.length, 0);
  const teacherForced = await evaluateExperienceModel(options.experienceModel, trajectories, {
    adapter: options.adapter,
    ...(options.retriever ? { retriever: options.retriever } : {}),
    ...(options.k === undefined ? {} : { k: options.k }),
    ...(options.useHistory === undefined ? {} : { useHistory: options.useHistory }),
    keepDisagreements: options.worstDisagreements ?? 20,
    onProgress: (stepsDone) =>
      options.onProgress?.({ phase: 'teacher-forced', done: stepsDone, total: totalSteps }),
  });

  const reallySucceeded = replays.filter((outcome) => outcome.realSuccess).length;
  return {
    experienceModelId: options.experienceModel.id,
    policyId: options.policy.id,
    tasks: options.tasks.length,
    maxSteps: options.maxSteps,
    greedy,
    syntheticSuccess: estimate(synthetic.rollouts),
    realSuccess: estimate(real.rollouts),
    syntheticSuccessPrecision: {
      rate: replays.length === 0 ? 0 : reallySucceeded / replays.length,
      interval95: wilsonInterval95(reallySucceeded, replays.length),
      replayed: replays.length,
      reallySucceeded,
      replays,
    },
    falseSuccessRate: teacherForced.overall.falseSuccessRate,
    trueSuccessRecall: teacherForced.overall.trueSuccessRecall,
    nextStateExact: teacherForced.overall.exactMatch,
    teacherForced: teacherForced.overall,
    byActionType: teacherForced.byActionType,
    worstDisagreements: teacherForced.worstDisagreements,
    episodes: options.tasks.map((task, index) => {
      const inSynthetic = synthetic.rollouts[index]!;
      const inReal = real.rollouts[index]!;
      return {
        taskId: task.id,
        instruction: task.instruction,
        synthetic: { success: inSynthetic.success, steps: inSynthetic.steps.length },
        real: { success: inReal.success, steps: inReal.steps.length },
      };
    }),
  };
}
