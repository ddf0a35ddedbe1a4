/**
 * The paper's protocol on a second real domain: MiniWoB++ task pages (the `miniwob` PyPI
 * package, served on 127.0.0.1, played in Chromium), the ALFWorld experiment's conditions on
 * the twelve tasks of `MINIWOB_EXPERIMENT_TASKS` (chosen before any result, listed in the
 * results). Every trained condition starts from one behaviour-cloned policy per seed (cloned
 * on the successful exploration episodes), uses the same policy class (LinearSoftmaxPolicy)
 * and trainer (GRPO), and is measured on the real pages on held-out seeds (the `eval` split,
 * seeds from 100 000), overall and per task, with 95% Wilson intervals:
 *   random          the untrained (uniform) policy
 *   bc              behaviour cloning on the successful exploration episodes alone
 *   real-rl         BC, then RL on the real pages with a budget of B real transitions
 *   dreamgym        BC, then DreamGym with 0 real transitions
 *   dreamgym-s2r    BC, then DreamGym, then sim-to-real with 10% of B
 * For each condition it also plays the same training instances in the synthetic and the real
 * environment (the synthetic-to-real gap).
 *
 * The dataset (task instances with the pages' instructions and first states, and
 * uniform-random exploration episodes on the training seeds) is built on the real pages
 * first, into --data (kept for re-runs).
 *
 * Usage (after `npm run build`):
 *   npx tsx benchmarks/miniwob-experiment.ts [--data DIR] [--train-seeds 30] [--eval-seeds 15] \
 *     [--budget 600] [--iterations 15] [--seeds 1] [--modes greedy] [--gap-tasks 12] \
 *     [--concurrency 3] [--conditions random,bc,real-rl,dreamgym,dreamgym-s2r]
 * Writes benchmarks/results/miniwob.json after every condition (a re-run replaces the
 * conditions and seeds it runs) and benchmarks/results/miniwob-report.html.
 */
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Browser, launchChromium, startMiniwobServer } from '@dreamgym/browser';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  DreamGymLoop,
  type EvaluationMetrics,
  evaluatePolicy,
  HashingEmbedder,
  type IterationMetrics,
  type LinearSoftmaxPolicy,
  parseDreamGymConfig,
  ReplayBuffer,
  RetrievalExperienceModel,
  SeededRandom,
  syntheticEnvironmentFromConfig,
  type Task,
  type Trajectory,
  trajectoryToTransitions,
  wilsonInterval95,
} from '@dreamgym/core';
import { EnvironmentPool, type Rollout } from '@dreamgym/core/rollout';
import { cloneBehaviour } from '@dreamgym/core/training';
import {
  connectMiniwobReal,
  createMiniwobAdapter,
  MINIWOB_EXPERIMENT_TASKS,
} from '@dreamgym/miniwob';
import { loadRun, type ReportRun, renderReport } from '@dreamgym/run';
import {
  conditionConfig,
  experimentBaseConfig,
  PAPER_CONDITIONS,
} from './experiment-conditions.js';
import { ensureMiniwobExperimentDataset } from './miniwob-dataset.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: join(tmpdir(), 'dreamgym-miniwob-experiment-data') },
    'train-seeds': { type: 'string', default: '30' },
    'eval-seeds': { type: 'string', default: '15' },
    seeds: { type: 'string', default: '1' },
    budget: { type: 'string', default: '600' },
    iterations: { type: 'string', default: '15' },
    'max-steps': { type: 'string', default: '5' },
    modes: { type: 'string', default: 'greedy' },
    'gap-tasks': { type: 'string', default: '12' },
    concurrency: { type: 'string', default: '3' },
    conditions: { type: 'string', default: 'random,bc,real-rl,dreamgym,dreamgym-s2r' },
    /** Why a run used other than the default scale (written to the results). */
    note: { type: 'string' },
  },
});
/** The protocol's full scale; a run on a busy machine may choose less beforehand (`--note`). */
const FULL_SCALE = {
  trainSeeds: 30,
  evalSeeds: 15,
  budget: 600,
  iterations: 15,
  seeds: 1,
  gapTasks: 12,
};

type Mode = 'greedy' | 'sampled';
const data = resolve(values.data!);
const seeds = values.seeds!.split(',').map(Number);
const budget = Number(values.budget);
const maxSteps = Number(values['max-steps']);
const realConcurrency = Number(values.concurrency);
const modes = values.modes!.split(',') as Mode[];
const gapTaskCount = Number(values['gap-tasks']);
const conditionNames = values.conditions!.split(',');
const trainSeeds = Number(values['train-seeds']);
const evalSeeds = Number(values['eval-seeds']);
const resultsDirectory = resolve(import.meta.dirname, 'results');
const resultsFile = join(resultsDirectory, 'miniwob.json');
const started = Date.now();

const log = (message: string) =>
  process.stderr.write(
    `${new Date().toISOString().slice(11, 19)} [${((Date.now() - started) / 60_000).toFixed(1)} min, load ${loadavg()[0]!.toFixed(1)}] ${message}\n`,
  );

// How loaded the shared machine was: the 1-minute load average every 30 s.
const loadSamples: number[] = [loadavg()[0]!];
const loadTimer = setInterval(() => loadSamples.push(loadavg()[0]!), 30_000);
loadTimer.unref();

function baseConfig(seed: number): DreamGymConfigInput {
  return experimentBaseConfig({
    seed,
    iterations: Number(values.iterations),
    maxSteps,
    realConcurrency,
  });
}

/** Success of a set of episodes, with the Wilson interval. */
interface Success {
  episodes: number;
  successes: number;
  successRate: number;
  successInterval95: [number, number];
}

function success(successes: number, episodes: number): Success {
  return {
    episodes,
    successes,
    successRate: episodes === 0 ? 0 : successes / episodes,
    successInterval95: wilsonInterval95(successes, episodes) as [number, number],
  };
}

interface ModeEvaluation {
  overall: EvaluationMetrics;
  perTask: Record<string, Success>;
}

interface ConditionResult {
  condition: string;
  seed: number;
  realTransitions: number;
  syntheticTransitions: number;
  trainingSeconds: number;
  evaluations: Partial<Record<Mode, ModeEvaluation>>;
  syntheticToRealGap: { tasks: number; synthetic: number; real: number; gap: number };
}

function perTask(rollouts: readonly Rollout[]): Record<string, Success> {
  const table: Record<string, Success> = {};
  for (const name of MINIWOB_EXPERIMENT_TASKS) {
    const mine = rollouts.filter((rollout) => rollout.task.meta.miniwobTask === name);
    table[name] = success(mine.filter((rollout) => rollout.success).length, mine.length);
  }
  return table;
}

// The dataset, built on the real pages unless it is there already.
const dataset = await ensureMiniwobExperimentDataset({
  dir: data,
  trainSeeds,
  evalSeeds,
  maxSteps,
  concurrency: realConcurrency,
  log,
});

const adapter = createMiniwobAdapter({ dataDir: data });
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
const seedTasks = await collect(adapter.datasets.tasks.load(data, { splits: ['train'] }));
const evaluationTasks = await collect(adapter.datasets.tasks.load(data, { splits: ['eval'] }));
const offline: Trajectory[] = await collect(adapter.datasets.trajectories.load(data));
const offlineSuccesses = offline.filter((trajectory) => trajectory.success).length;
log(
  `${seedTasks.length} train instances, ${evaluationTasks.length} eval instances, ${offline.length} exploration episodes (${offlineSuccesses} successful)`,
);

const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-miniwob-experiment-'));
const [server, browser]: [Awaited<ReturnType<typeof startMiniwobServer>>, Browser] =
  await Promise.all([startMiniwobServer(), launchChromium()]);
const realPool = new EnvironmentPool(() => connectMiniwobReal({ server, browser, maxSteps }));
const experienceModel = new RetrievalExperienceModel({
  parseAction: (text) => adapter.parseAction(text),
});

const embedder = new HashingEmbedder({ dimension: 256 });
const offlineBuffer = join(scratch, 'offline-buffer');
{
  const buffer = await ReplayBuffer.open(offlineBuffer, { embedder, index: { type: 'flat' } });
  await buffer.add(
    offline.flatMap((trajectory, index) =>
      trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id ?? `offline:${index}` }),
    ),
  );
  log(`offline buffer: ${buffer.size} transitions`);
  await buffer.close();
}
async function freshBuffer(name: string): Promise<ReplayBuffer> {
  const directory = join(scratch, `buffer-${name}`);
  await rm(directory, { recursive: true, force: true });
  await cp(offlineBuffer, directory, { recursive: true });
  return ReplayBuffer.open(directory, { embedder, index: { type: 'flat' } });
}

async function evaluate(
  policy: LinearSoftmaxPolicy,
  environment: 'real' | 'synthetic',
  tasks: readonly Task[],
  mode: Mode,
  seed: number,
  buffer?: ReplayBuffer,
) {
  return evaluatePolicy({
    policy,
    environmentFactory:
      environment === 'real'
        ? () => realPool.lease()
        : () =>
            syntheticEnvironmentFromConfig(baseConfig(seed), {
              experienceModel: experienceModel,
              retriever: buffer!,
              adapter,
            }),
    environment,
    tasks,
    maxSteps,
    greedy: mode === 'greedy',
    concurrency: environment === 'real' ? realConcurrency : 8,
    random: new SeededRandom(seed + 1000),
    candidateActions: (observation, history) => adapter.candidateActions(observation, history),
  });
}

const previous = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as { results?: ConditionResult[] })
  : {};
const results: ConditionResult[] = (previous.results ?? []).filter(
  (result) => !(conditionNames.includes(result.condition) && seeds.includes(result.seed)),
);
const runs: ReportRun[] = [];

/** Pooled over seeds: successes / episodes with the Wilson interval of the pool. */
function pooled(condition: string, mode: Mode, task?: string): Success {
  let successes = 0;
  let episodes = 0;
  for (const result of results.filter((entry) => entry.condition === condition)) {
    const evaluation = result.evaluations[mode];
    if (!evaluation) continue;
    if (task === undefined) {
      successes += Math.round(evaluation.overall.successRate * evaluation.overall.episodes);
      episodes += evaluation.overall.episodes;
    } else {
      successes += evaluation.perTask[task]?.successes ?? 0;
      episodes += evaluation.perTask[task]?.episodes ?? 0;
    }
  }
  return success(successes, episodes);
}

function summary() {
  const conditions = [...new Set(results.map((result) => result.condition))];
  const table = conditions.map((condition) => {
    const entries = results.filter((result) => result.condition === condition);
    const mean = (values: number[]) =>
      values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    return {
      condition,
      realTransitions: mean(entries.map((entry) => entry.realTransitions)),
      ...Object.fromEntries(
        modes.map((mode) => [
          mode,
          {
            overall: pooled(condition, mode),
            perTask: Object.fromEntries(
              MINIWOB_EXPERIMENT_TASKS.map((task) => [task, pooled(condition, mode, task)]),
            ),
          },
        ]),
      ),
      syntheticToRealGap: {
        synthetic: mean(entries.map((entry) => entry.syntheticToRealGap.synthetic)),
        real: mean(entries.map((entry) => entry.syntheticToRealGap.real)),
      },
    };
  });
  const rate = (condition: string) => {
    const value = pooled(condition, 'greedy');
    return value.episodes === 0 ? undefined : value.successRate;
  };
  /** Whether `better`'s greedy interval lies wholly above `worse`'s (null without both). */
  const separated = (better: string, worse: string) => {
    const high = pooled(better, 'greedy');
    const low = pooled(worse, 'greedy');
    return high.episodes === 0 || low.episodes === 0
      ? null
      : high.successInterval95[0] > low.successInterval95[1];
  };
  const realRl = rate('real-rl');
  const dreamgym = rate('dreamgym');
  const s2r = rate('dreamgym-s2r');
  return {
    table,
    claims: {
      dreamgymOverRealRl: realRl && dreamgym !== undefined ? dreamgym / realRl : null,
      dreamgymReaches90PercentOfRealRl:
        realRl !== undefined && dreamgym !== undefined ? dreamgym >= 0.9 * realRl : null,
      s2rBeatsRealRl: realRl !== undefined && s2r !== undefined ? s2r > realRl : null,
      // The point estimates above say nothing where the intervals overlap.
      s2rBeatsRealRlBeyondIntervals: separated('dreamgym-s2r', 'real-rl'),
      dreamgymBeatsRealRlBeyondIntervals: separated('dreamgym', 'real-rl'),
      dreamgymBelowRealRlBeyondIntervals: separated('real-rl', 'dreamgym'),
      greedySuccess: { random: rate('random'), bc: rate('bc'), realRl, dreamgym, s2r },
    },
  };
}

const percentText = (value: Success) =>
  `${(100 * value.successRate).toFixed(1)}% [${(100 * value.successInterval95[0]).toFixed(1)}, ${(100 * value.successInterval95[1]).toFixed(1)}]`;

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!,
  );
}

/** Horizontal bars of greedy success per condition with their intervals, as inline SVG. */
function successChart(rows: Array<{ condition: string; value: Success }>): string {
  const width = 560;
  const left = 120;
  const barHeight = 22;
  const height = rows.length * (barHeight + 10) + 30;
  const x = (rate: number) => left + rate * (width - left - 20);
  const bars = rows
    .map(({ condition, value }, index) => {
      const y = 10 + index * (barHeight + 10);
      const [low, high] = value.successInterval95;
      return `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${escapeHtml(condition)}</text>
  <rect x="${left}" y="${y}" width="${(x(value.successRate) - left).toFixed(1)}" height="${barHeight}" fill="#4c78a8"/>
  <line x1="${x(low).toFixed(1)}" x2="${x(high).toFixed(1)}" y1="${y + barHeight / 2}" y2="${y + barHeight / 2}" stroke="#222" stroke-width="2"/>
  <text x="${(x(value.successRate) + 4).toFixed(1)}" y="${y + 15}" font-size="11">${(100 * value.successRate).toFixed(1)}%</text>`;
    })
    .join('\n  ');
  const axis = [0, 0.25, 0.5, 0.75, 1]
    .map(
      (tick) =>
        `<line x1="${x(tick)}" x2="${x(tick)}" y1="5" y2="${height - 20}" stroke="#ddd"/><text x="${x(tick)}" y="${height - 5}" text-anchor="middle" font-size="11">${tick * 100}%</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12" role="img" aria-label="Greedy success on held-out seeds per condition">${axis}
  ${bars}</svg>`;
}

async function writeResults(): Promise<void> {
  const { table, claims } = summary();
  const load = {
    cores: cpus().length,
    loadAverage1m: {
      min: Math.min(...loadSamples),
      mean: loadSamples.reduce((a, b) => a + b, 0) / loadSamples.length,
      max: Math.max(...loadSamples),
      samples: loadSamples.length,
    },
  };
  await writeFile(
    resultsFile,
    `${JSON.stringify(
      {
        benchmark: 'miniwob-experiment',
        date: new Date().toISOString(),
        protocol: {
          tasks: MINIWOB_EXPERIMENT_TASKS,
          tasksChosen:
            'before any result: tasks whose target is named by words of a small vocabulary or is the same on every page (see MINIWOB_EXPERIMENT_TASKS in adapters/miniwob/src/datasets/task-list.ts)',
          environment:
            'real MiniWoB++ pages (miniwob 1.1.0, served on 127.0.0.1) in Debian Chromium through @dreamgym/browser; raw task reward (1 success, -1 failure); page time limit 600 s',
          split: `train seeds 0..${trainSeeds - 1}, held-out eval seeds 100000..${100_000 + evalSeeds - 1}, per task`,
          offlineData: `one uniform-random exploration episode per train seed on the real pages (${offline.length} episodes, ${offlineSuccesses} successful)`,
          policy:
            'LinearSoftmaxPolicy (2^18 hashed features) over the candidate actions (element notes), warm-started by behaviour cloning on the successful exploration episodes; GRPO',
          experienceModel:
            'RetrievalExperienceModel over a HashingEmbedder replay buffer of the exploration episodes; synthetic episodes start from the recorded first states',
          scale: {
            used: {
              trainSeeds,
              evalSeeds,
              budget,
              iterations: Number(values.iterations),
              seeds: seeds.length,
              gapTasks: gapTaskCount,
            },
            full: FULL_SCALE,
            note: values.note ?? null,
          },
          budget,
          s2rBudget: Math.round(budget / 10),
          maxSteps,
          seeds,
          modes,
          randomCondition: 'the untrained uniform policy, sampled in every mode',
          gapTasks: gapTaskCount,
          config: baseConfig(seeds[0]!),
          dataset,
        },
        machine: load,
        wallMinutes: (Date.now() - started) / 60_000,
        ...{ table, claims },
        results,
      },
      null,
      2,
    )}\n`,
  );
  const mode: Mode = modes[0]!;
  const cell = (value: Success | undefined) =>
    value === undefined || value.episodes === 0
      ? '<td>–</td>'
      : `<td>${(100 * value.successRate).toFixed(0)}% <span class="ci">[${(100 * value.successInterval95[0]).toFixed(0)}, ${(100 * value.successInterval95[1]).toFixed(0)}]</span></td>`;
  const rows = table
    .map((row) => {
      const evaluation = (
        row as unknown as Record<Mode, { overall: Success; perTask: Record<string, Success> }>
      )[mode];
      return `<tr><th>${escapeHtml(row.condition)}</th><td>${Math.round(row.realTransitions)}</td>${cell(evaluation?.overall)}${MINIWOB_EXPERIMENT_TASKS.map((task) => cell(evaluation?.perTask[task])).join('')}<td>${(100 * row.syntheticToRealGap.synthetic).toFixed(0)}% vs ${(100 * row.syntheticToRealGap.real).toFixed(0)}%</td></tr>`;
    })
    .join('\n');
  const chart = successChart(
    table.map((row) => ({
      condition: row.condition,
      value: (row as unknown as Record<Mode, { overall: Success }>)[mode]?.overall ?? success(0, 0),
    })),
  );
  const html = renderReport(runs, {
    title: 'DreamGym on MiniWoB++: the paper protocol on a second real domain',
  }).replace(
    '<h2>Runs and ablations</h2>',
    `<h2>Success on the real pages, held-out seeds (${mode}, 95% Wilson intervals, pooled over seeds ${seeds.join(', ')})</h2>
  <p>${MINIWOB_EXPERIMENT_TASKS.length} MiniWoB++ tasks chosen before any result, ${evalSeeds} held-out seeds each; real-env RL spends ${budget} real transitions, DreamGym 0, DreamGym-S2R ${Math.round(budget / 10)}. Machine: ${load.cores} shared cores, 1-minute load average ${load.loadAverage1m.min.toFixed(1)}–${load.loadAverage1m.max.toFixed(1)} (mean ${load.loadAverage1m.mean.toFixed(1)}). Scale: ${trainSeeds} training seeds per task (one exploration episode each), ${Number(values.iterations)} DreamGym iterations, ${seeds.length} training seed(s)${values.note ? ` (${escapeHtml(values.note)})` : ''}.</p>
  ${chart}
  <table><thead><tr><th>condition</th><th>real transitions</th><th>overall</th>${MINIWOB_EXPERIMENT_TASKS.map((task) => `<th>${task}</th>`).join('')}<th>synthetic vs real on ${gapTaskCount} training instances</th></tr></thead>
  <tbody>${rows}</tbody></table>
  <p>DreamGym (0 real transitions) / real-env RL (${budget}), greedy: ${claims.dreamgymOverRealRl === null ? 'n/a' : claims.dreamgymOverRealRl.toFixed(2)}; S2R (${Math.round(budget / 10)} real) above real-env RL on the point estimate: ${String(claims.s2rBeatsRealRl)}, beyond the 95% intervals: ${String(claims.s2rBeatsRealRlBeyondIntervals)}; DreamGym above real-env RL beyond the intervals: ${String(claims.dreamgymBeatsRealRlBeyondIntervals)}, below it: ${String(claims.dreamgymBelowRealRlBeyondIntervals)}.</p>
  <h2>Runs and ablations</h2>`,
  );
  await writeFile(join(resultsDirectory, 'miniwob-report.html'), html);
}

try {
  for (const seed of seeds) {
    // One behaviour-cloned policy per seed; every trained condition starts from it.
    const bcDirectory = join(scratch, `bc-${seed}`);
    const cloned = createLinearSoftmaxPolicy(parseDreamGymConfig(baseConfig(seed)));
    const cloningStarted = performance.now();
    const cloning = await cloneBehaviour({
      policy: cloned,
      trajectories: offline,
      candidateActions: (observation, history) => adapter.candidateActions(observation, history),
      config: { epochs: 20, miniBatchSize: 64, heldOutShare: 0.1, patience: 3 },
      random: new SeededRandom(seed).fork('behaviour-cloning'),
    });
    const cloningSeconds = (performance.now() - cloningStarted) / 1000;
    log(
      `seed ${seed} bc: epoch ${cloning.bestEpoch}, held-out NLL ${cloning.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${cloning.bestHeldOutNegativeLogLikelihood.toFixed(3)} (${cloningSeconds.toFixed(1)} s)`,
    );
    await cloned.saveState(bcDirectory);
    // One training instance per task for the synthetic-to-real gap.
    const gapTasks = MINIWOB_EXPERIMENT_TASKS.map((name) =>
      new SeededRandom(seed)
        .fork(`gap:${name}`)
        .choice(seedTasks.filter((task) => task.meta.miniwobTask === name)),
    ).slice(0, gapTaskCount);

    for (const condition of conditionNames) {
      log(`== seed ${seed}: ${condition}`);
      const config = conditionConfig(condition, baseConfig(seed), budget, PAPER_CONDITIONS);
      const policy = createLinearSoftmaxPolicy(parseDreamGymConfig(baseConfig(seed)));
      if (condition !== 'random') await policy.loadState(bcDirectory);
      const buffer = await freshBuffer(`${seed}-${condition}`);
      let realTransitions = 0;
      let syntheticTransitions = 0;
      const trainingStarted = performance.now();
      if (config !== undefined) {
        const runDirectory = join(scratch, `run-${seed}-${condition}`);
        const result = await new DreamGymLoop({
          config,
          components: {
            adapter,
            policy,
            experienceModel,
            replayBuffer: buffer,
            seedTasks,
            realEnvironment: () => realPool.lease(),
            log,
            onIteration: (metrics: IterationMetrics, progress: { done: number; total: number }) =>
              log(
                `${condition} ${progress.done}/${progress.total} ${metrics.phase} train success ${(100 * metrics.successRate).toFixed(1)}% real ${metrics.realTransitions} pool ${metrics.poolSize}`,
              ),
          },
          runDirectory,
        }).run();
        realTransitions = result.metrics.at(-1)?.realTransitions ?? 0;
        syntheticTransitions = result.metrics.at(-1)?.syntheticTransitions ?? 0;
        if (seed === seeds[0]) runs.push(await loadRun(runDirectory, condition));
      }
      const trainingSeconds =
        (performance.now() - trainingStarted) / 1000 +
        (condition === 'random' ? 0 : cloningSeconds);
      const evaluations: ConditionResult['evaluations'] = {};
      for (const mode of modes) {
        // The untrained policy is uniform: it samples in every mode (its argmax would be the
        // first candidate, not a random choice).
        const evaluated = await evaluate(
          policy,
          'real',
          evaluationTasks,
          condition === 'random' ? 'sampled' : mode,
          seed,
        );
        evaluations[mode] = { overall: evaluated.metrics, perTask: perTask(evaluated.rollouts) };
        log(
          `seed ${seed} ${condition} ${mode}: ${percentText(success(evaluated.rollouts.filter((rollout) => rollout.success).length, evaluated.rollouts.length))} on ${evaluated.rollouts.length} held-out instances`,
        );
      }
      const gapMode = modes[0]!;
      const playMode = condition === 'random' ? 'sampled' : gapMode;
      const synthetic = await evaluate(policy, 'synthetic', gapTasks, playMode, seed, buffer);
      const real = await evaluate(policy, 'real', gapTasks, playMode, seed);
      await buffer.close();
      results.push({
        condition,
        seed,
        realTransitions,
        syntheticTransitions,
        trainingSeconds,
        evaluations,
        syntheticToRealGap: {
          tasks: gapTasks.length,
          synthetic: synthetic.metrics.successRate,
          real: real.metrics.successRate,
          gap: synthetic.metrics.successRate - real.metrics.successRate,
        },
      });
      log(
        `seed ${seed} ${condition}: gap ${(100 * synthetic.metrics.successRate).toFixed(1)}% synthetic vs ${(100 * real.metrics.successRate).toFixed(1)}% real`,
      );
      await writeResults();
    }
  }
} finally {
  await realPool.closeAll();
  await browser.close().catch(() => undefined);
  await server.close().catch(() => undefined);
  await rm(scratch, { recursive: true, force: true });
  clearInterval(loadTimer);
}

console.table(
  summary().table.map((row) => {
    const record = row as unknown as Record<Mode, { overall: Success }>;
    return {
      condition: row.condition,
      ...Object.fromEntries(modes.map((mode) => [mode, percentText(record[mode]!.overall)])),
    };
  }),
);
console.log(JSON.stringify(summary().claims));
