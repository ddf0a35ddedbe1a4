/**
 * The DreamGym training loop (paper §4): each iteration samples tasks from the curriculum
 * (seed tasks plus generated ones, at most a `lambda` share), collects rollouts in the
 * synthetic environment (experience model + replay buffer), updates the policy with GRPO or
 * PPO, adds the synthetic transitions to the replay buffer, and grows the curriculum from
 * the tasks whose rewards varied most. Every `evaluation.every` iterations it evaluates on
 * held-out tasks. Then sim-to-real continues in the real environment until a budget of
 * real transitions is spent.
 *
 * Runs are resumable: each iteration ends with an atomic checkpoint (policy, optimiser,
 * value function, curriculum, RNG state, counters, and how much of the experience log and
 * metrics belong to it). `run({ resume: true })` after a crash continues exactly as an
 * uninterrupted run of the same seed would.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { DomainAdapter } from '../adapter.js';
import { Curriculum, CurriculumConfigSchema } from '../curriculum/curriculum.js';
import { MutationTaskGenerator } from '../curriculum/mutation-task-generator.js';
import type { TaskGenerator } from '../curriculum/task-generator.js';
import { TaskPool } from '../curriculum/task-pool.js';
import type { TaskRolloutGroup } from '../curriculum/task-value.js';
import { CheckpointError, ConfigError } from '../errors.js';
import { evaluatePolicy } from '../eval/policy-evaluation.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { SyntheticEnvironment } from '../experience/synthetic-environment.js';
import type { Environment } from '../mdp/environment.js';
import { formatFieldPath, readJsonl } from '../mdp/jsonl.js';
import { type Task, type Transition, TransitionSchema } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import {
  LinearSoftmaxPolicy,
  type LinearSoftmaxPolicyHeader,
} from '../policy/linear-softmax-policy.js';
import { type RandomState, SeededRandom } from '../random/seeded-random.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import { CheckpointStore, type LoadedCheckpoint, writeFileAtomic } from './checkpoint-store.js';
import { EnvironmentPool } from './environment-pool.js';
import { GrpoTrainer } from './grpo-trainer.js';
import { LinearValueFunction, type LinearValueFunctionState } from './linear-value-function.js';
import {
  type EvaluationMetrics,
  type IterationMetrics,
  IterationMetricsSchema,
} from './metrics.js';
import type { PolicyGradientTrainer, UpdateMetrics } from './policy-gradient-trainer.js';
import { PpoTrainer } from './ppo-trainer.js';
import { type Rollout, rolloutToTrajectory } from './rollout.js';
import { BudgetedEnvironment, RealTransitionBudget } from './sim-to-real.js';

const PpoLossConfigSchema = z
  .object({
    clipLow: z.number().positive().optional(),
    clipHigh: z.number().positive().optional(),
    dualClip: z.number().gt(1).optional(),
    klCoefficient: z.number().nonnegative().optional(),
    entropyCoefficient: z.number().nonnegative().optional(),
  })
  .default({});

/** The loop's configuration; `parseDreamGymConfig` validates it and fills defaults. */
export const DreamGymConfigSchema = z.object({
  /** Seeds every random choice of the run. */
  seed: z.number().int().default(0),
  /** Iterations of the synthetic phase. */
  iterations: z.number().int().nonnegative().default(20),
  /** Tasks per iteration (seed + generated, at most `curriculum.lambda` generated). */
  tasksPerIteration: z.number().int().positive().default(16),
  /** Rollouts per task (the group size n of GRPO and of the task value). */
  rolloutsPerTask: z.number().int().positive().default(4),
  /** Steps after which an episode is cut off. */
  maxSteps: z.number().int().positive().default(30),
  /** Synthetic environments stepping at once. */
  concurrency: z.number().int().positive().default(8),
  /** Real environments stepping at once (sim-to-real and real evaluation): real engines are costly. */
  realConcurrency: z.number().int().positive().default(2),
  /** The RL algorithm. `dr-grpo` is GRPO without the std normalisation. */
  algorithm: z.enum(['grpo', 'dr-grpo', 'ppo']).default('grpo'),
  trainer: z
    .object({
      epochs: z.number().int().positive().default(1),
      miniBatchSize: z.number().int().positive().optional(),
      learningRate: z.number().positive().optional(),
      maxGradNorm: z.number().positive().default(1),
      loss: PpoLossConfigSchema,
      /** PPO: discount and GAE lambda. */
      gamma: z.number().min(0).max(1).default(0.99),
      gaeLambda: z.number().min(0).max(1).default(0.95),
    })
    .default({ epochs: 1, maxGradNorm: 1, loss: {}, gamma: 0.99, gaeLambda: 0.95 }),
  /** The embedded policy's size and optimiser. */
  policy: z
    .object({
      hashBits: z.number().int().min(8).max(26).default(18),
      historyWindow: z.number().int().nonnegative().default(2),
      learningRate: z.number().positive().default(0.05),
    })
    .default({ hashBits: 18, historyWindow: 2, learningRate: 0.05 }),
  /** Curriculum task generation (`enabled: false` is the "no curriculum" ablation). */
  curriculum: CurriculumConfigSchema.default(CurriculumConfigSchema.parse({})),
  /** Replay retrieval for the experience model (`enabled: false` is the "no replay" ablation). */
  retrieval: z
    .object({ enabled: z.boolean().default(true), k: z.number().int().positive().default(4) })
    .default({ enabled: true, k: 4 }),
  /** Interaction history given to the experience model (`enabled: false`: "no history"). */
  history: z.object({ enabled: z.boolean().default(true) }).default({ enabled: true }),
  /** Add each iteration's synthetic transitions to the replay buffer. */
  replayWriteBack: z.boolean().default(true),
  /** Reward added when the policy's action is outside the grammar (0 or negative). */
  invalidActionPenalty: z.number().max(0).default(0),
  evaluation: z
    .object({
      /** Evaluate every K iterations, and always after the last one; 0: only after the last. */
      every: z.number().int().nonnegative().default(5),
      /** Where to evaluate; empty turns evaluation off. */
      environments: z.array(z.enum(['synthetic', 'real'])).default(['synthetic']),
      episodesPerTask: z.number().int().positive().default(1),
      greedy: z.boolean().default(true),
    })
    .default({ every: 5, environments: ['synthetic'], episodesPerTask: 1, greedy: true }),
  simToReal: z
    .object({
      /** Real transitions to spend after the synthetic phase; 0 skips sim-to-real. */
      realTransitionBudget: z.number().int().nonnegative().default(0),
      tasksPerIteration: z.number().int().positive().default(8),
      rolloutsPerTask: z.number().int().positive().default(4),
      /** Add real transitions to the replay buffer (source `real`). */
      addToBuffer: z.boolean().default(true),
    })
    .default({
      realTransitionBudget: 0,
      tasksPerIteration: 8,
      rolloutsPerTask: 4,
      addToBuffer: true,
    }),
  /** Write a checkpoint every this many iterations (1: after each). */
  checkpointEvery: z.number().int().positive().default(1),
});
export type DreamGymConfig = z.infer<typeof DreamGymConfigSchema>;
export type DreamGymConfigInput = z.input<typeof DreamGymConfigSchema>;

/** Validates a configuration; a `ConfigError` names the field and the reason. */
export function parseDreamGymConfig(input: unknown): DreamGymConfig {
  const result = DreamGymConfigSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = formatFieldPath(issue.path);
  throw new ConfigError(`Invalid DreamGym config: \`${field}\`: ${issue.message}`, {
    field,
    cause: result.error,
  });
}

/** What the loop trains with. */
export interface DreamGymComponents {
  adapter: DomainAdapter;
  /** M_exp; the embedded default is `RetrievalExperienceModel`. */
  experienceModel: ExperienceModel;
  /**
   * The replay buffer, holding the offline (seed) transitions and nothing else: the loop
   * adds the run's experience, and on resume re-adds what the checkpoint covers.
   */
  replayBuffer: ReplayBuffer;
  /** Seed tasks; synthetic episodes start from `initialObservation` (or the model's `initialState`). */
  seedTasks: readonly Task[];
  /** Held-out tasks for evaluation. */
  evaluationTasks?: readonly Task[];
  /** Writes new tasks; default `MutationTaskGenerator` over the adapter's `mutateTask`. */
  taskGenerator?: TaskGenerator;
  /** The real environment, for sim-to-real and real evaluation. */
  realEnvironment?: () => Environment | Promise<Environment>;
  /** A policy to start from instead of a fresh `LinearSoftmaxPolicy` (ignored on resume). */
  initialPolicy?: LinearSoftmaxPolicy;
  /** Called after every iteration (progress bars, logs). */
  onIteration?: (metrics: IterationMetrics, progress: { done: number; total: number }) => void;
  /** Receives log lines. */
  log?: (message: string) => void;
}

/** What a finished run returns. */
export interface DreamGymResult {
  policy: LinearSoftmaxPolicy;
  metrics: IterationMetrics[];
  /** Evaluations after the last iteration. */
  finalEvaluations: EvaluationMetrics[];
}

const CountersSchema = z.object({
  /** Iterations finished (synthetic and real). */
  iteration: z.number().int().nonnegative(),
  phase: z.enum(['synthetic', 'real']),
  realTransitions: z.number().int().nonnegative(),
  syntheticTransitions: z.number().int().nonnegative(),
  /** Lines of `experience.jsonl` and `metrics.jsonl` that belong to this checkpoint. */
  experienceLines: z.number().int().nonnegative(),
  metricsLines: z.number().int().nonnegative(),
  random: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  configHash: z.string(),
});
type Counters = z.infer<typeof CountersSchema>;

/** Everything one `run` works with. */
interface RunState {
  counters: Counters;
  random: SeededRandom;
  policy: LinearSoftmaxPolicy;
  valueFunction: LinearValueFunction | undefined;
  /** The frozen KL reference (the policy when training started), when the loss has a KL term. */
  reference: LinearSoftmaxPolicy | undefined;
  curriculum: Curriculum;
  metrics: IterationMetrics[];
  synthetic: EnvironmentPool;
  real: EnvironmentPool | undefined;
  /** Planned iterations, for progress. */
  totalIterations: number;
}

/** One line of `experience.jsonl`: a transition the run added to the buffer, with its iteration. */
const ExperienceLineSchema = z.object({
  iteration: z.number().int().nonnegative(),
  transition: TransitionSchema,
});

function stableHash(value: unknown): string {
  let hash = 0x811c9dc5;
  const text = JSON.stringify(value);
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

function bytesOf(array: Float32Array): Uint8Array {
  return new Uint8Array(array.buffer.slice(array.byteOffset, array.byteOffset + array.byteLength));
}

function floatsOf(bytes: Uint8Array): Float32Array {
  return new Float32Array(Uint8Array.from(bytes).buffer);
}

function policyFromCheckpoint(checkpoint: LoadedCheckpoint): LinearSoftmaxPolicy {
  return LinearSoftmaxPolicy.fromState({
    header: checkpoint.json<LinearSoftmaxPolicyHeader>('policy-header'),
    weights: floatsOf(checkpoint.bytes('policy-weights')),
    adamM: floatsOf(checkpoint.bytes('policy-adam-m')),
    adamV: floatsOf(checkpoint.bytes('policy-adam-v')),
  });
}

/** Keeps the first `lines` lines of a text file (drops what a crashed run wrote after its checkpoint). */
async function truncateLines(file: string, lines: number): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    if (lines === 0) return;
    throw new CheckpointError(
      `${file} is missing but the checkpoint covers ${lines} lines of it.`,
      { path: file },
    );
  }
  const kept = text.split('\n').slice(0, lines);
  if (kept.length < lines || kept.some((line) => line.trim() === '')) {
    throw new CheckpointError(
      `${file} holds fewer lines than the checkpoint covers (${lines}); the run folder is damaged.`,
      { path: file },
    );
  }
  await writeFileAtomic(file, lines === 0 ? '' : `${kept.join('\n')}\n`);
}

function rewardGroups(rollouts: readonly Rollout[]): TaskRolloutGroup[] {
  // The task value uses the outcome (success) reward, not policy penalties.
  const groups = new Map<string, number[]>();
  for (const rollout of rollouts) {
    const rewards = groups.get(rollout.task.id) ?? [];
    rewards.push(rollout.success ? 1 : 0);
    groups.set(rollout.task.id, rewards);
  }
  return [...groups].map(([taskId, rewards]) => ({ taskId, rewards }));
}

/** The DreamGym training loop. */
export class DreamGymLoop {
  readonly config: DreamGymConfig;
  private readonly checkpoints: CheckpointStore;
  private readonly log: (message: string) => void;

  constructor(
    config: DreamGymConfigInput | DreamGymConfig,
    private readonly components: DreamGymComponents,
    /** Folder of the run: `config.json`, `metrics.jsonl`, `experience.jsonl`, `checkpoints/`. */
    readonly runDirectory: string,
  ) {
    this.config = parseDreamGymConfig(config);
    if (components.seedTasks.length === 0) {
      throw new ConfigError('The DreamGym loop needs at least one seed task.', {
        field: 'seedTasks',
      });
    }
    if (this.config.simToReal.realTransitionBudget > 0 && !components.realEnvironment) {
      throw new ConfigError(
        'simToReal.realTransitionBudget > 0 needs a real environment (components.realEnvironment).',
        { field: 'simToReal.realTransitionBudget' },
      );
    }
    if (this.config.evaluation.environments.includes('real') && !components.realEnvironment) {
      throw new ConfigError(
        'evaluation.environments includes "real" but no real environment is given.',
        {
          field: 'evaluation.environments',
        },
      );
    }
    this.checkpoints = new CheckpointStore(join(runDirectory, 'checkpoints'));
    this.log = components.log ?? (() => {});
  }

  /** Name of the latest checkpoint in a run folder, or undefined for a new run. */
  static latestCheckpoint(runDirectory: string): Promise<string | undefined> {
    return new CheckpointStore(join(runDirectory, 'checkpoints')).latestName();
  }

  private get files() {
    return {
      config: join(this.runDirectory, 'config.json'),
      metrics: join(this.runDirectory, 'metrics.jsonl'),
      experience: join(this.runDirectory, 'experience.jsonl'),
    };
  }

  /** Total iterations the run will make: the synthetic ones, then at least one real one when there is a budget. */
  private plannedIterations(): number {
    const { simToReal } = this.config;
    const perRealIteration =
      simToReal.tasksPerIteration * simToReal.rolloutsPerTask * this.config.maxSteps;
    const realIterations =
      simToReal.realTransitionBudget > 0
        ? Math.ceil(simToReal.realTransitionBudget / perRealIteration)
        : 0;
    return this.config.iterations + realIterations;
  }

  /**
   * Trains. With `resume`, continues from the run folder's latest checkpoint (a fresh run
   * when there is none); without it, the run folder must not hold a checkpoint yet.
   */
  async run(options: { resume?: boolean; signal?: AbortSignal } = {}): Promise<DreamGymResult> {
    const { config, components } = this;
    await mkdir(this.runDirectory, { recursive: true });
    const configHash = stableHash(config);
    const checkpoint = await this.checkpoints.load();
    if (checkpoint && !options.resume) {
      throw new CheckpointError(
        `${this.runDirectory} already holds a run (checkpoint ${checkpoint.name}). Pass --resume to continue it, or choose another --run-dir.`,
        { path: this.runDirectory },
      );
    }

    let counters: Counters;
    let policy: LinearSoftmaxPolicy;
    let valueFunction: LinearValueFunction | undefined;
    let reference: LinearSoftmaxPolicy | undefined;
    let curriculum: Curriculum;
    const generator =
      components.taskGenerator ?? new MutationTaskGenerator({ adapter: components.adapter });
    const metrics: IterationMetrics[] = [];

    if (checkpoint) {
      counters = CountersSchema.parse(checkpoint.json('counters'));
      if (counters.configHash !== configHash) {
        throw new CheckpointError(
          `The checkpoint in ${this.runDirectory} was written with a different configuration. Resume with the run's config.json, or start a new --run-dir.`,
          { path: this.runDirectory },
        );
      }
      policy = policyFromCheckpoint(checkpoint);
      if (checkpoint.parts().includes('value-header')) {
        const valueHeader =
          checkpoint.json<Omit<LinearValueFunctionState, 'weights' | 'adamM' | 'adamV'>>(
            'value-header',
          );
        valueFunction = LinearValueFunction.fromState({
          ...valueHeader,
          weights: floatsOf(checkpoint.bytes('value-weights')),
          adamM: floatsOf(checkpoint.bytes('value-adam-m')),
          adamV: floatsOf(checkpoint.bytes('value-adam-v')),
        });
      }
      if (checkpoint.parts().includes('reference-weights')) {
        reference = policy.snapshot();
        reference.weights.set(floatsOf(checkpoint.bytes('reference-weights')));
      }
      curriculum = Curriculum.fromJSON(checkpoint.json('curriculum'), {
        generator,
        config: config.curriculum,
        source: `checkpoint ${checkpoint.name}`,
      });
      await truncateLines(this.files.metrics, counters.metricsLines);
      await truncateLines(this.files.experience, counters.experienceLines);
      for await (const record of readJsonl(this.files.metrics, IterationMetricsSchema))
        metrics.push(record);
      await this.replayExperience();
      this.log(
        `resumed ${this.runDirectory} from checkpoint ${checkpoint.name} (iteration ${counters.iteration})`,
      );
    } else {
      const random = new SeededRandom(config.seed);
      policy =
        components.initialPolicy ??
        new LinearSoftmaxPolicy({
          random: random.fork('policy'),
          hashBits: config.policy.hashBits,
          historyWindow: config.policy.historyWindow,
          optimizer: { learningRate: config.policy.learningRate },
        });
      valueFunction = config.algorithm === 'ppo' ? new LinearValueFunction() : undefined;
      reference = (config.trainer.loss.klCoefficient ?? 0) > 0 ? policy.snapshot() : undefined;
      curriculum = new Curriculum({
        pool: new TaskPool(components.seedTasks),
        generator,
        config: config.curriculum,
      });
      counters = {
        iteration: 0,
        phase: 'synthetic',
        realTransitions: 0,
        syntheticTransitions: 0,
        experienceLines: 0,
        metricsLines: 0,
        random: random.getState(),
        configHash,
      };
      await writeFileAtomic(this.files.config, `${JSON.stringify(config, null, 2)}\n`);
      await writeFile(this.files.metrics, '');
      await writeFile(this.files.experience, '');
    }

    const real = components.realEnvironment
      ? new EnvironmentPool(components.realEnvironment)
      : undefined;
    const state: RunState = {
      counters,
      random: SeededRandom.fromState(counters.random as RandomState),
      policy,
      valueFunction,
      reference,
      curriculum,
      metrics,
      synthetic: new EnvironmentPool(() => this.createSyntheticEnvironment()),
      real,
      totalIterations: this.plannedIterations(),
    };
    const budget = new RealTransitionBudget(
      config.simToReal.realTransitionBudget,
      counters.realTransitions,
    );
    const signal = options.signal ? { signal: options.signal } : {};
    try {
      const synthetic = this.createTrainer(state, 'synthetic', () => state.synthetic.lease());
      while (counters.iteration < config.iterations) {
        options.signal?.throwIfAborted();
        const started = performance.now();
        const batch = curriculum.sampleBatch(config.tasksPerIteration, state.random);
        const update = await synthetic.step({ tasks: batch, ...signal });
        const rollouts = synthetic.lastRollouts.map((scored) => scored.rollout);
        counters.syntheticTransitions += update.steps;
        if (config.replayWriteBack) await this.addExperience(rollouts, 'synthetic', counters);
        curriculum.observe(rewardGroups(rollouts), counters.iteration);
        const growth = await curriculum.grow(counters.iteration, state.random, signal);
        if (growth.added.length > 0)
          this.log(`iteration ${counters.iteration}: ${growth.added.length} new tasks`);
        const isLast =
          counters.iteration + 1 === config.iterations &&
          config.simToReal.realTransitionBudget === 0;
        await this.finishIteration(state, { phase: 'synthetic', update, batch, isLast, started });
        if (
          counters.iteration % config.checkpointEvery === 0 ||
          counters.iteration === config.iterations
        ) {
          await this.saveCheckpoint(state);
        }
      }
      await synthetic.close();

      if (budget.remaining > 0) {
        const realTrainer = this.createTrainer(
          state,
          'real',
          async () => new BudgetedEnvironment(await real!.lease(), budget),
        );
        counters.phase = 'real';
        while (budget.remaining > 0) {
          options.signal?.throwIfAborted();
          const started = performance.now();
          const batch = state.random
            .shuffle([...components.seedTasks])
            .slice(0, config.simToReal.tasksPerIteration);
          const spentBefore = budget.spent;
          const update = await realTrainer.step({ tasks: batch, ...signal });
          counters.realTransitions = budget.spent;
          if (budget.spent === spentBefore) break;
          if (config.simToReal.addToBuffer) {
            const rollouts = realTrainer.lastRollouts.map((scored) => scored.rollout);
            await this.addExperience(rollouts, 'real', counters);
          }
          const isLast = budget.remaining === 0;
          await this.finishIteration(state, { phase: 'real', update, batch, isLast, started });
          await this.saveCheckpoint(state);
        }
        await realTrainer.close();
      }
    } finally {
      await state.synthetic.closeAll();
      await real?.closeAll();
    }
    const finalEvaluations = metrics.at(-1)?.evaluations ?? [];
    return { policy, metrics, finalEvaluations };
  }

  private createSyntheticEnvironment(): Environment {
    const { config, components } = this;
    return new SyntheticEnvironment({
      model: components.experienceModel,
      retriever: components.replayBuffer,
      adapter: components.adapter,
      k: config.retrieval.enabled ? config.retrieval.k : 0,
      useHistory: config.history.enabled,
      maxSteps: config.maxSteps,
      invalidActionPenalty: config.invalidActionPenalty,
      filter: { domain: components.adapter.name },
      writeBack: false,
    });
  }

  private createTrainer(
    state: RunState,
    phase: 'synthetic' | 'real',
    environmentFactory: () => Promise<Environment>,
  ): PolicyGradientTrainer {
    const { config, components } = this;
    const { policy, valueFunction, reference, random } = state;
    const common = {
      policy,
      environmentFactory,
      tasks: components.seedTasks,
      random,
      candidateActions: (
        observation: Parameters<DomainAdapter['candidateActions']>[0],
        history: Parameters<DomainAdapter['candidateActions']>[1],
      ) => components.adapter.candidateActions(observation, history),
      maxSteps: config.maxSteps,
      concurrency: phase === 'synthetic' ? config.concurrency : config.realConcurrency,
      rolloutsPerTask:
        phase === 'synthetic' ? config.rolloutsPerTask : config.simToReal.rolloutsPerTask,
      epochs: config.trainer.epochs,
      ...(config.trainer.miniBatchSize === undefined
        ? {}
        : { miniBatchSize: config.trainer.miniBatchSize }),
      ...(config.trainer.learningRate === undefined
        ? {}
        : { learningRate: config.trainer.learningRate }),
      maxGradNorm: config.trainer.maxGradNorm,
      loss: config.trainer.loss,
      ...(reference ? { referencePolicy: reference } : {}),
    };
    if (config.algorithm === 'ppo') {
      return new PpoTrainer({
        ...common,
        gamma: config.trainer.gamma,
        lambda: config.trainer.gaeLambda,
        ...(valueFunction ? { valueFunction } : {}),
      });
    }
    return new GrpoTrainer({
      ...common,
      estimator: config.algorithm === 'dr-grpo' ? 'dr-grpo' : 'grpo',
    });
  }

  /** Appends the rollouts' transitions to the experience log and the replay buffer, in rollout order. */
  private async addExperience(
    rollouts: readonly Rollout[],
    source: 'synthetic' | 'real',
    counters: Counters,
  ): Promise<void> {
    const transitions: Transition[] = rollouts.flatMap((rollout) =>
      trajectoryToTransitions(rolloutToTrajectory(rollout, source), {
        trajectoryId: `${source}:${counters.iteration}:${rollout.id}`,
      }).map((transition) => ({ ...transition, policyVersion: counters.iteration })),
    );
    if (transitions.length === 0) return;
    const lines = transitions.map((transition) =>
      JSON.stringify({ iteration: counters.iteration, transition }),
    );
    await writeFile(this.files.experience, `${lines.join('\n')}\n`, { flag: 'a' });
    counters.experienceLines += transitions.length;
    await this.components.replayBuffer.add(transitions);
  }

  /** Re-adds the experience log to a fresh buffer, one iteration's batch at a time (as first added). */
  private async replayExperience(): Promise<void> {
    let batch: Transition[] = [];
    let batchIteration: number | undefined;
    for await (const line of readJsonl(this.files.experience, ExperienceLineSchema)) {
      if (batchIteration !== undefined && line.iteration !== batchIteration) {
        await this.components.replayBuffer.add(batch);
        batch = [];
      }
      batchIteration = line.iteration;
      batch.push(line.transition);
    }
    if (batch.length > 0) await this.components.replayBuffer.add(batch);
  }

  private async evaluateIfDue(state: RunState, isLast: boolean): Promise<EvaluationMetrics[]> {
    const { config, components } = this;
    const { evaluation } = config;
    const tasks = components.evaluationTasks ?? [];
    if (tasks.length === 0 || evaluation.environments.length === 0) return [];
    const iterationNumber = state.counters.iteration + 1;
    if (!isLast && (evaluation.every === 0 || iterationNumber % evaluation.every !== 0)) return [];
    const results: EvaluationMetrics[] = [];
    for (const environment of evaluation.environments) {
      const pool = environment === 'real' ? state.real! : state.synthetic;
      const { metrics } = await evaluatePolicy({
        policy: state.policy,
        environmentFactory: () => pool.lease(),
        environment,
        tasks,
        episodesPerTask: evaluation.episodesPerTask,
        maxSteps: config.maxSteps,
        greedy: evaluation.greedy,
        concurrency: environment === 'real' ? config.realConcurrency : config.concurrency,
        random: state.random.fork(`evaluation:${iterationNumber}`),
        candidateActions: (observation, history) =>
          components.adapter.candidateActions(observation, history),
      });
      results.push(metrics);
    }
    return results;
  }

  /** Evaluates when due, records the iteration's metrics and advances the counters. */
  private async finishIteration(
    state: RunState,
    iteration: {
      phase: 'synthetic' | 'real';
      update: UpdateMetrics;
      batch: readonly Task[];
      isLast: boolean;
      started: number;
    },
  ): Promise<void> {
    const { counters, curriculum } = state;
    const { phase, update, batch, started } = iteration;
    const evaluations = await this.evaluateIfDue(state, iteration.isLast);
    const generatedInBatch = batch.filter((task) => task.origin === 'generated').length;
    const record = IterationMetricsSchema.parse({
      iteration: counters.iteration,
      phase,
      episodes: update.episodes,
      successRate: update.successRate,
      meanReward: update.meanReward,
      meanSteps: update.meanEpisodeLength,
      poolSize: curriculum.pool.size,
      generatedTasks: curriculum.pool.generatedTasks().length,
      generatedShare: batch.length === 0 ? 0 : generatedInBatch / batch.length,
      bufferSize: this.components.replayBuffer.size,
      realTransitions: counters.realTransitions,
      syntheticTransitions: counters.syntheticTransitions,
      update: {
        loss: update.loss,
        policyLoss: update.policyLoss,
        kl: update.kl,
        entropy: update.entropy,
        clipFraction: update.clipFraction,
        gradNorm: update.gradNorm,
        meanAbsAdvantage: update.meanAbsAdvantage,
        ...(update.valueLoss === undefined ? {} : { valueLoss: update.valueLoss }),
      },
      evaluations,
      seconds: (performance.now() - started) / 1000,
    });
    await writeFile(this.files.metrics, `${JSON.stringify(record)}\n`, { flag: 'a' });
    counters.metricsLines += 1;
    counters.iteration += 1;
    state.metrics.push(record);
    this.components.onIteration?.(record, {
      done: counters.iteration,
      total: state.totalIterations,
    });
  }

  private async saveCheckpoint(state: RunState): Promise<void> {
    const { counters, random, policy, valueFunction, reference, curriculum } = state;
    counters.random = random.getState();
    const policyState = policy.exportState();
    const parts: Record<string, unknown> = {
      counters,
      'policy-header': policyState.header,
      'policy-weights': bytesOf(policyState.weights),
      'policy-adam-m': bytesOf(policyState.adamM),
      'policy-adam-v': bytesOf(policyState.adamV),
      curriculum: curriculum.toJSON(),
    };
    if (reference) parts['reference-weights'] = bytesOf(reference.weights);
    if (valueFunction) {
      const { weights, adamM, adamV, ...header } = valueFunction.exportState();
      Object.assign(parts, {
        'value-header': header,
        'value-weights': bytesOf(weights),
        'value-adam-m': bytesOf(adamM),
        'value-adam-v': bytesOf(adamV),
      });
    }
    await this.checkpoints.save(`iteration-${String(counters.iteration).padStart(6, '0')}`, parts);
  }
}

/** The policy of a run's latest checkpoint (for `dreamgym eval`). */
export async function loadRunPolicy(
  runDirectory: string,
): Promise<{ policy: LinearSoftmaxPolicy; checkpoint: string }> {
  const checkpoint = await new CheckpointStore(join(runDirectory, 'checkpoints')).load();
  if (!checkpoint) {
    throw new CheckpointError(
      `${runDirectory} holds no checkpoint. Pass the --run-dir of a \`dreamgym train\` run that finished at least one iteration.`,
      { path: runDirectory },
    );
  }
  return { policy: policyFromCheckpoint(checkpoint), checkpoint: checkpoint.name };
}
