/**
 * The rollout-and-update path shared by {@link GrpoTrainer} and {@link PpoTrainer}: collect
 * groups of rollouts, score every step with an advantage estimator, then hand the batch to
 * the policy's own clipped policy-gradient update (`TrainablePolicy.update`: epochs over
 * shuffled mini-batches, KL to a frozen reference, entropy bonus), wherever its gradient
 * step runs. The trainers differ only in the advantage estimator, in which rollouts carry a
 * learning signal, and in fitting a value function. With `credit: 'fork'` the environments
 * fork at chosen states while the rollouts play, and the continuations played from the forks
 * give each step its own value (`fork-credit.ts`).
 */
import { ConfigError } from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import type { Observation, Step, Task } from '../mdp/schemas.js';
import type { PolicySample, PolicyUpdateMetrics, TrainablePolicy } from '../policy/policy.js';
import {
  type PpoLossConfig,
  type PpoLossOptions,
  resolvePpoLossOptions,
} from '../policy/ppo-loss.js';
import type { SeededRandom } from '../random/seeded-random.js';
import { type Rollout, RolloutCollector } from '../rollout/rollout.js';
import {
  type ForkCreditOptions,
  type ForkCreditSettings,
  ForkedStates,
  type ForkValues,
  forkCreditSettings,
} from './fork-credit.js';

/** Options shared by every policy-gradient trainer. */
export interface PolicyGradientTrainerOptions {
  /** The policy to train: the embedded `LinearSoftmaxPolicy`, an LLM policy, any `TrainablePolicy`. */
  policy: TrainablePolicy;
  /** Creates one environment instance (real or synthetic); reused across iterations. */
  environmentFactory: () => Environment | Promise<Environment>;
  /** The training tasks. */
  tasks: readonly Task[];
  /** The only source of randomness: task sampling, episode sampling, mini-batch order. */
  random: SeededRandom;
  /** Candidate actions where observations do not list them (`DomainAdapter.candidateActions`). */
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[];
  /** Steps after which an episode is cut off. */
  maxSteps: number;
  /** Environment instances stepping at once. Default 8. */
  concurrency?: number;
  /** Tasks sampled (without replacement) per iteration. Default: all tasks. */
  tasksPerIteration?: number;
  /** Rollouts per task per iteration (the group size). Default 8 for GRPO, 1 for PPO. */
  rolloutsPerTask?: number;
  /** Passes over each iteration's steps. Default 1. */
  epochs?: number;
  /** Steps per gradient step. Default: all of the iteration's steps in one batch. */
  miniBatchSize?: number;
  /** Clip ranges, dual clip, KL and entropy coefficients. */
  loss?: PpoLossOptions;
  /** Clip the gradient's global L2 norm to this. Default 1. */
  maxGradNorm?: number;
  /** Overrides the policy optimiser's learning rate. */
  learningRate?: number;
  /**
   * The frozen reference of the KL term. Default: a snapshot of the policy taken at the first
   * iteration, when `loss.klCoefficient > 0`.
   */
  referencePolicy?: TrainablePolicy;
  /**
   * How a step's advantage is credited. `episode` (default): from its episode's return (GRPO:
   * against its group; PPO: GAE over the critic). `fork`: its own, from forked continuations:
   * the environment forks at chosen states of each episode (`forks`), the policy plays on from
   * each, and a step's advantage is its return-to-go against its state's Monte-Carlo value.
   * Needs environments that can fork (`SyntheticEnvironment`; a real one throws a
   * `ConfigError`).
   */
  credit?: 'episode' | 'fork';
  /** With `credit: 'fork'`: continuations per state and which states fork. */
  forks?: ForkCreditOptions;
}

/** What one training iteration ({@link PolicyGradientTrainer.step}) did. */
export interface TrainerStep {
  /** Its figures. */
  metrics: UpdateMetrics;
  /** Every rollout it collected, budget-cut ones included (what the replay buffer receives). */
  rollouts: readonly Rollout[];
  /**
   * The rollouts that carried a learning signal, with their advantages (what the exporters
   * write: `exportTrl(file, step.scored)`).
   */
  scored: readonly ScoredRollout[];
}

/** Figures of one training iteration. */
export interface UpdateMetrics {
  /** 1-based iteration number. */
  iteration: number;
  episodes: number;
  steps: number;
  /** Mean episode reward (sum of step rewards) of the iteration's rollouts. */
  meanReward: number;
  /** Share of the iteration's finished rollouts that succeeded (budget-cut episodes left out). */
  successRate: number;
  /** Episodes a limit cut off (step cap or budget). */
  truncatedEpisodes: number;
  /** Episodes the sim-to-real budget cut mid-way: counted in neither success nor groups. */
  budgetCutEpisodes: number;
  meanEpisodeLength: number;
  /** Mean over all mini-batch evaluations of the total loss, and its parts. */
  loss: number;
  policyLoss: number;
  /** Mean k3 estimate of KL(pi || ref) (0 when there is no KL term). */
  kl: number;
  /** Mean policy entropy at the visited states. */
  entropy: number;
  /** Share of step evaluations where the clip was active. */
  clipFraction: number;
  /** Mean global gradient norm before clipping, over the iteration's gradient steps. */
  gradNorm: number;
  /** Mean absolute advantage of the iteration's steps. */
  meanAbsAdvantage: number;
  /** Mean |log pi_behaviour - log pi_theta| before the update (0 for the embedded policy). */
  behaviourMismatch: number;
  /** Mean squared error of the value function (PPO only). */
  valueLoss?: number;
  /** With fork credit: synthetic steps the forked continuations took, on top of `steps`. */
  forkSteps?: number;
  /** With fork credit: states forked (each played on `forks.continuations` times). */
  forkStates?: number;
  /** Seconds spent collecting rollouts, and updating. */
  rolloutSeconds: number;
  updateSeconds: number;
}

/** Options of one training iteration. */
export interface TrainerStepOptions {
  /** This iteration's tasks (each played `rolloutsPerTask` times). Default: sampled from the trainer's tasks. */
  tasks?: readonly Task[];
  signal?: AbortSignal;
}

/** One step of an iteration's batch, with where it came from. */
export interface TrainingSample {
  rolloutIndex: number;
  stepIndex: number;
  sample: PolicySample;
}

/** An iteration's rollouts with the advantages of their steps, as the exporters take them. */
export interface ScoredRollout {
  rollout: Rollout;
  /** Advantage of each step. */
  advantages: number[];
  /** Return targets of each step, where the estimator has them (GAE). */
  returns?: number[];
  /** log pi_behaviour of each step: what the acting policy reported. */
  behaviourLogprobs?: number[];
  /** log pi_ref of each step, when there is a KL reference. */
  referenceLogprobs?: number[];
}

/**
 * V(s_t) of every step of each rollout handed to the estimator (same order), from forked
 * continuations (`credit: 'fork'`).
 */
export type StepValues = readonly (readonly number[])[];

/** What an advantage estimator returns for an iteration's steps (in batch order). */
export interface AdvantageEstimate {
  advantages: number[];
  returns?: number[];
}

function positiveInteger(value: number | undefined, fallback: number, field: string): number {
  const resolved = value ?? fallback;
  if (!Number.isInteger(resolved) || resolved < 1) {
    throw new ConfigError(`${field} must be a positive integer, got ${resolved}.`, { field });
  }
  return resolved;
}

/** Flattens rollouts into per-step policy samples, in rollout then step order. */
export function rolloutSamples(rollouts: readonly Rollout[]): TrainingSample[] {
  const samples: TrainingSample[] = [];
  rollouts.forEach((rollout, rolloutIndex) => {
    const previousActions: string[] = [];
    const previousObservations: string[] = [];
    rollout.steps.forEach((step, stepIndex) => {
      samples.push({
        rolloutIndex,
        stepIndex,
        sample: {
          task: rollout.task,
          observation: step.observation,
          previousActions: [...previousActions],
          previousObservations: [...previousObservations],
          candidates: step.candidates,
          action: step.action,
          ...(step.policyInfo ? { decisionInfo: step.policyInfo } : {}),
        },
      });
      previousActions.push(step.action);
      previousObservations.push(step.observation.text);
    });
  });
  return samples;
}

/** The shared rollout-and-update loop; subclasses supply the advantage estimator. */
export abstract class PolicyGradientTrainer {
  readonly policy: TrainablePolicy;
  private reference: TrainablePolicy | undefined;
  protected readonly random: SeededRandom;
  protected readonly lossConfig: PpoLossConfig;
  private readonly collector: RolloutCollector;
  private readonly tasks: readonly Task[];
  private readonly tasksPerIteration: number;
  private readonly rolloutsPerTask: number;
  private readonly epochs: number;
  private readonly miniBatchSize: number | undefined;
  private readonly maxGradNorm: number | undefined;
  private readonly learningRate: number | undefined;
  private readonly forkSettings: ForkCreditSettings | undefined;
  private readonly maxSteps: number;
  private readonly concurrency: number;
  private readonly candidateActions: PolicyGradientTrainerOptions['candidateActions'];
  private iterations = 0;

  protected constructor(options: PolicyGradientTrainerOptions, defaultRolloutsPerTask: number) {
    if (options.tasks.length === 0)
      throw new ConfigError('tasks must not be empty.', { field: 'tasks' });
    this.policy = options.policy;
    this.random = options.random;
    this.tasks = options.tasks;
    this.lossConfig = resolvePpoLossOptions(options.loss);
    this.tasksPerIteration = Math.min(
      positiveInteger(options.tasksPerIteration, options.tasks.length, 'tasksPerIteration'),
      options.tasks.length,
    );
    this.rolloutsPerTask = positiveInteger(
      options.rolloutsPerTask,
      defaultRolloutsPerTask,
      'rolloutsPerTask',
    );
    this.epochs = positiveInteger(options.epochs, 1, 'epochs');
    this.miniBatchSize =
      options.miniBatchSize === undefined
        ? undefined
        : positiveInteger(options.miniBatchSize, 1, 'miniBatchSize');
    this.maxGradNorm = options.maxGradNorm ?? 1;
    this.learningRate = options.learningRate;
    this.reference = options.referencePolicy;
    const credit = options.credit ?? 'episode';
    if (credit !== 'episode' && credit !== 'fork') {
      throw new ConfigError(`credit must be 'episode' or 'fork', got ${String(credit)}.`, {
        field: 'credit',
      });
    }
    this.forkSettings = credit === 'fork' ? forkCreditSettings(options.forks) : undefined;
    this.maxSteps = options.maxSteps;
    this.concurrency = options.concurrency ?? 8;
    this.candidateActions = options.candidateActions;
    this.collector = new RolloutCollector({
      environmentFactory: options.environmentFactory,
      maxSteps: options.maxSteps,
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      ...(options.candidateActions ? { candidateActions: options.candidateActions } : {}),
    });
  }

  /** The frozen KL reference, once there is one. */
  get referencePolicy(): TrainablePolicy | undefined {
    return this.reference;
  }

  /** Iterations completed. */
  get iteration(): number {
    return this.iterations;
  }

  /**
   * The rollouts that carry a learning signal. Default: every rollout but those the
   * sim-to-real budget cut mid-way (incomplete: neither success nor failure).
   */
  protected rolloutsForUpdate(rollouts: readonly Rollout[]): Rollout[] {
    return rollouts.filter((rollout) => !rollout.budgetExhausted);
  }

  /**
   * Scores the steps of `rollouts` (batch order: rollout, then step); with fork credit,
   * `values` holds V(s_t) of each of their steps.
   */
  protected abstract estimateAdvantages(
    rollouts: readonly Rollout[],
    samples: readonly TrainingSample[],
    values?: StepValues,
  ): AdvantageEstimate;

  /** The discount of the returns fork credit compares (1: GRPO's undiscounted reward). */
  protected creditDiscount(): number {
    return 1;
  }

  /** Fits auxiliary models (the value function) after the policy update; returns extra metrics. */
  protected afterPolicyUpdate(
    _samples: readonly TrainingSample[],
    _estimate: AdvantageEstimate,
  ): Partial<UpdateMetrics> {
    return {};
  }

  /**
   * One iteration: collect rollouts, estimate advantages, update the policy. `options.tasks`
   * overrides the iteration's batch (the DreamGym loop passes the curriculum's batch);
   * otherwise `tasksPerIteration` tasks are drawn from the trainer's tasks.
   */
  async step(options: TrainerStepOptions = {}): Promise<TrainerStep> {
    const { signal } = options;
    if (this.lossConfig.klCoefficient > 0 && !this.reference) {
      this.reference = await this.policy.snapshot();
    }
    const rolloutStarted = performance.now();
    const tasks =
      options.tasks ?? this.random.shuffle([...this.tasks]).slice(0, this.tasksPerIteration);
    if (tasks.length === 0)
      throw new ConfigError('step() needs at least one task.', { field: 'tasks' });
    const forked = this.forkSettings ? new ForkedStates(this.forkSettings) : undefined;
    let forks: ForkValues | undefined;
    let collected: Rollout[];
    try {
      collected = await this.collector.collect({
        policy: this.policy,
        tasks,
        rolloutsPerTask: this.rolloutsPerTask,
        random: this.random,
        ...(signal ? { signal } : {}),
        ...(forked ? { onState: forked.onState } : {}),
      });
      forks = await forked?.values(collected, {
        policy: this.policy,
        random: this.random,
        maxSteps: this.maxSteps,
        concurrency: this.concurrency,
        gamma: this.creditDiscount(),
        ...(this.candidateActions ? { candidateActions: this.candidateActions } : {}),
        ...(signal ? { signal } : {}),
      });
    } finally {
      await forked?.close();
    }
    const updateStarted = performance.now();
    const rollouts = this.rolloutsForUpdate(collected);
    const samples = rolloutSamples(rollouts);
    const forkedValues = forks
      ? new Map(collected.map((rollout, index) => [rollout, forks.values[index]!]))
      : undefined;
    const estimate = this.estimateAdvantages(
      rollouts,
      samples,
      forkedValues && rollouts.map((rollout) => forkedValues.get(rollout)!),
    );
    const behaviourLogprobs = await this.behaviourLogprobs(rollouts, samples, signal);
    const referenceLogprobs = this.reference
      ? await this.reference.logprobs(
          samples.map((entry) => entry.sample),
          signal,
        )
      : undefined;
    const update: PolicyUpdateMetrics = await this.policy.update(
      {
        samples: samples.map((entry) => entry.sample),
        advantages: estimate.advantages,
        behaviourLogprobs,
        ...(referenceLogprobs ? { referenceLogprobs } : {}),
      },
      {
        epochs: this.epochs,
        ...(this.miniBatchSize === undefined ? {} : { miniBatchSize: this.miniBatchSize }),
        loss: this.lossConfig,
        ...(this.maxGradNorm === undefined ? {} : { maxGradNorm: this.maxGradNorm }),
        ...(this.learningRate === undefined ? {} : { learningRate: this.learningRate }),
        random: this.random,
        ...(signal ? { signal } : {}),
      },
    );
    const extra = this.afterPolicyUpdate(samples, estimate);
    const updateEnded = performance.now();

    // Samples are laid out rollout after rollout, so each rollout's steps are one slice.
    let offset = 0;
    const scored = rollouts.map((rollout): ScoredRollout => {
      const end = offset + rollout.steps.length;
      const slice = <T>(values: readonly T[]) => values.slice(offset, end);
      const entry: ScoredRollout = {
        rollout,
        advantages: slice(estimate.advantages),
        ...(estimate.returns ? { returns: slice(estimate.returns) } : {}),
        behaviourLogprobs: slice(behaviourLogprobs),
        ...(referenceLogprobs ? { referenceLogprobs: slice(referenceLogprobs) } : {}),
      };
      offset = end;
      return entry;
    });
    this.iterations += 1;
    const finished = collected.filter((rollout) => !rollout.budgetExhausted);
    const steps = samples.length;
    const metrics: UpdateMetrics = {
      iteration: this.iterations,
      episodes: collected.length,
      steps: collected.reduce((total, rollout) => total + rollout.steps.length, 0),
      meanReward: mean(finished.map((rollout) => rollout.totalReward)),
      successRate: mean(finished.map((rollout) => (rollout.success ? 1 : 0))),
      truncatedEpisodes: collected.filter((rollout) => rollout.truncated).length,
      budgetCutEpisodes: collected.length - finished.length,
      meanEpisodeLength: mean(collected.map((rollout) => rollout.steps.length)),
      loss: update.loss,
      policyLoss: update.policyLoss,
      kl: update.kl,
      entropy: update.entropy,
      clipFraction: update.clipFraction,
      gradNorm: update.gradNorm,
      meanAbsAdvantage: steps === 0 ? 0 : mean(estimate.advantages.map(Math.abs)),
      behaviourMismatch: update.behaviourMismatch,
      rolloutSeconds: (updateStarted - rolloutStarted) / 1000,
      updateSeconds: (updateEnded - updateStarted) / 1000,
      ...(forks ? { forkSteps: forks.steps, forkStates: forks.states } : {}),
      ...extra,
    };
    return { metrics, rollouts: collected, scored };
  }

  /** Runs `iterations` iterations, calling `onMetrics` after each; returns all metrics. */
  async train(
    iterations: number,
    onMetrics?: (metrics: UpdateMetrics) => void | Promise<void>,
    signal?: AbortSignal,
  ): Promise<UpdateMetrics[]> {
    const all: UpdateMetrics[] = [];
    for (let index = 0; index < iterations; index += 1) {
      const { metrics } = await this.step(signal ? { signal } : {});
      all.push(metrics);
      await onMetrics?.(metrics);
    }
    return all;
  }

  /** Closes the environment instances. */
  async close(): Promise<void> {
    await this.collector.close();
  }

  /**
   * The log-probability each step's action had when it was taken, as the acting policy
   * reported it; where it reported none, the policy's own before this update.
   */
  private async behaviourLogprobs(
    rollouts: readonly Rollout[],
    samples: readonly TrainingSample[],
    signal: AbortSignal | undefined,
  ): Promise<number[]> {
    const reported = samples.map(
      (entry) => rollouts[entry.rolloutIndex]!.steps[entry.stepIndex]!.logprob,
    );
    const missing = samples.filter((_, index) => reported[index] === undefined);
    if (missing.length === 0) return reported as number[];
    const computed = await this.policy.logprobs(
      missing.map((entry) => entry.sample),
      signal,
    );
    let next = 0;
    return reported.map((value) => value ?? computed[next++]!);
  }
}

function mean(values: readonly number[]): number {
  return values.length === 0
    ? 0
    : values.reduce((total, value) => total + value, 0) / values.length;
}
