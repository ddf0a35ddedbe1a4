/**
 * The paper's experiment at the paper's budgets on ALFWorld (issue 29): greedy real success
 * against the real transitions a condition used, as learning curves.
 *
 *   start           the starting policy: behaviour cloning on the first 500 expert
 *                   demonstrations (the main job's start), chosen before any result
 *   real-grpo       the start, then GRPO in the real engine; snapshots at 3K, 10K, 30K and
 *                   80K real transitions
 *   real-ppo        the same with PPO (the paper's second real-env baseline)
 *   dreamgym        the start, then DreamGym with 0 real transitions, for as many updates
 *                   (iterations) as real-env GRPO of the same seed made to reach 80K
 *   dreamgym-s2r    the dreamgym policy, then GRPO in the real engine with 5K real transitions
 *   no-curriculum, no-replay, no-retrieval   dreamgym with one part switched off
 *
 * Every condition uses the main job's configuration (`configs/alfworld-main.json`: linear
 * softmax policy, GRPO at learning rate 0.01 with episode weighting), the embedded experience
 * model (retrieval with world memory, outcomes judged by the `OutcomeJudge`) learned from the
 * expert trajectories and the cached exploration episodes, built afresh for every condition so
 * that what one run's real episodes teach it (`learn`) never reaches another. Each point is
 * evaluated greedily on the real engine on all 140 valid_seen and 134 valid_unseen games; the
 * final points also sampled, and on the same 48 training games in the synthetic environment
 * and on the real engine (the sim-to-real gap).
 *
 * Resumable: run folders, checkpoints and curve points' policies live in `--scratch DIR`
 * (default scratch/alfworld-budgets), every evaluation is written to the results file as it
 * finishes, and points measured in full there are not trained again.
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/alfworld-budgets.ts \
 *     [--seeds 1,2] [--conditions start,real-grpo,dreamgym,dreamgym-s2r] [--scratch DIR] \
 *     [--marks 3000,10000,30000,80000] [--s2r-budget 5000] [--seen 140] [--unseen 134] \
 *     [--gap-tasks 48] [--servers 2] [--out DIR]
 * `--conditions ''` writes the report from the results file alone. A smoke run at a small
 * scale (`--marks 300,600 --s2r-budget 200 --seen 8 --unseen 8 --gap-tasks 4`) needs its
 * own `--scratch` and `--out`: points are keyed by condition, seed and real transitions.
 * Writes alfworld-budgets.json and alfworld-budgets-report.html into `--out DIR` (default
 * benchmarks/results).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { embeddedExperienceModel, reportEpisodes, setUpDomain } from '@dreamgym/cli';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  DreamGymLoop,
  type EvaluationMetrics,
  evaluatePolicy,
  type IterationMetrics,
  type LinearSoftmaxPolicy,
  parseDreamGymConfig,
  SeededRandom,
  syntheticEnvironmentFromConfig,
  type Task,
} from '@dreamgym/core';
import { EnvironmentPool } from '@dreamgym/core/rollout';
import { log, writeOfflineBuffer } from './alfworld-protocol.js';
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
  type BudgetSettings,
  budgetClaims,
  budgetTable,
  type CurvePoint,
  renderBudgetReport,
  summaryLines,
} from './budgets-report.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '1,2' },
    conditions: { type: 'string', default: 'start,real-grpo,dreamgym,dreamgym-s2r' },
    marks: { type: 'string', default: '3000,10000,30000,80000' },
    's2r-budget': { type: 'string', default: '5000' },
    seen: { type: 'string', default: '140' },
    unseen: { type: 'string', default: '134' },
    'gap-tasks': { type: 'string', default: '48' },
    servers: { type: 'string', default: '2' },
    scratch: { type: 'string' },
    out: { type: 'string' },
  },
});

const root = resolve(import.meta.dirname, '..');
const dataRoot = process.env.DREAMGYM_DATA_DIR ?? join(root, '..', 'shared', 'data');
if (!existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error(
    `${join(dataRoot, 'alfworld')} does not exist: set DREAMGYM_DATA_DIR to the folder holding alfworld/ (e.g. ../shared/data).`,
  );
}
const data = resolve(dataRoot, 'alfworld');
const positiveIntegers = (flag: string, text: string) =>
  text
    .split(',')
    .filter(Boolean)
    .map((item) => {
      const value = Number(item);
      if (!Number.isInteger(value) || value < 0) {
        throw new Error(`--${flag}: ${item} is not a whole number.`);
      }
      return value;
    });
const seeds = positiveIntegers('seeds', values.seeds!);
const marks = positiveIntegers('marks', values.marks!).sort((a, b) => a - b);
const finalBudget = marks.at(-1)!;
const s2rBudget = positiveIntegers('s2r-budget', values['s2r-budget']!)[0]!;
const servers = positiveIntegers('servers', values.servers!)[0]!;
const gapTaskCount = positiveIntegers('gap-tasks', values['gap-tasks']!)[0]!;
const conditions = values.conditions!.split(',').filter(Boolean) as BudgetCondition[];
for (const condition of conditions) {
  if (!BUDGET_CONDITIONS.includes(condition)) {
    throw new Error(
      `--conditions: unknown condition ${condition} (known: ${BUDGET_CONDITIONS.join(', ')}).`,
    );
  }
}
const scratch = resolve(values.scratch ?? join(root, 'scratch', 'alfworld-budgets'));
const resultsDirectory = values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results');
await mkdir(scratch, { recursive: true });
await mkdir(resultsDirectory, { recursive: true });
const resultsFile = join(resultsDirectory, 'alfworld-budgets.json');

// The main job's configuration is every condition's: its trainer was chosen on training games.
const mainJob = JSON.parse(
  await readFile(join(root, 'configs', 'alfworld-main.json'), 'utf8'),
) as DreamGymConfigInput & { setup?: unknown };
const { setup: _setup, warmStart, evaluation: _evaluation, ...mainLoop } = mainJob;
const demonstrations = warmStart?.behaviourCloning?.maxTrajectories ?? 500;
const maxSteps = mainLoop.maxSteps ?? 30;
const baseConfig = (seed: number): DreamGymConfigInput => ({
  ...mainLoop,
  seed,
  realConcurrency: servers,
  evaluation: { every: 0, environments: [] },
  simToReal: { realTransitionBudget: 0, tasksPerIteration: 8, rolloutsPerTask: 4 },
});
const EXPLORATION = { episodes: 200, seed: 0, maxSteps: 30 };

const START_HOW = `behaviour cloning of the linear softmax policy on the first ${demonstrations} of the expert demonstrations (the main job's start)`;
const START_WHY =
  'Chosen before any result of this experiment, as the paper starts from instruction-tuned models that succeed sometimes: it succeeds on about one valid_seen game in ten (the main job measured 10.0% greedy), so every method has successes to learn from and room to improve, where cloning all demonstrations leaves little for RL to find and the untrained policy almost never succeeds.';

// ---------------------------------------------------------------- results file

interface Results {
  curves: CurvePoint[];
}
const results: Results = existsSync(resultsFile)
  ? { curves: (JSON.parse(await readFile(resultsFile, 'utf8')) as Results).curves ?? [] }
  : { curves: [] };

const pointOf = (condition: BudgetCondition, seed: number, mark: number) =>
  findPoint(results.curves, condition, seed, mark);

const reportSettings: BudgetSettings = {
  finalBudget,
  s2rBudget,
  marks,
  gapTaskCount,
  startHow: START_HOW,
};

// `--conditions ''`: the summary and the report from the results file alone (no domain loaded).
if (conditions.length === 0) {
  await writeResults();
  for (const line of summaryLines(results.curves, reportSettings)) log(line);
  process.exit(0);
}

// ---------------------------------------------------------------- domain and evaluation

const setup = await setUpDomain(
  {
    domain: 'alfworld',
    data,
    evalSplit: 'valid_seen',
    evalTasks: Number(values.seen),
    exploration: EXPLORATION,
  },
  log,
);
const unseen: Task[] = [];
for await (const task of setup.adapter.datasets.tasks.load(data, {
  splits: ['valid_unseen'],
  limit: Number(values.unseen),
})) {
  unseen.push(task);
}
const evaluationSets = { valid_seen: setup.evaluationTasks, valid_unseen: unseen };
type Split = keyof typeof evaluationSets;
const offlineBuffer = await writeOfflineBuffer(setup, scratch);
log(`offline buffer: ${offlineBuffer.size} transitions (expert and exploration)`);
// A generous request timeout: on a loaded machine a reset can take more than a minute.
const realPool = new EnvironmentPool(() =>
  setup.adapter.connectReal({ requestTimeoutMs: 300_000 }),
);
const newPolicy = (seed: number) =>
  createLinearSoftmaxPolicy(parseDreamGymConfig(baseConfig(seed)));

async function evaluate(
  policy: LinearSoftmaxPolicy,
  options: {
    environment: 'real' | 'synthetic';
    tasks: readonly Task[];
    greedy: boolean;
    seed: number;
    label: string;
  },
): Promise<EvaluationMetrics> {
  const { environment } = options;
  const gapModel = environment === 'synthetic' ? freshModels() : undefined;
  const gapBuffer = environment === 'synthetic' ? await offlineBuffer.fresh('gap') : undefined;
  try {
    const { metrics } = await evaluatePolicy({
      policy,
      onEpisode: reportEpisodes(
        `${options.label} (${environment}, ${options.greedy ? 'greedy' : 'sampled'})`,
      ),
      environmentFactory:
        environment === 'real'
          ? () => realPool.lease()
          : () =>
              syntheticEnvironmentFromConfig(baseConfig(options.seed), {
                experienceModel: gapModel!.experienceModel,
                retriever: gapBuffer!,
                adapter: setup.adapter,
              }),
      environment,
      tasks: options.tasks,
      maxSteps,
      greedy: options.greedy,
      concurrency: environment === 'real' ? servers : 8,
      random: new SeededRandom(options.seed + 1000),
      candidateActions: (observation, history) =>
        setup.adapter.candidateActions(observation, history),
    });
    return metrics;
  } finally {
    await gapBuffer?.close();
  }
}

/** The embedded experience model, built afresh: one run's `learn` never reaches another's. */
function freshModels() {
  return embeddedExperienceModel(setup.adapter, setup.offlineTrajectories, {});
}

// ---------------------------------------------------------------- training

/** Where a condition's curve points keep their policies and what they cost. */
const pointDirectory = (condition: BudgetCondition, seed: number, realTransitions: number) =>
  join(scratch, `points`, `${condition}-${seed}`, String(realTransitions));

/**
 * Trains `condition` from the policy in `from` with `config` in its run folder (resumed when
 * one is there), keeping the policy as the curve points `pointsReached` names for an
 * iteration (given the run's metrics so far, this iteration's last) are reached. The loop
 * waits for the copy before it saves the iteration's checkpoint, so a resumed run keeps
 * exactly the points its checkpoint does not cover.
 */
async function train(
  condition: BudgetCondition,
  seed: number,
  config: DreamGymConfigInput,
  from: string,
  pointsReached: (records: readonly IterationMetrics[]) => number[],
): Promise<void> {
  const runDirectory = join(scratch, `run-${condition}-${seed}`);
  const policy = newPolicy(seed);
  await policy.loadState(from);
  const models = freshModels();
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
          }
        },
      },
      runDirectory,
    }).run({ resume: true });
  } finally {
    await buffer.close();
  }
  log(
    `${condition} seed ${seed}: trained (${((performance.now() - started) / 60_000).toFixed(1)} min this time)`,
  );
}

/** The starting policy of `seed`, cloned once into the scratch folder. */
async function startPolicy(seed: number): Promise<string> {
  const directory = pointDirectory('start', seed, 0);
  if (await readCost(directory)) return join(directory, 'policy');
  const runDirectory = join(scratch, `run-start-${seed}`);
  const policy = newPolicy(seed);
  const result = await new DreamGymLoop({
    config: {
      ...baseConfig(seed),
      iterations: 0,
      warmStart: { behaviourCloning: { maxTrajectories: demonstrations } },
    },
    components: {
      adapter: setup.adapter,
      policy,
      experienceModel: setup.experienceModel,
      replayBuffer: setup.replayBuffer,
      seedTasks: setup.seedTasks,
      demonstrations: setup.offlineTrajectories,
      log,
    },
    runDirectory,
  }).run({ resume: true });
  log(
    `start seed ${seed}: behaviour cloning on ${demonstrations} demonstrations, held-out NLL ${result.warmStart?.bestHeldOutNegativeLogLikelihood.toFixed(3) ?? '(cloned earlier)'}`,
  );
  await policy.saveState(join(directory, 'policy'));
  const cost: PointCost = {
    realTransitions: 0,
    syntheticTransitions: 0,
    updates: 0,
    wallSeconds: 0,
  };
  await writeCost(directory, cost);
  return join(directory, 'policy');
}

/** A real-env RL condition: snapshots at every mark. */
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
  );
}

/**
 * Real-env GRPO's updates to reach the final budget for `seed`: DreamGym makes as many. From
 * the scratch folder, or from the results file when the scratch folder that trained it is gone.
 */
async function updatesAtFinalBudget(seed: number): Promise<number> {
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

const SYNTHETIC_VARIANTS: Record<string, (config: DreamGymConfigInput) => DreamGymConfigInput> = {
  dreamgym: (config) => config,
  'no-curriculum': (config) => ({
    ...config,
    curriculum: { ...config.curriculum, enabled: false },
  }),
  'no-replay': (config) => ({ ...config, replayWriteBack: false }),
  'no-retrieval': (config) => ({ ...config, retrieval: { enabled: false, k: 8 } }),
};

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
    { ...base, iterations: 0, simToReal: { ...base.simToReal!, realTransitionBudget: s2rBudget } },
    join(dreamgym, 'policy'),
    (records) => marksCrossed(records, [s2rBudget]),
  );
  // The S2R point counts the synthetic phase it started from.
  const directory = pointDirectory('dreamgym-s2r', seed, s2rBudget);
  const real = (await readCost(directory))!;
  const cost: PointCost = {
    realTransitions: real.realTransitions,
    syntheticTransitions: synthetic.syntheticTransitions,
    updates: synthetic.updates + real.updates,
    wallSeconds: synthetic.wallSeconds + real.wallSeconds,
  };
  await writeCost(directory, cost);
}

// ---------------------------------------------------------------- evaluation of the points

/** Evaluates what the point still lacks, writing the results file after every measurement. */
async function evaluatePoint(
  condition: BudgetCondition,
  seed: number,
  realTransitions: number,
  final: boolean,
) {
  const directory = pointDirectory(condition, seed, realTransitions);
  const cost = (await readCost(directory))!;
  let point = pointOf(condition, seed, realTransitions);
  if (!point) {
    point = { condition, seed, mark: realTransitions, ...cost, final };
    results.curves.push(point);
  }
  Object.assign(point, cost, { final });
  const policy = newPolicy(seed);
  await policy.loadState(join(directory, 'policy'));
  const label = `${condition} seed ${seed} at ${realTransitions} real`;
  for (const split of Object.keys(evaluationSets) as Split[]) {
    if (point[split]) continue;
    const metrics = await evaluate(policy, {
      environment: 'real',
      tasks: evaluationSets[split],
      greedy: true,
      seed,
      label: `${label} ${split}`,
    });
    point[split] = splitResult(metrics);
    await writeResults();
  }
  if (!final) return;
  point.sampled ??= {};
  for (const split of Object.keys(evaluationSets) as Split[]) {
    if (point.sampled[split]) continue;
    const metrics = await evaluate(policy, {
      environment: 'real',
      tasks: evaluationSets[split],
      greedy: false,
      seed,
      label: `${label} ${split}`,
    });
    point.sampled[split] = splitResult(metrics);
    await writeResults();
  }
  const gapTasks = new SeededRandom(seed)
    .fork('gap-tasks')
    .shuffle([...setup.seedTasks])
    .slice(0, gapTaskCount);
  point.syntheticToRealGap ??= { tasks: gapTasks.length };
  for (const environment of ['synthetic', 'real'] as const) {
    if (point.syntheticToRealGap[environment] !== undefined) continue;
    const metrics = await evaluate(policy, {
      environment,
      tasks: gapTasks,
      greedy: true,
      seed,
      label: `${label} training games`,
    });
    point.syntheticToRealGap[environment] = metrics.successRate;
    await writeResults();
  }
}

async function writeResults(): Promise<void> {
  results.curves.sort(
    (a, b) =>
      BUDGET_CONDITIONS.indexOf(a.condition) - BUDGET_CONDITIONS.indexOf(b.condition) ||
      a.seed - b.seed ||
      a.realTransitions - b.realTransitions,
  );
  const document = {
    benchmark: 'alfworld-budgets',
    date: new Date().toISOString(),
    protocol: {
      policy:
        'LinearSoftmaxPolicy (2^18 hashed features), the main job configuration (configs/alfworld-main.json)',
      experienceModel:
        'the embedded model: retrieval over the expert trajectories and 200 cached exploration episodes, world memory, outcomes judged by the OutcomeJudge; built afresh per condition',
      config: baseConfig(seeds[0]!),
      marks,
      s2rBudget,
      evaluation: {
        valid_seen: Number(values.seen),
        valid_unseen: Number(values.unseen),
        maxSteps,
        greedy: 'every point',
        sampled: 'final points',
        gapTasks: gapTaskCount,
      },
      dreamgymUpdates:
        'as many iterations as real-env GRPO of the same seed made to reach the final budget',
    },
    start: {
      how: START_HOW,
      why: START_WHY,
      bySeed: results.curves.filter((point) => point.condition === 'start'),
    },
    curves: results.curves,
    table: budgetTable(results.curves),
    claims: budgetClaims(results.curves, reportSettings),
  };
  const temporary = `${resultsFile}.tmp`;
  await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
  await rename(temporary, resultsFile);
  await writeFile(
    join(resultsDirectory, 'alfworld-budgets-report.html'),
    renderBudgetReport(results.curves, reportSettings),
  );
}

// ---------------------------------------------------------------- the run

try {
  for (const seed of seeds) {
    for (const condition of conditions) {
      const points = condition.startsWith('real-')
        ? marks.map((mark) => [mark, mark === finalBudget] as const)
        : ([[condition === 'dreamgym-s2r' ? s2rBudget : 0, true]] as const);
      // Measured in full (perhaps by a run whose scratch folder is gone): nothing to do.
      if (points.every(([mark, final]) => measured(pointOf(condition, seed, mark), final))) {
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
}
for (const line of summaryLines(results.curves, reportSettings)) log(line);
