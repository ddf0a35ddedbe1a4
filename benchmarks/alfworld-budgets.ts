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
 * Everything is resumable: training runs keep their run folders and checkpoints in
 * `--scratch DIR` (default scratch/alfworld-budgets), a curve point's policy is kept there as
 * it is reached, and every evaluation is written to the results file as it finishes, so a run
 * stopped at any moment continues where it was with the same command.
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
import {
  embeddedExperienceModel,
  escapeHtml,
  htmlPage,
  lineChart,
  reportEpisodes,
  setUpDomain,
} from '@dreamgym/cli';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  DreamGymLoop,
  EnvironmentPool,
  type EvaluationMetrics,
  evaluatePolicy,
  type IterationMetrics,
  type LinearSoftmaxPolicy,
  parseDreamGymConfig,
  SeededRandom,
  SyntheticEnvironment,
  type Task,
  wilsonInterval95,
} from '@dreamgym/core';
import { log, writeOfflineBuffer } from './alfworld-protocol.js';

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
const CONDITIONS = [
  'start',
  'real-grpo',
  'real-ppo',
  'dreamgym',
  'dreamgym-s2r',
  'no-curriculum',
  'no-replay',
  'no-retrieval',
] as const;
type Condition = (typeof CONDITIONS)[number];
const conditions = values.conditions!.split(',').filter(Boolean) as Condition[];
for (const condition of conditions) {
  if (!CONDITIONS.includes(condition)) {
    throw new Error(
      `--conditions: unknown condition ${condition} (known: ${CONDITIONS.join(', ')}).`,
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

interface SplitResult {
  successRate: number;
  interval: [number, number];
  episodes: number;
}
interface CurvePoint {
  condition: Condition;
  seed: number;
  realTransitions: number;
  syntheticTransitions: number;
  /** Policy updates (loop iterations) from the starting policy. */
  updates: number;
  /** Training wall time from the starting policy (behaviour cloning not counted). */
  wallSeconds: number;
  /** Greedy real success. */
  valid_seen?: SplitResult;
  valid_unseen?: SplitResult;
  /** Sampled real success (final points). */
  sampled?: { valid_seen?: SplitResult; valid_unseen?: SplitResult };
  /** The same training games greedy in the synthetic environment and on the real engine (final points). */
  syntheticToRealGap?: { tasks: number; synthetic?: number; real?: number };
  /** Whether this point ends its condition's training (the point the final table reads). */
  final: boolean;
}
interface Results {
  curves: CurvePoint[];
}
const results: Results = existsSync(resultsFile)
  ? { curves: (JSON.parse(await readFile(resultsFile, 'utf8')) as Results).curves ?? [] }
  : { curves: [] };

function pointOf(
  condition: Condition,
  seed: number,
  realTransitions: number,
): CurvePoint | undefined {
  return results.curves.find(
    (point) =>
      point.condition === condition &&
      point.seed === seed &&
      point.realTransitions === realTransitions,
  );
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

function splitResult(metrics: EvaluationMetrics): SplitResult {
  return {
    successRate: metrics.successRate,
    interval: [...metrics.successInterval95],
    episodes: metrics.episodes,
  };
}

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
  const gapModel = environment === 'synthetic' ? await freshModels() : undefined;
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
              new SyntheticEnvironment({
                model: gapModel!.experienceModel,
                retriever: gapBuffer!,
                adapter: setup.adapter,
                k: 8,
                maxSteps,
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
async function freshModels() {
  return embeddedExperienceModel(setup.adapter, setup.offlineTrajectories, {});
}

// ---------------------------------------------------------------- training

/** Where a condition's curve points keep their policies and what they cost. */
const pointDirectory = (condition: Condition, seed: number, realTransitions: number) =>
  join(scratch, `points`, `${condition}-${seed}`, String(realTransitions));

interface PointCost {
  realTransitions: number;
  syntheticTransitions: number;
  updates: number;
  wallSeconds: number;
}

async function readCost(directory: string): Promise<PointCost | undefined> {
  const file = join(directory, 'cost.json');
  return existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as PointCost) : undefined;
}

/**
 * Trains `condition` from the policy in `from` with `config` in its run folder (resumed when
 * one is there), keeping the policy as the curve points `pointsReached` names for an
 * iteration (given the run's metrics so far, this iteration's last) are reached. The loop
 * waits for the copy before it saves the iteration's checkpoint, so a resumed run keeps
 * exactly the points its checkpoint does not cover.
 */
async function train(
  condition: Condition,
  seed: number,
  config: DreamGymConfigInput,
  from: string,
  pointsReached: (records: readonly IterationMetrics[]) => number[],
): Promise<void> {
  const runDirectory = join(scratch, `run-${condition}-${seed}`);
  const policy = newPolicy(seed);
  await policy.loadState(from);
  const models = await freshModels();
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
            await writeFile(join(directory, 'cost.json'), `${JSON.stringify(cost)}\n`);
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

/** The run's iteration records so far (the loop appends each before `onIteration`). */
async function runMetrics(runDirectory: string): Promise<IterationMetrics[]> {
  return (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as IterationMetrics);
}

/** The marks the last iteration of `records` crossed: past the one before, up to its own. */
function marksCrossed(records: readonly IterationMetrics[], wanted: readonly number[]): number[] {
  const before = records.at(-2)?.realTransitions ?? 0;
  const after = records.at(-1)!.realTransitions;
  return wanted.filter((mark) => before < mark && mark <= after);
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
  await writeFile(join(directory, 'cost.json'), `${JSON.stringify(cost)}\n`);
  return join(directory, 'policy');
}

/** A real-env RL condition: snapshots at every mark. */
async function trainReal(condition: 'real-grpo' | 'real-ppo', seed: number): Promise<void> {
  const pending = marks.filter(
    (mark) => !existsSync(join(pointDirectory(condition, seed, mark), 'cost.json')),
  );
  if (pending.length === 0) return;
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

/** Real-env GRPO's updates to reach the final budget for `seed`: DreamGym makes as many. */
async function updatesAtFinalBudget(seed: number): Promise<number> {
  const cost = await readCost(pointDirectory('real-grpo', seed, finalBudget));
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

async function trainSynthetic(condition: Condition, seed: number): Promise<void> {
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
  await writeFile(join(directory, 'cost.json'), `${JSON.stringify(cost)}\n`);
}

// ---------------------------------------------------------------- evaluation of the points

/** Evaluates what the point still lacks, writing the results file after every measurement. */
async function evaluatePoint(
  condition: Condition,
  seed: number,
  realTransitions: number,
  final: boolean,
) {
  const directory = pointDirectory(condition, seed, realTransitions);
  const cost = (await readCost(directory))!;
  let point = pointOf(condition, seed, realTransitions);
  if (!point) {
    point = { condition, seed, ...cost, final };
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

// ---------------------------------------------------------------- summary, claims, report

/** Greedy success pooled over seeds and both splits, with the pool's Wilson interval. */
function pooled(points: readonly CurvePoint[]): SplitResult | undefined {
  const splits = points
    .flatMap((point) => [point.valid_seen, point.valid_unseen])
    .filter((value): value is SplitResult => value !== undefined);
  if (splits.length === 0) return undefined;
  const episodes = splits.reduce((total, value) => total + value.episodes, 0);
  const successes = splits.reduce(
    (total, value) => total + Math.round(value.successRate * value.episodes),
    0,
  );
  return {
    successRate: successes / episodes,
    interval: wilsonInterval95(successes, episodes),
    episodes,
  };
}

const finalPoints = (condition: Condition) =>
  results.curves.filter(
    (point) =>
      point.condition === condition && point.final && point.valid_seen && point.valid_unseen,
  );
const disjoint = (a: SplitResult, b: SplitResult) =>
  a.interval[0] > b.interval[1] || b.interval[0] > a.interval[1];
const pct = (value: number | undefined) =>
  value === undefined ? '–' : `${(100 * value).toFixed(1)}%`;
const withInterval = (value: SplitResult | undefined) =>
  value === undefined
    ? '–'
    : `${pct(value.successRate)} [${(100 * value.interval[0]).toFixed(1)}, ${(100 * value.interval[1]).toFixed(1)}] n=${value.episodes}`;

function claims() {
  const start = pooled(finalPoints('start'));
  const realRl = pooled(finalPoints('real-grpo'));
  const dreamgym = pooled(finalPoints('dreamgym'));
  const s2r = pooled(finalPoints('dreamgym-s2r'));
  const seedsOf = (condition: Condition) => finalPoints(condition).map((point) => point.seed);
  const figures = {
    start,
    realGrpo: realRl,
    dreamgym,
    s2r,
    seeds: {
      realGrpo: seedsOf('real-grpo'),
      dreamgym: seedsOf('dreamgym'),
      s2r: seedsOf('dreamgym-s2r'),
    },
  };
  const realRlImproves =
    start && realRl
      ? {
          claim: `Real-env GRPO with ${finalBudget} real transitions improves on the starting policy (the premise of both claims).`,
          figures: { start, realGrpo: realRl },
          supported: realRl.successRate > start.successRate && disjoint(realRl, start),
          note: `${withInterval(realRl)} against ${withInterval(start)} (greedy, both splits, pooled over seeds)`,
        }
      : undefined;
  return [
    ...(realRlImproves ? [realRlImproves] : []),
    {
      claim: `DreamGym with 0 real transitions matches real-env RL with ${finalBudget} (the paper's WebShop and ALFWorld rows: close to GRPO and PPO at 80K).`,
      figures,
      supported:
        realRl && dreamgym
          ? dreamgym.successRate >= 0.9 * realRl.successRate || !disjoint(dreamgym, realRl)
          : null,
      note:
        realRl && dreamgym
          ? `DreamGym ${withInterval(dreamgym)} against real-env GRPO ${withInterval(realRl)}: ${dreamgym.successRate >= realRl.successRate ? 'at or above it' : `${(100 * (realRl.successRate - dreamgym.successRate)).toFixed(1)} points below it`}, intervals ${disjoint(dreamgym, realRl) ? 'disjoint' : 'overlapping'}`
          : 'not yet measured',
    },
    {
      claim: `DreamGym-S2R with ${s2rBudget} real transitions beats real-env RL with ${finalBudget}.`,
      figures,
      supported:
        realRl && s2r ? s2r.successRate > realRl.successRate && disjoint(s2r, realRl) : null,
      note:
        realRl && s2r
          ? `S2R ${withInterval(s2r)} against real-env GRPO ${withInterval(realRl)}: ${s2r.successRate > realRl.successRate ? 'higher' : 'not higher'}, intervals ${disjoint(s2r, realRl) ? 'disjoint (a separation)' : 'overlapping (not a separation)'}`
          : 'not yet measured',
    },
  ];
}

function finalTable() {
  return CONDITIONS.map((condition) => {
    const points = finalPoints(condition);
    if (points.length === 0) return undefined;
    const mean = (read: (point: CurvePoint) => number | undefined) => {
      const numbers = points.map(read).filter((value): value is number => value !== undefined);
      return numbers.length === 0 ? undefined : numbers.reduce((a, b) => a + b, 0) / numbers.length;
    };
    const pool = (read: (point: CurvePoint) => SplitResult | undefined) => {
      const found = points.map(read).filter((value): value is SplitResult => value !== undefined);
      if (found.length === 0) return undefined;
      const episodes = found.reduce((total, value) => total + value.episodes, 0);
      const successes = found.reduce(
        (total, value) => total + Math.round(value.successRate * value.episodes),
        0,
      );
      return {
        successRate: successes / episodes,
        interval: wilsonInterval95(successes, episodes),
        episodes,
      };
    };
    return {
      condition,
      seeds: points.map((point) => point.seed),
      realTransitions: mean((point) => point.realTransitions)!,
      syntheticTransitions: mean((point) => point.syntheticTransitions)!,
      updates: mean((point) => point.updates)!,
      wallSeconds: mean((point) => point.wallSeconds)!,
      valid_seen: pool((point) => point.valid_seen),
      valid_unseen: pool((point) => point.valid_unseen),
      sampled_valid_seen: pool((point) => point.sampled?.valid_seen),
      sampled_valid_unseen: pool((point) => point.sampled?.valid_unseen),
      both: pooled(points),
      syntheticToRealGap: {
        synthetic: mean((point) => point.syntheticToRealGap?.synthetic),
        real: mean((point) => point.syntheticToRealGap?.real),
      },
    };
  }).filter((row) => row !== undefined);
}

async function writeResults(): Promise<void> {
  results.curves.sort(
    (a, b) =>
      CONDITIONS.indexOf(a.condition) - CONDITIONS.indexOf(b.condition) ||
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
        valid_seen: evaluationSets.valid_seen.length,
        valid_unseen: evaluationSets.valid_unseen.length,
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
    table: finalTable(),
    claims: claims(),
  };
  const temporary = `${resultsFile}.tmp`;
  await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
  await rename(temporary, resultsFile);
  await writeFile(
    join(resultsDirectory, 'alfworld-budgets-report.html'),
    renderBudgetReport(document),
  );
}

const COLORS: Partial<Record<Condition, number>> = {
  start: 5,
  'real-grpo': 0,
  'real-ppo': 4,
  dreamgym: 1,
  'dreamgym-s2r': 2,
};

function renderBudgetReport(document: {
  curves: CurvePoint[];
  table: ReturnType<typeof finalTable>;
  claims: ReturnType<typeof claims>;
}): string {
  const chart = (split: Split | 'both') => {
    const series = (['real-grpo', 'real-ppo', 'dreamgym', 'dreamgym-s2r'] as const).flatMap(
      (condition) => {
        const bySeed = new Map<number, CurvePoint[]>();
        for (const point of document.curves) {
          if (
            point.condition !== condition &&
            !(point.condition === 'start' && condition.startsWith('real'))
          )
            continue;
          if (
            point.condition === 'start' &&
            !document.curves.some(
              (other) => other.condition === condition && other.seed === point.seed,
            )
          )
            continue;
          bySeed.set(point.seed, [...(bySeed.get(point.seed) ?? []), point]);
        }
        // S2R's line starts at DreamGym's point (0 real transitions).
        if (condition === 'dreamgym-s2r') {
          for (const [seed, points] of bySeed) {
            const dreamgym = document.curves.find(
              (point) => point.condition === 'dreamgym' && point.seed === seed,
            );
            if (dreamgym) points.unshift(dreamgym);
          }
        }
        // One line per condition: success pooled over the seeds measured at each x.
        const xs = [
          ...new Set(
            [...bySeed.values()].flatMap((points) => points.map((point) => point.realTransitions)),
          ),
        ].sort((a, b) => a - b);
        const line: Array<[number, number]> = [];
        const band: Array<[number, number, number]> = [];
        for (const x of xs) {
          const at = [...bySeed.values()].flatMap((points) =>
            points.filter((point) => point.realTransitions === x),
          );
          const value =
            split === 'both'
              ? pooled(at)
              : pooled(
                  at.map((point) => ({
                    ...point,
                    valid_seen: point[split],
                    valid_unseen: undefined,
                  })),
                );
          if (!value) continue;
          line.push([x, value.successRate]);
          band.push([x, value.interval[0], value.interval[1]]);
        }
        if (line.length === 0) return [];
        const seedsMeasured = [...bySeed.keys()].join(', ');
        if (condition === 'dreamgym') {
          // DreamGym uses no real transition: a level across the chart, to read against the
          // other lines at every budget.
          const [[, y]] = line as [[number, number]];
          const [[, low, high]] = band as [[number, number, number]];
          return [
            {
              name: `dreamgym, 0 real (seeds ${seedsMeasured})`,
              points: [
                [0, y],
                [finalBudget, y],
              ] as Array<[number, number]>,
              band: [
                [0, low, high],
                [finalBudget, low, high],
              ] as Array<[number, number, number]>,
              dashed: true,
              colorIndex: COLORS[condition]!,
            },
          ];
        }
        return [
          {
            name: `${condition} (seeds ${seedsMeasured})`,
            points: line,
            band,
            colorIndex: COLORS[condition]!,
          },
        ];
      },
    );
    return lineChart({
      title:
        split === 'both'
          ? 'Both splits, greedy, pooled over seeds'
          : `${split}, greedy, pooled over seeds`,
      xLabel: 'real transitions used (sqrt scale)',
      yLabel: 'real success',
      series,
      yRange: [0, Math.max(0.3, ...series.flatMap((line) => line.band.map(([, , high]) => high)))],
      xScale: 'sqrt',
      xTicks: [0, ...new Set([s2rBudget, ...marks])].sort((a, b) => a - b),
      width: 560,
      height: 340,
    });
  };
  const cell = (value: SplitResult | undefined) =>
    value === undefined
      ? '<td>–</td>'
      : `<td>${pct(value.successRate)} <span class="ci">[${(100 * value.interval[0]).toFixed(1)}, ${(100 * value.interval[1]).toFixed(1)}] n=${value.episodes}</span></td>`;
  const rows = document.table
    .map(
      (row) =>
        `<tr><th>${escapeHtml(row.condition)}</th><td>${row.seeds.join(', ')}</td><td>${Math.round(row.realTransitions)}</td><td>${Math.round(row.syntheticTransitions)}</td><td>${Math.round(row.updates)}</td><td>${(row.wallSeconds / 60).toFixed(1)}</td>${cell(row.valid_seen)}${cell(row.valid_unseen)}${cell(row.both)}${cell(row.sampled_valid_seen)}${cell(row.sampled_valid_unseen)}<td>${pct(row.syntheticToRealGap.synthetic)} vs ${pct(row.syntheticToRealGap.real)}</td></tr>`,
    )
    .join('\n');
  const claimItems = document.claims
    .map(
      (claim) =>
        `<li><strong>${claim.supported === null ? 'not yet measured' : claim.supported ? 'supported' : 'not supported'}</strong>: ${escapeHtml(claim.claim)} <span class="ci">${escapeHtml(claim.note)}</span></li>`,
    )
    .join('\n');
  const curveRows = document.curves
    .map(
      (point) =>
        `<tr><th>${escapeHtml(point.condition)}</th><td>${point.seed}</td><td>${point.realTransitions}</td><td>${point.syntheticTransitions}</td><td>${point.updates}</td><td>${(point.wallSeconds / 60).toFixed(1)}</td>${cell(point.valid_seen)}${cell(point.valid_unseen)}</tr>`,
    )
    .join('\n');
  return htmlPage(
    'DreamGym on ALFWorld at the paper’s budgets',
    `<h1>DreamGym on ALFWorld at the paper’s budgets</h1>
<p>Greedy success on the real engine against the real transitions each condition used. Every
condition starts from the same policy: ${escapeHtml(START_HOW)}. Lines pool the seeds measured
at each point; the shaded bands are 95% Wilson intervals. S2R's line starts at DreamGym's point.</p>
<div class="charts">${chart('both')}${chart('valid_seen')}${chart('valid_unseen')}</div>
<h2>The paper's claims</h2>
<ul>${claimItems}</ul>
<h2>Final points (greedy and sampled real success, pooled over seeds)</h2>
<table><thead><tr><th>condition</th><th>seeds</th><th>real transitions</th><th>synthetic transitions</th><th>updates</th><th>training minutes</th><th>valid_seen greedy</th><th>valid_unseen greedy</th><th>both greedy</th><th>valid_seen sampled</th><th>valid_unseen sampled</th><th>synthetic vs real on ${gapTaskCount} training games</th></tr></thead>
<tbody>${rows}</tbody></table>
<h2>Every curve point</h2>
<table><thead><tr><th>condition</th><th>seed</th><th>real transitions</th><th>synthetic transitions</th><th>updates</th><th>training minutes</th><th>valid_seen greedy</th><th>valid_unseen greedy</th></tr></thead>
<tbody>${curveRows}</tbody></table>
`,
  );
}

// ---------------------------------------------------------------- the run

try {
  for (const seed of seeds) {
    for (const condition of conditions) {
      log(`== seed ${seed}: ${condition}`);
      switch (condition) {
        case 'start':
          await startPolicy(seed);
          await evaluatePoint('start', seed, 0, true);
          break;
        case 'real-grpo':
        case 'real-ppo':
          await trainReal(condition, seed);
          for (const mark of marks)
            await evaluatePoint(condition, seed, mark, mark === finalBudget);
          break;
        case 'dreamgym-s2r':
          await trainSimToReal(seed);
          await evaluatePoint('dreamgym-s2r', seed, s2rBudget, true);
          break;
        default:
          await trainSynthetic(condition, seed);
          await evaluatePoint(condition, seed, 0, true);
      }
    }
  }
  await writeResults();
} finally {
  await realPool.closeAll();
}
for (const row of finalTable()) {
  log(
    `${row.condition} (seeds ${row.seeds.join(', ')}): ${withInterval(row.both)} greedy on both splits, ${Math.round(row.realTransitions)} real, ${Math.round(row.syntheticTransitions)} synthetic transitions, ${Math.round(row.updates)} updates`,
  );
}
for (const claim of claims())
  log(
    `${claim.supported === null ? 'not yet measured' : claim.supported ? 'supported' : 'not supported'}: ${claim.claim} ${claim.note}`,
  );
