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
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DomainAdapter } from '../adapter.js';
import { Curriculum } from '../curriculum/curriculum.js';
import { MutationTaskGenerator } from '../curriculum/mutation-task-generator.js';
import type { TaskGenerator } from '../curriculum/task-generator.js';
import { TaskPool } from '../curriculum/task-pool.js';
import { CheckpointError, ConfigError } from '../errors.js';
import type { EvaluationMetrics } from '../eval/evaluation-metrics.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { Environment } from '../mdp/environment.js';
import { readJsonl } from '../mdp/jsonl.js';
import type { Task, Trajectory } from '../mdp/schemas.js';
import type { TrainablePolicy } from '../policy/policy.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import { EnvironmentPool } from '../rollout/environment-pool.js';
import { type Rollout, rolloutToTrajectory, rolloutToTransitions } from '../rollout/rollout.js';
import { type BehaviourCloningResult, warmStartByCloning } from './behaviour-cloning.js';
import { CheckpointSelection, type CheckpointSelectionResult } from './checkpoint-selection.js';
import type { LoadedCheckpoint } from './checkpoint-store.js';
import {
  type DreamGymConfig,
  type DreamGymConfigInput,
  parseDreamGymConfig,
} from './dreamgym-config.js';
import { forkCreditLine } from './fork-credit.js';
import { LinearValueFunction } from './linear-value-function.js';
import { LoopEvaluation, type StartEvaluation } from './loop-evaluation.js';
import {
  type Counters,
  CountersSchema,
  checkpointFolder,
  type RunState,
  saveRunCheckpoint,
  valueFunctionFromCheckpoint,
} from './loop-state.js';
import { createLoopTrainer, rewardGroups } from './loop-trainer.js';
import { type IterationMetrics, IterationMetricsSchema, updateRecord } from './metrics.js';
import type { PolicyGradientTrainer, UpdateMetrics } from './policy-gradient-trainer.js';
import { extendRun } from './run-extension.js';
import { RunLedger } from './run-ledger.js';
import {
  BudgetedEnvironment,
  estimatedIterations,
  plannedIterations,
  RealTransitionBudget,
} from './sim-to-real.js';
import { stalledUpdateWarning } from './stalled-updates.js';
import { syntheticEnvironmentFromConfig } from './synthetic-environment-from-config.js';

export { loadRunPolicy } from './loop-state.js';

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
  /**
   * Called with the starting policy's evaluation (`evaluation.atStart`) when a new run has
   * measured it, before any training: a check that throws stops the run there (`dreamgym
   * train` refuses a synthetic environment whose success the real one contradicts).
   */
  checkStart?: (start: StartEvaluation) => unknown;
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
  /** Which policy the run kept and why, with `selection`. */
  selection?: CheckpointSelectionResult;
}

/** `selection.json`: the selection and the kept policy's evaluations. */
type SelectionFile = CheckpointSelectionResult & { evaluations: EvaluationMetrics[] };

/** The state a run starts its iterations from: restored from a checkpoint, or new. */
type OpenedRun = Pick<RunState, 'valueFunction' | 'reference' | 'curriculum' | 'metrics'> & {
  warmStart?: BehaviourCloningResult;
};

/** The DreamGym training loop. */
export class DreamGymLoop {
  readonly config: DreamGymConfig;
  readonly runDirectory: string;
  private readonly components: DreamGymComponents;
  private readonly log: (message: string) => void;
  private readonly evaluation: LoopEvaluation;
  private readonly selection: CheckpointSelection | undefined;

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
      [this.config.selection !== undefined, 'selection.realTasks'],
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
    this.log = components.log ?? (() => {});
    this.evaluation = new LoopEvaluation({
      config: this.config,
      adapter: components.adapter,
      evaluationTasks: components.evaluationTasks ?? [],
      seedTasks: components.seedTasks,
      log: this.log,
    });
    this.selection = this.config.selection
      ? new CheckpointSelection({
          seed: this.config.seed,
          realTasks: this.config.selection.realTasks,
          seedTasks: components.seedTasks,
          evaluation: this.evaluation,
          log: this.log,
        })
      : undefined;
  }

  /** Name of the latest checkpoint in a run folder, or undefined for a new run. */
  static latestCheckpoint(runDirectory: string): Promise<string | undefined> {
    return RunLedger.store(runDirectory).latestName();
  }

  private get files() {
    return {
      config: join(this.runDirectory, 'config.json'),
      metrics: join(this.runDirectory, 'metrics.jsonl'),
      experience: join(this.runDirectory, 'experience.jsonl'),
      warmStart: join(this.runDirectory, 'warm-start.json'),
      start: join(this.runDirectory, 'start-evaluation.json'),
      /** The kept policy, why, and its evaluations (`selection`). */
      selection: join(this.runDirectory, 'selection.json'),
    };
  }

  /**
   * Trains. With `resume`, continues from the run folder's latest checkpoint (a fresh run
   * when there is none); without it, the run folder must not hold a checkpoint yet. With
   * `extend` too, the run may go on to more iterations or a larger real-transition budget.
   */
  async run(
    options: { resume?: boolean; extend?: boolean; signal?: AbortSignal } = {},
  ): Promise<DreamGymResult> {
    const { config, components } = this;
    const { ledger, checkpoint } = await RunLedger.open(
      {
        runDirectory: this.runDirectory,
        holds: 'a run',
        configFile: 'config.json',
        counters: CountersSchema,
        logs: { 'metrics.jsonl': 'metricsLines' },
      },
      {
        resume: options.resume === true,
        settings: config,
        config,
        seed: config.seed,
        counters: { phase: 'synthetic', metricsLines: 0, forkTransitions: 0 },
        replayBuffer: components.replayBuffer,
        // With `extend`, the configuration may raise the run's iterations and real-transition
        // budget (`run-extension.ts`).
        onConfigChange: async (counters) => {
          if (options.extend !== true) {
            throw new CheckpointError(
              `The checkpoint in ${this.runDirectory} was written with a different configuration. Resume with the run's config.json, extend it to more iterations or a larger real-transition budget (run({ resume: true, extend: true }), dreamgym train --resume --extend), or start a new --run-dir.`,
              { path: this.runDirectory },
            );
          }
          await extendRun(this.files.config, config, counters, this.runDirectory, this.log);
        },
      },
    );
    const opened = checkpoint
      ? await this.restore(checkpoint, ledger)
      : await this.begin(ledger, options);
    const { counters, random } = ledger;
    const { warmStart } = opened;
    const state: RunState = {
      ...opened,
      ledger,
      counters,
      random,
      policy: components.policy,
      synthetic: new EnvironmentPool(() => this.createSyntheticEnvironment()),
      real: components.realEnvironment
        ? new EnvironmentPool(components.realEnvironment)
        : undefined,
      totalIterations: plannedIterations(this.config),
    };
    const budget = new RealTransitionBudget(
      config.simToReal.realTransitionBudget,
      counters.realTransitions,
    );
    const start = await this.evaluation.start(state, {
      resumed: checkpoint !== undefined,
      file: this.files.start,
    });
    // The starting policy's check (`checkStart`) stops a new run before any training.
    if (start && !checkpoint) await components.checkStart?.(start);
    let finalEvaluations: EvaluationMetrics[] = state.metrics.at(-1)?.evaluations ?? [];
    let selection: CheckpointSelectionResult | undefined;
    try {
      if (!checkpoint) await this.selection?.validate(state, budget, 0);
      if (plannedIterations(this.config) === 0) {
        // Nothing to train (a warm start alone): evaluate the policy as it stands, and keep
        // it as checkpoint 0 so that `eval` and `fidelity` can measure the starting policy.
        finalEvaluations = start?.evaluations ?? (await this.evaluation.evaluate(state, 0));
        if (!checkpoint) await this.saveCheckpoint(state);
      }
      await this.syntheticPhase(state, budget, options.signal);
      if (budget.remaining > 0) await this.realPhase(state, budget, options.signal);
      if (state.metrics.length > 0) finalEvaluations = state.metrics.at(-1)!.evaluations;
      if (this.selection) {
        selection = await this.selection.keep(state, (name) => this.saveCheckpoint(state, name));
        const kept = selection.keptIteration;
        if (kept !== counters.iteration) {
          // The kept policy's evaluations: measured at its iteration, by an earlier end of
          // this run (a finished run resumed), or now.
          const measured = kept === 0 ? start?.evaluations : state.metrics[kept - 1]?.evaluations;
          const written = existsSync(this.files.selection)
            ? (JSON.parse(await readFile(this.files.selection, 'utf8')) as SelectionFile)
            : undefined;
          finalEvaluations = measured?.length
            ? measured
            : written?.keptIteration === kept && written.records.length === selection.records.length
              ? written.evaluations
              : await this.evaluation.evaluate(state, kept);
        }
        const file: SelectionFile = { ...selection, evaluations: finalEvaluations };
        await writeFileAtomic(this.files.selection, `${JSON.stringify(file, null, 2)}\n`);
      }
    } finally {
      await state.synthetic.closeAll();
      await state.real?.closeAll();
    }
    return {
      policy: components.policy,
      metrics: state.metrics,
      finalEvaluations,
      ...(warmStart ? { warmStart } : {}),
      ...(start ? { start } : {}),
      ...(selection ? { selection } : {}),
    };
  }

  /** Saves the run's checkpoint of its current iteration, with the selection's parts. */
  private saveCheckpoint(state: RunState, name?: string): Promise<void> {
    return saveRunCheckpoint(state, this.selection?.checkpointParts(), name);
  }

  /** The state a checkpoint holds (the ledger has cut the logs back to it and replayed them). */
  private async restore(
    checkpoint: LoadedCheckpoint,
    ledger: RunLedger<Counters>,
  ): Promise<OpenedRun> {
    const { components } = this;
    await components.policy.loadState(checkpointFolder(checkpoint, 'policy', this.runDirectory));
    await this.selection?.restore(checkpoint, components.policy, this.runDirectory);
    const valueFunction = checkpoint.parts().includes('value-header')
      ? valueFunctionFromCheckpoint(checkpoint, this.runDirectory)
      : undefined;
    let reference: TrainablePolicy | undefined;
    const referenceFolder = checkpoint.folder('reference');
    if (referenceFolder) {
      reference = await components.policy.snapshot();
      await reference.loadState(referenceFolder);
    }
    const curriculum = Curriculum.fromJSON(checkpoint.json('curriculum'), {
      generator: this.taskGenerator(),
      config: this.config.curriculum,
      source: `checkpoint ${checkpoint.name}`,
    });
    const metrics: IterationMetrics[] = [];
    for await (const record of readJsonl(this.files.metrics, IterationMetricsSchema))
      metrics.push(record);
    this.log(
      `resumed ${this.runDirectory} from checkpoint ${checkpoint.name} (iteration ${ledger.counters.iteration})`,
    );
    return { valueFunction, reference, curriculum, metrics };
  }

  /** A new run: its files, the warm start, and RL's starting state. */
  private async begin(
    ledger: RunLedger<Counters>,
    options: { signal?: AbortSignal },
  ): Promise<OpenedRun> {
    const { config, components } = this;
    const warmStart = config.warmStart.behaviourCloning
      ? await warmStartByCloning({
          policy: components.policy,
          trajectories: components.demonstrations ?? [],
          candidateActions: (observation, history) =>
            components.adapter.candidateActions(observation, history),
          config: config.warmStart.behaviourCloning,
          random: ledger.random.fork('behaviour-cloning'),
          log: this.log,
          file: this.files.warmStart,
          ...(options.signal ? { signal: options.signal } : {}),
        })
      : undefined;
    // RL is a new optimisation problem: it starts from the policy's weights (cloned or
    // loaded) but not from the moments of the optimiser that produced them.
    await components.policy.resetOptimizer();
    return {
      valueFunction: config.algorithm === 'ppo' ? new LinearValueFunction() : undefined,
      reference:
        (config.trainer.loss.klCoefficient ?? 0) > 0
          ? await components.policy.snapshot()
          : undefined,
      curriculum: new Curriculum({
        pool: new TaskPool(components.seedTasks),
        generator: this.taskGenerator(),
        config: config.curriculum,
      }),
      metrics: [],
      ...(warmStart ? { warmStart } : {}),
    };
  }

  private taskGenerator(): TaskGenerator {
    const { components } = this;
    return components.taskGenerator ?? new MutationTaskGenerator({ adapter: components.adapter });
  }

  /** The synthetic iterations still to run: curriculum batch, update, write-back, growth. */
  private async syntheticPhase(
    state: RunState,
    budget: RealTransitionBudget,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { config } = this;
    const { counters, curriculum } = state;
    const trainer = this.createTrainer(state, 'synthetic', () => state.synthetic.lease());
    while (counters.iteration < config.iterations) {
      signal?.throwIfAborted();
      const started = performance.now();
      const batch = curriculum.sampleBatch(config.tasksPerIteration, state.random);
      const { metrics: update, rollouts } = await trainer.step({
        tasks: batch,
        ...(signal ? { signal } : {}),
      });
      counters.syntheticTransitions += update.steps;
      counters.forkTransitions += update.forkSteps ?? 0;
      if (config.replayWriteBack) await this.addExperience(rollouts, 'synthetic', state.ledger);
      curriculum.observe(rewardGroups(rollouts), counters.iteration);
      const growth = await curriculum.grow(
        counters.iteration,
        state.random,
        signal ? { signal } : {},
      );
      if (growth.added.length > 0)
        this.log(`iteration ${counters.iteration}: ${growth.added.length} new tasks`);
      if (growth.warning) this.log(`warning: iteration ${counters.iteration}: ${growth.warning}`);
      const isLast =
        counters.iteration + 1 === config.iterations && config.simToReal.realTransitionBudget === 0;
      await this.finishIteration(state, budget, {
        phase: 'synthetic',
        update,
        batch,
        isLast,
        started,
      });
      if (
        counters.iteration % config.checkpointEvery === 0 ||
        counters.iteration === config.iterations
      ) {
        await this.saveCheckpoint(state);
      }
    }
    await trainer.close();
  }

  /** Sim-to-real: real iterations until the budget is spent; the experience model learns from them. */
  private async realPhase(
    state: RunState,
    budget: RealTransitionBudget,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { config, components } = this;
    const { counters } = state;
    const trainer = this.createTrainer(
      state,
      'real',
      async () => new BudgetedEnvironment(await state.real!.lease(), budget),
    );
    counters.phase = 'real';
    while (budget.remaining > 0) {
      signal?.throwIfAborted();
      const started = performance.now();
      const batch = state.random
        .shuffle([...components.seedTasks])
        .slice(0, config.simToReal.tasksPerIteration);
      const spentBefore = budget.spent;
      const { metrics: update, rollouts } = await trainer.step({
        tasks: batch,
        ...(signal ? { signal } : {}),
      });
      counters.realTransitions = budget.spent;
      if (budget.spent === spentBefore) break;
      if (config.simToReal.addToBuffer) {
        await this.addExperience(rollouts, 'real', state.ledger);
        // The experience model co-evolves with the policy: its real episodes teach it.
        components.experienceModel.learn?.(
          rollouts.map((rollout) => rolloutToTrajectory(rollout, 'real')),
        );
      }
      const isLast = budget.remaining === 0;
      state.totalIterations = estimatedIterations(config, counters.iteration + 1, budget);
      await this.finishIteration(state, budget, { phase: 'real', update, batch, isLast, started });
      await this.saveCheckpoint(state);
    }
    await trainer.close();
  }

  private createTrainer(
    state: RunState,
    phase: 'synthetic' | 'real',
    environmentFactory: () => Promise<Environment>,
  ): PolicyGradientTrainer {
    return createLoopTrainer(this.config, this.components, state, phase, environmentFactory);
  }

  private createSyntheticEnvironment(): Environment {
    const { config, components } = this;
    return syntheticEnvironmentFromConfig(config, {
      experienceModel: components.experienceModel,
      retriever: components.replayBuffer,
      adapter: components.adapter,
    });
  }

  /** Appends the rollouts' transitions to the experience log and the replay buffer, in rollout order. */
  private async addExperience(
    rollouts: readonly Rollout[],
    source: 'synthetic' | 'real',
    ledger: RunLedger<Counters>,
  ): Promise<void> {
    const { iteration } = ledger.counters;
    const transitions = rollouts.flatMap((rollout) =>
      rolloutToTransitions(rollout, source, {
        trajectoryId: ledger.trajectoryId(source, rollout.id),
        policyVersion: iteration,
      }),
    );
    if (transitions.length === 0) return;
    await ledger.appendExperience(transitions.map((transition) => ({ iteration, transition })));
    await this.components.replayBuffer.add(transitions);
  }

  /** Evaluates when due, records the iteration's metrics and advances the counters. */
  private async finishIteration(
    state: RunState,
    budget: RealTransitionBudget,
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
    const evaluations = due ? await this.evaluation.evaluate(state, iterationNumber) : [];
    const gap = due ? await this.evaluation.syntheticToRealGap(state, iterationNumber) : undefined;
    const selectionEvery = this.config.selection?.every ?? 0;
    if (iteration.isLast || (selectionEvery > 0 && iterationNumber % selectionEvery === 0))
      await this.selection?.validate(state, budget, iterationNumber);
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
      ...(update.forkSteps === undefined ? {} : { forkTransitions: counters.forkTransitions }),
      update: updateRecord(update),
      evaluations,
      ...(gap ? { syntheticToRealGap: gap } : {}),
      seconds: (performance.now() - started) / 1000,
    });
    await state.ledger.appendLines('metrics.jsonl', [JSON.stringify(record)]);
    if (update.forkSteps !== undefined)
      this.log(forkCreditLine(iterationNumber, update, counters.forkTransitions));
    counters.iteration += 1;
    state.metrics.push(record);
    const stalled = stalledUpdateWarning(state.metrics);
    if (stalled) this.log(`warning: ${stalled}`);
    await this.components.onIteration?.(record, {
      done: counters.iteration,
      total: state.totalIterations,
    });
  }
}
