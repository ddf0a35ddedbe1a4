/**
 * The DreamGym training loop (paper §4): each iteration samples tasks from the curriculum
 * (seed tasks plus generated ones, at most a `lambda` share), collects rollouts in the
 * synthetic environment (experience model + replay buffer), updates the policy with GRPO or
 * PPO, adds the synthetic transitions to the replay buffer, and grows the curriculum from
 * the tasks whose rewards varied most. Every `evaluation.every` iterations it evaluates on
 * held-out tasks. Then sim-to-real continues in the real environment until a budget of
 * real transitions is spent.
 *
 * The policy is any `TrainablePolicy` (the embedded linear policy, an LLM policy whose
 * gradient step runs in a torch worker). Runs are resumable: each iteration ends with an
 * atomic checkpoint (policy and optimiser state, value function, KL reference, curriculum,
 * RNG state, counters, and how much of the experience log and metrics belong to it).
 * `run({ resume: true })` after a crash continues exactly as an uninterrupted run of the
 * same seed would.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { DomainAdapter } from '../adapter.js';
import { Curriculum } from '../curriculum/curriculum.js';
import { MutationTaskGenerator } from '../curriculum/mutation-task-generator.js';
import type { TaskGenerator } from '../curriculum/task-generator.js';
import { TaskPool } from '../curriculum/task-pool.js';
import type { TaskRolloutGroup } from '../curriculum/task-value.js';
import { CheckpointError, ConfigError } from '../errors.js';
import { evaluatePolicy } from '../eval/policy-evaluation.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { SyntheticEnvironment } from '../experience/synthetic-environment.js';
import type { Environment } from '../mdp/environment.js';
import { readJsonl } from '../mdp/jsonl.js';
import type { Observation, Step, Task, Trajectory, Transition } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import type { TrainablePolicy } from '../policy/policy.js';
import { type RandomState, SeededRandom } from '../random/seeded-random.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import { type BehaviourCloningResult, cloneBehaviour } from './behaviour-cloning.js';
import { CheckpointStore, type LoadedCheckpoint, writeFileAtomic } from './checkpoint-store.js';
import {
  type DreamGymConfig,
  type DreamGymConfigInput,
  parseDreamGymConfig,
} from './dreamgym-config.js';
import { EnvironmentPool } from './environment-pool.js';
import { appendExperience, replayExperience, truncateLines } from './experience-log.js';
import { GrpoTrainer } from './grpo-trainer.js';
import { LinearValueFunction, type LinearValueFunctionState } from './linear-value-function.js';
import {
  type EvaluationMetrics,
  type IterationMetrics,
  IterationMetricsSchema,
  type SyntheticToRealGap,
} from './metrics.js';
import type { PolicyGradientTrainer, UpdateMetrics } from './policy-gradient-trainer.js';
import { PpoTrainer } from './ppo-trainer.js';
import { type Rollout, rolloutToTrajectory } from './rollout.js';
import { BudgetedEnvironment, RealTransitionBudget } from './sim-to-real.js';

/** What the loop trains with. */
export interface DreamGymComponents {
  adapter: DomainAdapter;
  /**
   * The policy to train: `createLinearSoftmaxPolicy(config)` for the embedded default, an
   * LLM policy, any `TrainablePolicy`. On resume its state is restored from the checkpoint,
   * so build it with the run's configuration.
   */
  policy: TrainablePolicy;
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
  /** Offline trajectories the policy imitates first (`warmStart.behaviourCloning`). */
  demonstrations?: readonly Trajectory[];
  /** Writes new tasks; default `MutationTaskGenerator` over the adapter's `mutateTask`. */
  taskGenerator?: TaskGenerator;
  /** The real environment, for sim-to-real and real evaluation. */
  realEnvironment?: () => Environment | Promise<Environment>;
  /**
   * Called after every iteration (progress bars, logs). `total` is the planned number of
   * iterations; with a real-transition budget it is an estimate, revised after every real
   * iteration from the transitions they used, and equals `done` after the last one. When it
   * returns a promise the loop waits for it before it saves the iteration's checkpoint, so a hook
   * that keeps a copy of the policy (a learning curve's snapshots) sees the policy the
   * iteration left, and a run resumed after a crash calls it again for the iterations the
   * last checkpoint does not cover.
   */
  onIteration?: (metrics: IterationMetrics, progress: { done: number; total: number }) => unknown;
  /** Receives log lines. */
  log?: (message: string) => void;
}

/** Options of {@link DreamGymLoop}. */
export interface DreamGymLoopOptions {
  config: DreamGymConfigInput | DreamGymConfig;
  components: DreamGymComponents;
  /** Folder of the run: `config.json`, `metrics.jsonl`, `experience.jsonl`, `checkpoints/`. */
  runDirectory: string;
}

/** What a finished run returns. */
export interface DreamGymResult {
  policy: TrainablePolicy;
  metrics: IterationMetrics[];
  /** Evaluations after the last iteration (after the warm start when there are no iterations). */
  finalEvaluations: EvaluationMetrics[];
  /** Behaviour cloning's figures, when the run started with it. */
  warmStart?: BehaviourCloningResult;
  /** The starting policy's evaluation (after any warm start, before RL), with `evaluation.atStart`. */
  start?: StartEvaluation;
}

/** The starting policy measured before RL (`start-evaluation.json`). */
export interface StartEvaluation {
  /** Every configured evaluation (environment x mode). */
  evaluations: EvaluationMetrics[];
  /** The same training tasks in both environments, with `evaluation.gapTasks`. */
  syntheticToRealGap?: SyntheticToRealGap;
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
  policy: TrainablePolicy;
  valueFunction: LinearValueFunction | undefined;
  /** The frozen KL reference (the policy when RL started), when the loss has a KL term. */
  reference: TrainablePolicy | undefined;
  curriculum: Curriculum;
  metrics: IterationMetrics[];
  synthetic: EnvironmentPool;
  real: EnvironmentPool | undefined;
  /** Planned iterations, for progress. */
  totalIterations: number;
}

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

function valueFunctionFromCheckpoint(checkpoint: LoadedCheckpoint): LinearValueFunction {
  const header =
    checkpoint.json<Omit<LinearValueFunctionState, 'weights' | 'adamM' | 'adamV'>>('value-header');
  return LinearValueFunction.fromState({
    ...header,
    weights: floatsOf(checkpoint.bytes('value-weights')),
    adamM: floatsOf(checkpoint.bytes('value-adam-m')),
    adamV: floatsOf(checkpoint.bytes('value-adam-v')),
  });
}

function rewardGroups(rollouts: readonly Rollout[]): TaskRolloutGroup[] {
  // The task value uses the outcome (success) reward, not policy penalties; an episode the
  // budget cut mid-way has no outcome.
  const groups = new Map<string, number[]>();
  for (const rollout of rollouts) {
    if (rollout.budgetExhausted) continue;
    const rewards = groups.get(rollout.task.id) ?? [];
    rewards.push(rollout.success ? 1 : 0);
    groups.set(rollout.task.id, rewards);
  }
  return [...groups].map(([taskId, rewards]) => ({ taskId, rewards }));
}

/** The DreamGym training loop. */
export class DreamGymLoop {
  readonly config: DreamGymConfig;
  readonly runDirectory: string;
  private readonly components: DreamGymComponents;
  private readonly checkpoints: CheckpointStore;
  private readonly log: (message: string) => void;

  constructor(options: DreamGymLoopOptions) {
    const { components, runDirectory } = options;
    this.config = parseDreamGymConfig(options.config);
    this.components = components;
    this.runDirectory = runDirectory;
    if (components.seedTasks.length === 0) {
      throw new ConfigError('The DreamGym loop needs at least one seed task.', {
        field: 'seedTasks',
      });
    }
    const realNeeded: [boolean, string][] = [
      [this.config.simToReal.realTransitionBudget > 0, 'simToReal.realTransitionBudget > 0'],
      [
        this.config.evaluation.environments.includes('real'),
        'evaluation.environments includes "real"',
      ],
      [this.config.evaluation.gapTasks > 0, 'evaluation.gapTasks > 0'],
    ];
    for (const [needed, why] of realNeeded) {
      if (needed && !components.realEnvironment) {
        throw new ConfigError(`${why} needs a real environment (components.realEnvironment).`, {
          field: why.split(' ')[0]!,
        });
      }
    }
    if (this.config.warmStart.behaviourCloning && !components.demonstrations?.length) {
      throw new ConfigError(
        'warmStart.behaviourCloning needs demonstrations (components.demonstrations: the offline trajectories).',
        { field: 'warmStart.behaviourCloning' },
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
      warmStart: join(this.runDirectory, 'warm-start.json'),
      start: join(this.runDirectory, 'start-evaluation.json'),
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
   * Iterations for progress once `done` iterations have run, some of them real: the real ones
   * left are estimated from the transitions the real iterations so far used on average (the
   * plan assumes every episode runs to `maxSteps`, and most end sooner).
   */
  private estimatedIterations(done: number, budget: RealTransitionBudget): number {
    if (budget.remaining === 0) return done;
    const realDone = done - this.config.iterations;
    return done + Math.ceil(budget.remaining / (budget.spent / realDone));
  }

  /**
   * Trains. With `resume`, continues from the run folder's latest checkpoint (a fresh run
   * when there is none); without it, the run folder must not hold a checkpoint yet.
   */
  async run(options: { resume?: boolean; signal?: AbortSignal } = {}): Promise<DreamGymResult> {
    const { config, components } = this;
    const { policy } = components;
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
    let valueFunction: LinearValueFunction | undefined;
    let reference: TrainablePolicy | undefined;
    let curriculum: Curriculum;
    let warmStart: BehaviourCloningResult | undefined;
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
      await policy.loadState(this.checkpointFolder(checkpoint, 'policy'));
      if (checkpoint.parts().includes('value-header'))
        valueFunction = valueFunctionFromCheckpoint(checkpoint);
      const referenceFolder = checkpoint.folder('reference');
      if (referenceFolder) {
        reference = await policy.snapshot();
        await reference.loadState(referenceFolder);
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
      await replayExperience(this.files.experience, components.replayBuffer);
      this.log(
        `resumed ${this.runDirectory} from checkpoint ${checkpoint.name} (iteration ${counters.iteration})`,
      );
    } else {
      const random = new SeededRandom(config.seed);
      await writeFileAtomic(this.files.config, `${JSON.stringify(config, null, 2)}\n`);
      await writeFile(this.files.metrics, '');
      await writeFile(this.files.experience, '');
      if (config.warmStart.behaviourCloning) {
        warmStart = await this.cloneDemonstrations(random.fork('behaviour-cloning'), options);
      }
      // RL is a new optimisation problem: it starts from the policy's weights (cloned or
      // loaded) but not from the moments of the optimiser that produced them.
      await policy.resetOptimizer();
      valueFunction = config.algorithm === 'ppo' ? new LinearValueFunction() : undefined;
      reference =
        (config.trainer.loss.klCoefficient ?? 0) > 0 ? await policy.snapshot() : undefined;
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
    let start: StartEvaluation | undefined;
    if (config.evaluation.atStart) {
      if (checkpoint && existsSync(this.files.start)) {
        start = JSON.parse(await readFile(this.files.start, 'utf8')) as StartEvaluation;
      } else if (!checkpoint) {
        this.log('evaluating the starting policy...');
        const evaluations = await this.evaluate(state, 0);
        const gap = await this.syntheticToRealGap(state, 0);
        start = { evaluations, ...(gap ? { syntheticToRealGap: gap } : {}) };
        await writeFileAtomic(this.files.start, `${JSON.stringify(start, null, 2)}\n`);
      }
    }
    let finalEvaluations: EvaluationMetrics[] = metrics.at(-1)?.evaluations ?? [];
    try {
      if (this.plannedIterations() === 0) {
        // Nothing to train (a warm start alone): evaluate the policy as it stands, and keep
        // it as checkpoint 0 so that `eval` and `fidelity` can measure the starting policy.
        finalEvaluations = start?.evaluations ?? (await this.evaluate(state, 0));
        if (!checkpoint) await this.saveCheckpoint(state);
      }
      const synthetic = this.createTrainer(state, 'synthetic', () => state.synthetic.lease());
      while (counters.iteration < config.iterations) {
        options.signal?.throwIfAborted();
        const started = performance.now();
        const batch = curriculum.sampleBatch(config.tasksPerIteration, state.random);
        const update = await synthetic.step({ tasks: batch, ...signal });
        const rollouts = synthetic.lastCollected;
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
            await this.addExperience(realTrainer.lastCollected, 'real', counters);
            // The experience model co-evolves with the policy: its real episodes teach it.
            components.experienceModel.learn?.(
              realTrainer.lastCollected.map((rollout) => rolloutToTrajectory(rollout, 'real')),
            );
          }
          const isLast = budget.remaining === 0;
          state.totalIterations = this.estimatedIterations(counters.iteration + 1, budget);
          await this.finishIteration(state, { phase: 'real', update, batch, isLast, started });
          await this.saveCheckpoint(state);
        }
        await realTrainer.close();
      }
    } finally {
      await state.synthetic.closeAll();
      await real?.closeAll();
    }
    if (metrics.length > 0) finalEvaluations = metrics.at(-1)!.evaluations;
    return {
      policy,
      metrics,
      finalEvaluations,
      ...(warmStart ? { warmStart } : {}),
      ...(start ? { start } : {}),
    };
  }

  private checkpointFolder(checkpoint: LoadedCheckpoint, part: string): string {
    const folder = checkpoint.folder(part);
    if (!folder) {
      throw new CheckpointError(
        `Checkpoint ${checkpoint.name} in ${this.runDirectory} has no ${part} folder; it was written by another version. Start a new --run-dir.`,
        { path: this.runDirectory },
      );
    }
    return folder;
  }

  /** Behaviour cloning on the demonstrations, recorded in `warm-start.json`. */
  private async cloneDemonstrations(
    random: SeededRandom,
    options: { signal?: AbortSignal },
  ): Promise<BehaviourCloningResult> {
    const { components } = this;
    const cloningConfig = this.config.warmStart.behaviourCloning!;
    this.log('warm start: behaviour cloning on the offline trajectories...');
    const result = await cloneBehaviour({
      policy: components.policy,
      trajectories: components.demonstrations ?? [],
      candidateActions: (observation: Observation, history: readonly Step[]) =>
        components.adapter.candidateActions(observation, history),
      config: cloningConfig,
      random,
      onEpoch: (epoch) =>
        this.log(
          `behaviour cloning epoch ${epoch.epoch}: train NLL ${epoch.trainNegativeLogLikelihood.toFixed(3)}, held-out NLL ${epoch.heldOutNegativeLogLikelihood.toFixed(3)}`,
        ),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    this.log(
      `warm start: kept epoch ${result.bestEpoch}, held-out NLL ${result.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${result.bestHeldOutNegativeLogLikelihood.toFixed(3)} (${result.trainSamples} demonstrated steps)`,
    );
    await writeFileAtomic(this.files.warmStart, `${JSON.stringify(result, null, 2)}\n`);
    return result;
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
      candidateActions: (observation: Observation, history: readonly Step[]) =>
        components.adapter.candidateActions(observation, history),
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
      episodeWeighting: config.trainer.episodeWeighting,
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
    await appendExperience(this.files.experience, counters.iteration, transitions);
    counters.experienceLines += transitions.length;
    await this.components.replayBuffer.add(transitions);
  }

  /** Every configured evaluation (environment x mode), and the synthetic-to-real gap. */
  private async evaluate(state: RunState, iterationNumber: number): Promise<EvaluationMetrics[]> {
    const { config, components } = this;
    const { evaluation } = config;
    const tasks = components.evaluationTasks ?? [];
    const results: EvaluationMetrics[] = [];
    if (tasks.length === 0) return results;
    for (const environment of evaluation.environments) {
      for (const mode of evaluation.modes) {
        results.push(
          await this.evaluateOn(state, environment, tasks, {
            greedy: mode === 'greedy',
            episodesPerTask: evaluation.episodesPerTask,
            label: `evaluation:${iterationNumber}:${mode}`,
          }),
        );
      }
    }
    return results;
  }

  private async evaluateOn(
    state: RunState,
    environment: 'synthetic' | 'real',
    tasks: readonly Task[],
    options: { greedy: boolean; episodesPerTask: number; label: string },
  ): Promise<EvaluationMetrics> {
    const { config, components } = this;
    const pool = environment === 'real' ? state.real! : state.synthetic;
    // A long evaluation (many real games) says how far it is, a line every tenth.
    let successes = 0;
    let reported = 0;
    const onEpisode = (
      rollout: { success: boolean },
      { done, total }: { done: number; total: number },
    ) => {
      if (rollout.success) successes += 1;
      const tenth = Math.floor((10 * done) / total);
      if (total >= 20 && tenth > reported) {
        reported = tenth;
        this.log(
          `${options.label} (${environment}): ${done}/${total} episodes, ${successes} successes`,
        );
      }
    };
    const { metrics } = await evaluatePolicy({
      onEpisode,
      policy: state.policy,
      environmentFactory: () => pool.lease(),
      environment,
      tasks,
      episodesPerTask: options.episodesPerTask,
      maxSteps: config.maxSteps,
      greedy: options.greedy,
      concurrency: environment === 'real' ? config.realConcurrency : config.concurrency,
      random: state.random.fork(options.label),
      candidateActions: (observation, history) =>
        components.adapter.candidateActions(observation, history),
    });
    return metrics;
  }

  /** The same policy on the same training tasks in both environments (Theorem 1's gap). */
  private async syntheticToRealGap(
    state: RunState,
    iterationNumber: number,
  ): Promise<SyntheticToRealGap | undefined> {
    const { gapTasks, modes } = this.config.evaluation;
    if (gapTasks === 0 || !state.real) return undefined;
    // One sample for the whole run (from the seed, not the run's advancing state), so that
    // the gaps before, during and after training are measured on the same tasks.
    const tasks = new SeededRandom(this.config.seed)
      .fork('gap-tasks')
      .shuffle([...this.components.seedTasks])
      .slice(0, gapTasks);
    const options = {
      greedy: modes[0] === 'greedy',
      episodesPerTask: 1,
      label: `gap:${iterationNumber}`,
    };
    const synthetic = await this.evaluateOn(state, 'synthetic', tasks, options);
    const real = await this.evaluateOn(state, 'real', tasks, options);
    return {
      tasks: tasks.length,
      syntheticSuccessRate: synthetic.successRate,
      realSuccessRate: real.successRate,
      gap: synthetic.successRate - real.successRate,
    };
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
    const { evaluation } = this.config;
    const iterationNumber = counters.iteration + 1;
    const due =
      iteration.isLast || (evaluation.every > 0 && iterationNumber % evaluation.every === 0);
    const evaluations = due ? await this.evaluate(state, iterationNumber) : [];
    const gap = due ? await this.syntheticToRealGap(state, iterationNumber) : undefined;
    const generatedInBatch = batch.filter((task) => task.origin === 'generated').length;
    const record = IterationMetricsSchema.parse({
      iteration: counters.iteration,
      phase,
      episodes: update.episodes,
      successRate: update.successRate,
      meanReward: update.meanReward,
      meanSteps: update.meanEpisodeLength,
      truncatedEpisodes: update.truncatedEpisodes,
      budgetCutEpisodes: update.budgetCutEpisodes,
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
        behaviourMismatch: update.behaviourMismatch,
        ...(update.valueLoss === undefined ? {} : { valueLoss: update.valueLoss }),
      },
      evaluations,
      ...(gap ? { syntheticToRealGap: gap } : {}),
      seconds: (performance.now() - started) / 1000,
    });
    await writeFile(this.files.metrics, `${JSON.stringify(record)}\n`, { flag: 'a' });
    counters.metricsLines += 1;
    counters.iteration += 1;
    state.metrics.push(record);
    await this.components.onIteration?.(record, {
      done: counters.iteration,
      total: state.totalIterations,
    });
  }

  private async saveCheckpoint(state: RunState): Promise<void> {
    const { counters, random, policy, valueFunction, reference, curriculum } = state;
    counters.random = random.getState();
    const parts: Record<string, unknown> = { counters, curriculum: curriculum.toJSON() };
    if (valueFunction) {
      const { weights, adamM, adamV, ...header } = valueFunction.exportState();
      Object.assign(parts, {
        'value-header': header,
        'value-weights': bytesOf(weights),
        'value-adam-m': bytesOf(adamM),
        'value-adam-v': bytesOf(adamV),
      });
    }
    await this.checkpoints.save(`iteration-${String(counters.iteration).padStart(6, '0')}`, parts, {
      policy: (folder) => policy.saveState(folder),
      ...(reference ? { reference: (folder: string) => reference.saveState(folder) } : {}),
    });
  }
}

/**
 * Restores `policy` (built with the run's configuration) from a run's latest checkpoint, for
 * `dreamgym eval`; returns the checkpoint's name. With `options.replayBuffer` (holding the
 * run's offline transitions), also re-adds the experience the run had added to its buffer up
 * to that checkpoint, so a synthetic environment retrieves from what the run's did; resolves
 * `experienceTransitions` to how many were re-added (0 without a buffer).
 */
export async function loadRunPolicy(
  runDirectory: string,
  policy: TrainablePolicy,
  options: { replayBuffer?: ReplayBuffer } = {},
): Promise<{ checkpoint: string; experienceTransitions: number }> {
  const checkpoint = await new CheckpointStore(join(runDirectory, 'checkpoints')).load();
  if (!checkpoint) {
    throw new CheckpointError(
      `${runDirectory} holds no checkpoint. Pass the --run-dir of a \`dreamgym train\` run that finished at least one iteration.`,
      { path: runDirectory },
    );
  }
  const folder = checkpoint.folder('policy');
  if (!folder) {
    throw new CheckpointError(
      `Checkpoint ${checkpoint.name} in ${runDirectory} has no policy folder; it was written by another version.`,
      { path: runDirectory },
    );
  }
  await policy.loadState(folder);
  let experienceTransitions = 0;
  if (options.replayBuffer) {
    const { experienceLines } = CountersSchema.parse(checkpoint.json('counters'));
    if (experienceLines > 0)
      experienceTransitions = await replayExperience(
        join(runDirectory, 'experience.jsonl'),
        options.replayBuffer,
        experienceLines,
      );
  }
  return { checkpoint: checkpoint.name, experienceTransitions };
}
