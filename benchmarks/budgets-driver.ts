/**
 * The paper's experiment at the paper's budgets, for any domain (issue 29): greedy real
 * success against the real transitions a condition used, as learning curves.
 *
 *   start           the domain's starting policy (behaviour cloning, chosen before any result)
 *   real-grpo       the start, then GRPO in the real environment; snapshots at every mark
 *                   (the paper's 3K, 10K, 30K and 80K real transitions)
 *   real-ppo        the same with PPO (the paper's second real-env baseline)
 *   dreamgym        the start, then DreamGym with 0 real transitions, for as many updates
 *                   (iterations) as real-env GRPO of the same seed made to reach the last mark
 *                   (`--dreamgym-updates N`: N, for runs whose real-env GRPO is not made)
 *   dreamgym-s2r    the dreamgym policy, then GRPO in the real environment with the S2R budget
 *   no-curriculum, no-replay, no-retrieval   dreamgym with one part switched off
 *
 * Longer than 600 lines because it is the one per-condition runner every budgets experiment
 * shares (ALFWorld, MiniWoB++, the MiniWoB++ LLM); splitting it by job is issue 51's
 * benchmarks step.
 *
 * A domain's driver (`alfworld-budgets.ts`, `miniwob-budgets.ts`) gives its data, evaluation
 * splits, real environment, starting policy and loop configuration as a `BudgetDomain`; this
 * module runs the schedule. Every run builds the domain's embedded experience model afresh, so
 * that what one run's real episodes teach it (`learn`) never reaches another. Each point is
 * evaluated greedily in the real environment on every evaluation split (real-env RL's as soon
 * as its run reaches them); the final points also sampled, and on the same training tasks in
 * the synthetic and the real environment.
 *
 * Resumable: run folders, checkpoints and curve points' policies live in the scratch folder,
 * every evaluation is written to the results file as it finishes, and points measured in full
 * there are not trained again. With no condition, the report is written from the results file
 * alone (the domain is not loaded). Seeds or conditions may run side by side as separate
 * processes with the same results folder: each writes back only the points it measured.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  DreamGymLoop,
  type Environment,
  type EvaluationMetrics,
  evaluatePolicy,
  type IterationMetrics,
  measureOnPolicyFidelity,
  parseDreamGymConfig,
  SeededRandom,
  syntheticEnvironmentFromConfig,
  type Task,
  type TrainablePolicy,
  type Trajectory,
} from '@dreamgym/core';
import { EnvironmentPool } from '@dreamgym/core/rollout';
import { type DomainSetup, embeddedExperienceModel, reportEpisodes } from '@dreamgym/run';
import { log, writeOfflineBuffer } from './alfworld-protocol.js';
import type { BudgetRun } from './budgets-command-line.js';
import {
  findPoint,
  marksCrossed,
  measured,
  type PointCost,
  readCost,
  runMetrics,
  splitResult,
  writeCost,
} from './budgets-points.js';
import {
  BUDGET_CONDITIONS,
  type BudgetCondition,
  type BudgetLabels,
  type BudgetSettings,
  budgetClaims,
  budgetTableRecord,
  type CurvePoint,
  finalMark,
  greedyOn,
  renderBudgetReport,
  setGreedy,
  summaryLines,
} from './budgets-report.js';

/** A domain, as far as the report needs it: nothing here loads data. */
export interface BudgetDomain {
  /** The results' name: `<benchmark>.json` and `<benchmark>-report.html`. */
  benchmark: string;
  labels: BudgetLabels;
  /** The evaluation splits, in report order, with how many tasks each holds. */
  evaluation: Record<string, number>;
  /** Steps per episode, in both environments. */
  maxSteps: number;
  /** Every condition's loop configuration for `seed` (iterations and budgets set per condition). */
  baseConfig(seed: number): DreamGymConfigInput;
  /** What the results file says of the policy, the experience model and the data. */
  protocol: Record<string, unknown>;
  /** The starting policy: how it is made (`warmStart`, from `demonstrations`) and why. */
  start: { how: string; why: string; warmStart: DreamGymConfigInput['warmStart'] };
  /** The embedded experience model's parts (`embeddedExperienceModel`). */
  experienceModel: { outcomeJudge?: boolean; worldMemory?: boolean };
  /**
   * Where the curve points keep their policies and costs (`<condition>-<seed>/<mark>/`).
   * Default `<scratch>/points`; a folder in the repository keeps them for later sessions.
   */
  pointsDirectory?: string;
  /** Fields the results file holds besides the driver's, from its curve points. */
  document?(curves: readonly CurvePoint[]): Promise<Record<string, unknown>>;
  /** Called after every write of the results file (e.g. to commit what a later session needs). */
  onResultsWritten?(): Promise<void>;
  load(): Promise<LoadedBudgetDomain>;
}

/** What one training iteration of a condition took, for {@link LoadedBudgetDomain.onIteration}. */
export interface BudgetIteration {
  condition: BudgetCondition;
  seed: number;
  metrics: IterationMetrics;
  /** How much each of the domain's `counters` grew during the iteration (evaluations excluded). */
  counters: Record<string, number>;
}

/** A domain's data and real environment. */
export interface LoadedBudgetDomain {
  setup: DomainSetup;
  /** What the start clones (its successful trajectories). */
  demonstrations: readonly Trajectory[];
  /** The evaluation tasks of every split of `BudgetDomain.evaluation`. */
  evaluationSets: Record<string, readonly Task[]>;
  /** One real environment (the driver pools them). */
  realEnvironment(): Promise<Environment>;
  /** Releases what `load` started (browsers, servers). */
  close(): Promise<void>;
  /**
   * A policy holding `seed`'s untrained weights, which the driver clones from or loads a
   * saved state into before every use (so it may be one instance, an LLM and its worker,
   * returned each time). Default: a new linear softmax policy of the base configuration.
   */
  policy?(seed: number): Promise<TrainablePolicy>;
  /** Cumulative counters of the domain's own (e.g. the LLM policy's acting and update seconds). */
  counters?(): Record<string, number>;
  /**
   * Makes the start from the untrained `policy` (instead of the loop's warm start with
   * `BudgetDomain.start.warmStart`), e.g. cloning for a number of epochs chosen elsewhere.
   */
  clone?(
    policy: TrainablePolicy,
    seed: number,
    demonstrations: readonly Trajectory[],
  ): Promise<void>;
  /** Called after every training iteration, before the points it reached are evaluated. */
  onIteration?(iteration: BudgetIteration): Promise<void>;
}

/** Runs `run` on `domain`, or with no condition writes the report from the results file. */
export async function runBudgets(domain: BudgetDomain, run: BudgetRun): Promise<void> {
  const { seeds, conditions, marks, s2rBudget, gapTaskCount, scratch, resultsDirectory } = run;
  const finalBudget = marks.at(-1)!;
  const splits = Object.keys(domain.evaluation);
  const { maxSteps } = domain;
  const { entropyCoefficient, learningRate } = run.trainer;
  const baseConfig = (seed: number): DreamGymConfigInput => {
    const config = domain.baseConfig(seed);
    return {
      ...config,
      trainer: {
        ...config.trainer,
        ...(learningRate !== undefined && { learningRate }),
        ...(entropyCoefficient !== undefined && {
          loss: { ...config.trainer?.loss, entropyCoefficient },
        }),
      },
    };
  };
  await mkdir(scratch, { recursive: true });
  await mkdir(resultsDirectory, { recursive: true });
  const resultsFile = join(resultsDirectory, `${domain.benchmark}.json`);
  let curves = await readCurves(resultsFile);
  /** The points this process measures: the only ones it writes over the results file's. */
  const measuredHere = new Set<CurvePoint>();
  const pointOf = (condition: BudgetCondition, seed: number, mark: number) =>
    findPoint(curves, condition, seed, mark);
  const settings: BudgetSettings = {
    splits,
    labels: domain.labels,
    finalBudget,
    s2rBudget,
    marks,
    gapTaskCount,
    startHow: domain.start.how,
  };

  async function writeResults(): Promise<void> {
    // Another process (another seed or condition, with the same results folder) may have
    // written the file since this one read it: keep its points, replace only this one's.
    const mine = [...measuredHere];
    const elsewhere = (await readCurves(resultsFile)).filter(
      (point) => !findPoint(mine, point.condition, point.seed, point.mark),
    );
    curves = [...elsewhere, ...measuredHere];
    curves.sort(
      (a, b) =>
        BUDGET_CONDITIONS.indexOf(a.condition) - BUDGET_CONDITIONS.indexOf(b.condition) ||
        a.seed - b.seed ||
        a.realTransitions - b.realTransitions,
    );
    const document = {
      benchmark: domain.benchmark,
      date: new Date().toISOString(),
      protocol: {
        ...domain.protocol,
        config: baseConfig(seeds[0]!),
        marks,
        s2rBudget,
        evaluation: {
          ...domain.evaluation,
          maxSteps,
          greedy: 'every point',
          sampled: 'final points',
          gapTasks: gapTaskCount,
        },
        dreamgymUpdates:
          'as many iterations as real-env GRPO of the same seed made to reach the final budget, or as many as --dreamgym-updates gave (points with `updatesGiven`)',
      },
      start: {
        how: domain.start.how,
        why: domain.start.why,
        bySeed: curves.filter((point) => point.condition === 'start'),
      },
      curves,
      table: budgetTableRecord(curves, settings),
      claims: budgetClaims(curves, settings),
      ...(await domain.document?.(curves)),
    };
    const temporary = `${resultsFile}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
    await rename(temporary, resultsFile);
    await writeFile(
      join(resultsDirectory, `${domain.benchmark}-report.html`),
      renderBudgetReport(curves, settings),
    );
    await domain.onResultsWritten?.();
  }

  if (conditions.length === 0) {
    await writeResults();
    for (const line of summaryLines(curves, settings)) log(line);
    return;
  }

  const loaded = await domain.load();
  const { setup } = loaded;
  const offlineBuffer = await writeOfflineBuffer(setup, scratch);
  log(`offline buffer: ${offlineBuffer.size} transitions`);
  const realPool = new EnvironmentPool(() => loaded.realEnvironment());
  const newPolicy = async (seed: number): Promise<TrainablePolicy> =>
    loaded.policy
      ? loaded.policy(seed)
      : createLinearSoftmaxPolicy(parseDreamGymConfig(baseConfig(seed)));
  /** The embedded experience model, built afresh: one run's `learn` never reaches another's. */
  const freshModels = () =>
    embeddedExperienceModel(setup.adapter, setup.offlineTrajectories, domain.experienceModel);

  /** The policy's success on `tasks` in the real environment. */
  async function evaluateReal(
    policy: TrainablePolicy,
    options: { tasks: readonly Task[]; greedy: boolean; seed: number; label: string },
  ): Promise<EvaluationMetrics> {
    const { metrics } = await evaluatePolicy({
      policy,
      onEpisode: reportEpisodes(
        `${options.label} (real, ${options.greedy ? 'greedy' : 'sampled'})`,
      ),
      environmentFactory: () => realPool.lease(),
      environment: 'real',
      tasks: options.tasks,
      maxSteps,
      greedy: options.greedy,
      concurrency: baseConfig(options.seed).realConcurrency!,
      random: new SeededRandom(options.seed + 1000),
      candidateActions: (observation, history) =>
        setup.adapter.candidateActions(observation, history),
    });
    return metrics;
  }

  /**
   * The policy's own episodes on the same training tasks in the synthetic environment (a
   * fresh experience model) and the real one, with its synthetic successes replayed on the
   * real environment (precision) and the model's teacher-forced false successes.
   */
  async function measureGap(
    policy: TrainablePolicy,
    tasks: readonly Task[],
    seed: number,
    label: string,
  ): Promise<NonNullable<CurvePoint['syntheticToRealGap']>> {
    const config = baseConfig(seed);
    const gapModel = freshModels();
    const gapBuffer = await offlineBuffer.fresh('gap');
    let shown = 0;
    try {
      const report = await measureOnPolicyFidelity({
        policy,
        tasks,
        adapter: setup.adapter,
        syntheticEnvironment: () =>
          syntheticEnvironmentFromConfig(config, {
            experienceModel: gapModel.experienceModel,
            retriever: gapBuffer,
            adapter: setup.adapter,
          }),
        realEnvironment: () => realPool.lease(),
        experienceModel: gapModel.experienceModel,
        retriever: gapBuffer,
        maxSteps,
        greedy: true,
        random: new SeededRandom(seed + 1000),
        concurrency: config.concurrency ?? 8,
        realConcurrency: config.realConcurrency!,
        onProgress: ({ phase, done, total }) => {
          if (done === total || Date.now() - shown > 30_000) {
            shown = Date.now();
            log(`${label}: ${phase} ${done}/${total}`);
          }
        },
      });
      const precision = report.syntheticSuccessPrecision;
      return {
        tasks: tasks.length,
        synthetic: report.syntheticSuccess.rate,
        real: report.realSuccess.rate,
        precision: {
          rate: precision.rate,
          interval: precision.interval95,
          replayed: precision.replayed,
          reallySucceeded: precision.reallySucceeded,
        },
        falseSuccessRate: report.falseSuccessRate,
        trueSuccessRecall: report.trueSuccessRecall,
      };
    } finally {
      await gapBuffer.close();
    }
  }

  /** Where a condition's curve points keep their policies and what they cost. */
  const pointsRoot = domain.pointsDirectory ?? join(scratch, 'points');
  const pointDirectory = (condition: BudgetCondition, seed: number, realTransitions: number) =>
    join(pointsRoot, `${condition}-${seed}`, String(realTransitions));

  /**
   * Trains `condition` from the policy in `from` with `config` in its run folder (resumed when
   * one is there, and extended when `config` raises its budget or iterations), keeping the
   * policy as the curve points `pointsReached` names for an iteration (given the run's metrics
   * so far, this iteration's last) are reached. The loop
   * waits for the copy before it saves the iteration's checkpoint, so a resumed run keeps
   * exactly the points its checkpoint does not cover.
   */
  async function train(
    condition: BudgetCondition,
    seed: number,
    config: DreamGymConfigInput,
    from: string,
    pointsReached: (records: readonly IterationMetrics[]) => number[],
    onPointKept?: (point: number) => Promise<void>,
  ): Promise<void> {
    const runDirectory = join(scratch, `run-${condition}-${seed}`);
    const policy = await newPolicy(seed);
    await policy.loadState(from);
    const models = freshModels();
    let counted = loaded.counters?.();
    const buffer = await offlineBuffer.fresh(`${condition}-${seed}`);
    const started = performance.now();
    const resumed = (await DreamGymLoop.latestCheckpoint(runDirectory)) !== undefined;
    if (resumed) log(`${condition} seed ${seed}: resuming ${runDirectory}`);
    try {
      await new DreamGymLoop({
        config,
        components: {
          adapter: setup.adapter,
          policy,
          experienceModel: models.experienceModel,
          replayBuffer: buffer,
          seedTasks: setup.seedTasks,
          realEnvironment: () => realPool.lease(),
          log,
          onIteration: async (metrics, progress) => {
            log(
              `${condition} seed ${seed} ${progress.done}/${progress.total} ${metrics.phase}: training success ${(100 * metrics.successRate).toFixed(1)}%, real ${metrics.realTransitions}, synthetic ${metrics.syntheticTransitions}`,
            );
            if (loaded.onIteration) {
              const now = loaded.counters?.() ?? {};
              const counters = Object.fromEntries(
                Object.entries(now).map(([key, value]) => [key, value - (counted?.[key] ?? 0)]),
              );
              await loaded.onIteration({ condition, seed, metrics, counters });
            }
            const records = await runMetrics(runDirectory);
            for (const point of pointsReached(records)) {
              const directory = pointDirectory(condition, seed, point);
              await policy.saveState(join(directory, 'policy'));
              const cost: PointCost = {
                realTransitions: metrics.realTransitions,
                syntheticTransitions: metrics.syntheticTransitions,
                updates: metrics.iteration + 1,
                wallSeconds: records.reduce((total, record) => total + record.seconds, 0),
              };
              await writeCost(directory, cost);
              log(`${condition} seed ${seed}: kept the policy at ${point} real transitions`);
              await onPointKept?.(point);
            }
            // After the points' evaluations: the next iteration's counters leave them out.
            counted = loaded.counters?.();
          },
        },
        runDirectory,
        // A run stopped at a smaller final budget (`--marks`) is extended to this one.
      }).run({ resume: true, extend: true });
    } finally {
      await buffer.close();
    }
    log(
      `${condition} seed ${seed}: trained (${((performance.now() - started) / 60_000).toFixed(1)} min this time)`,
    );
  }

  /** The starting policy of `seed`, made once into the scratch folder. */
  async function startPolicy(seed: number): Promise<string> {
    const directory = pointDirectory('start', seed, 0);
    if (await readCost(directory)) return join(directory, 'policy');
    const policy = await newPolicy(seed);
    if (loaded.clone) {
      await loaded.clone(policy, seed, loaded.demonstrations);
    } else {
      await cloneInLoop(policy, seed);
    }
    await policy.saveState(join(directory, 'policy'));
    await writeCost(directory, {
      realTransitions: 0,
      syntheticTransitions: 0,
      updates: 0,
      wallSeconds: 0,
    });
    return join(directory, 'policy');
  }

  /** The loop's warm start (`domain.start.warmStart`) into `policy`. */
  async function cloneInLoop(policy: TrainablePolicy, seed: number): Promise<void> {
    const result = await new DreamGymLoop({
      config: { ...baseConfig(seed), iterations: 0, warmStart: domain.start.warmStart },
      components: {
        adapter: setup.adapter,
        policy,
        experienceModel: setup.experienceModel,
        replayBuffer: setup.replayBuffer,
        seedTasks: setup.seedTasks,
        demonstrations: [...loaded.demonstrations],
        log,
      },
      runDirectory: join(scratch, `run-start-${seed}`),
    }).run({ resume: true });
    const cloning = result.warmStart;
    log(
      `start seed ${seed}: ${cloning ? `behaviour cloning kept epoch ${cloning.bestEpoch} of ${cloning.epochs.length} on ${cloning.trainSamples} demonstrated steps, held-out NLL ${cloning.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${cloning.bestHeldOutNegativeLogLikelihood.toFixed(3)}` : 'cloned earlier'}`,
    );
  }

  /** A real-env RL condition: snapshots at every mark, each evaluated when it is kept. */
  async function trainReal(condition: 'real-grpo' | 'real-ppo', seed: number): Promise<void> {
    if (await readCost(pointDirectory(condition, seed, finalBudget))) return;
    const from = await startPolicy(seed);
    const base = baseConfig(seed);
    await train(
      condition,
      seed,
      {
        ...base,
        algorithm: condition === 'real-grpo' ? 'grpo' : 'ppo',
        iterations: 0,
        // Real-env RL has no experience model: nothing would read real steps in the buffer.
        simToReal: { ...base.simToReal!, realTransitionBudget: finalBudget, addToBuffer: false },
      },
      from,
      (records) => marksCrossed(records, marks),
      // Each point is measured as it is reached, so a run stopped before its final budget has
      // its earlier points in the results.
      (mark) => evaluatePoint(condition, seed, mark, mark === finalBudget),
    );
  }

  /**
   * Real-env GRPO's updates to reach the final budget for `seed`: DreamGym makes as many (or
   * `--dreamgym-updates`). From the scratch folder, or from the results file when the scratch
   * folder that trained it is gone.
   */
  async function updatesAtFinalBudget(seed: number): Promise<number> {
    if (run.dreamgymUpdates !== undefined) return run.dreamgymUpdates;
    const cost =
      (await readCost(pointDirectory('real-grpo', seed, finalBudget))) ??
      pointOf('real-grpo', seed, finalBudget);
    if (!cost) {
      throw new Error(
        `DreamGym makes as many updates as real-env GRPO made to reach ${finalBudget} real transitions: run real-grpo for seed ${seed} first.`,
      );
    }
    return cost.updates;
  }

  async function trainSynthetic(condition: BudgetCondition, seed: number): Promise<void> {
    if (await readCost(pointDirectory(condition, seed, 0))) return;
    const updates = await updatesAtFinalBudget(seed);
    const from = await startPolicy(seed);
    await train(
      condition,
      seed,
      SYNTHETIC_VARIANTS[condition]!({ ...baseConfig(seed), iterations: updates }),
      from,
      (records) => (records.length === updates ? [0] : []),
    );
    if (run.dreamgymUpdates !== undefined) {
      const directory = pointDirectory(condition, seed, 0);
      await writeCost(directory, { ...(await readCost(directory))!, updatesGiven: true });
    }
  }

  async function trainSimToReal(seed: number): Promise<void> {
    if (await readCost(pointDirectory('dreamgym-s2r', seed, s2rBudget))) return;
    await trainSynthetic('dreamgym', seed);
    const dreamgym = pointDirectory('dreamgym', seed, 0);
    const synthetic = (await readCost(dreamgym))!;
    const base = baseConfig(seed);
    await train(
      'dreamgym-s2r',
      seed,
      {
        ...base,
        iterations: 0,
        simToReal: { ...base.simToReal!, realTransitionBudget: s2rBudget },
      },
      join(dreamgym, 'policy'),
      (records) => marksCrossed(records, [s2rBudget]),
    );
    // The S2R point counts the synthetic phase it started from.
    const directory = pointDirectory('dreamgym-s2r', seed, s2rBudget);
    const real = (await readCost(directory))!;
    await writeCost(directory, {
      realTransitions: real.realTransitions,
      syntheticTransitions: synthetic.syntheticTransitions,
      updates: synthetic.updates + real.updates,
      wallSeconds: synthetic.wallSeconds + real.wallSeconds,
      ...(synthetic.updatesGiven && { updatesGiven: true }),
    });
  }

  /** Evaluates what the point still lacks, writing the results file after every measurement. */
  async function evaluatePoint(
    condition: BudgetCondition,
    seed: number,
    realTransitions: number,
    final: boolean,
  ): Promise<void> {
    const directory = pointDirectory(condition, seed, realTransitions);
    const cost = (await readCost(directory))!;
    let point = pointOf(condition, seed, realTransitions);
    if (!point) {
      point = { condition, seed, mark: realTransitions, ...cost, final };
      curves.push(point);
    }
    measuredHere.add(point);
    Object.assign(point, cost, { final });
    const policy = await newPolicy(seed);
    await policy.loadState(join(directory, 'policy'));
    const label = `${condition} seed ${seed} at ${realTransitions} real`;
    const real = (split: string, greedy: boolean) =>
      evaluateReal(policy, {
        tasks: loaded.evaluationSets[split]!,
        greedy,
        seed,
        label: `${label} ${split}`,
      });
    for (const split of splits) {
      if (greedyOn(point, split)) continue;
      setGreedy(point, split, splitResult(await real(split, true)));
      await writeResults();
    }
    if (!final) return;
    point.sampled ??= {};
    for (const split of splits) {
      if (point.sampled[split]) continue;
      point.sampled[split] = splitResult(await real(split, false));
      await writeResults();
    }
    const gapTasks = new SeededRandom(seed)
      .fork('gap-tasks')
      .shuffle([...setup.seedTasks])
      .slice(0, gapTaskCount);
    const gap = point.syntheticToRealGap;
    if (gap?.synthetic === undefined || gap.real === undefined) {
      point.syntheticToRealGap = await measureGap(
        policy,
        gapTasks,
        seed,
        `${label} ${domain.labels.trainingTasks}`,
      );
      await writeResults();
    }
  }

  try {
    for (const seed of seeds) {
      for (const condition of conditions) {
        const last = finalMark(condition, settings);
        const points = (condition.startsWith('real-') ? marks : [last]).map(
          (mark) => [mark, mark === last] as const,
        );
        // Measured in full (perhaps by a run whose scratch folder is gone): nothing to do.
        if (
          points.every(([mark, final]) => measured(pointOf(condition, seed, mark), final, splits))
        ) {
          log(`== seed ${seed}: ${condition} is measured`);
          continue;
        }
        log(`== seed ${seed}: ${condition}`);
        switch (condition) {
          case 'start':
            await startPolicy(seed);
            break;
          case 'real-grpo':
          case 'real-ppo':
            await trainReal(condition, seed);
            break;
          case 'dreamgym-s2r':
            await trainSimToReal(seed);
            break;
          default:
            await trainSynthetic(condition, seed);
        }
        for (const [mark, final] of points) await evaluatePoint(condition, seed, mark, final);
      }
    }
    await writeResults();
  } finally {
    await realPool.closeAll();
    await loaded.close();
  }
  for (const line of summaryLines(curves, settings)) log(line);
}

const SYNTHETIC_VARIANTS: Partial<
  Record<BudgetCondition, (config: DreamGymConfigInput) => DreamGymConfigInput>
> = {
  dreamgym: (config) => config,
  'no-curriculum': (config) => ({
    ...config,
    curriculum: { ...config.curriculum, enabled: false },
  }),
  'no-replay': (config) => ({ ...config, replayWriteBack: false }),
  'no-retrieval': (config) => ({ ...config, retrieval: { enabled: false, k: 8 } }),
};

/** The curve points of a results file (none when there is no file yet). */
async function readCurves(resultsFile: string): Promise<CurvePoint[]> {
  if (!existsSync(resultsFile)) return [];
  return (
    (JSON.parse(await readFile(resultsFile, 'utf8')) as { curves?: CurvePoint[] }).curves ?? []
  );
}
