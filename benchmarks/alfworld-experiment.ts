/**
 * The paper's protocol on ALFWorld at our scale (issue 10). Every trained condition starts
 * from the same behaviour-cloned policy (the paper's policies start instruction-tuned), uses
 * the same policy class (LinearSoftmaxPolicy) and trainer (GRPO), and is measured on the real
 * engine on valid_seen and valid_unseen, greedy and sampled, with 95% Wilson intervals:
 *   random          the untrained (uniform) policy
 *   bc              behaviour cloning on the expert trajectories alone
 *   real-rl         BC, then RL in the real engine with a budget of B real transitions
 *   dreamgym        BC, then DreamGym with 0 real transitions
 *   dreamgym-s2r    BC, then DreamGym, then sim-to-real with 10% of B
 *   no-curriculum   dreamgym without curriculum task generation
 *   no-replay       dreamgym without writing synthetic transitions back to the replay buffer
 *   no-retrieval    dreamgym without retrieved demonstrations for the experience model
 * For each condition it also plays the same training tasks in the synthetic and the real
 * environment (the synthetic-to-real gap the paper's Theorem 1 bounds).
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npm run alfworld-experiment -w dreamgym-benchmarks -- \
 *     [--seeds 1,2] [--budget 3000] [--iterations 12] [--seen 140] [--unseen 134] \
 *     [--modes greedy,sampled] [--gap-tasks 24] [--exploration FILE] [--conditions a,b] \
 *     [--rl-learning-rate 0.05] [--bc-from DIR] [--report-runs RUN_DIR ...] [--out DIR]
 * `--rl-learning-rate` is the RL trainer's Adam learning rate (default the policy's 0.05, which
 * also clones it); `alfworld-step-size.ts` compares rates on training games only.
 * `--bc-from DIR` starts from the behaviour-cloned policies an earlier run left in
 * DIR/bc-<seed>/ (its scratch folder, or a copy) instead of cloning again. `--scratch DIR`
 * keeps the scratch folder (cloned policies, buffers, run folders) in DIR instead of a
 * temporary folder that is deleted at the end, so a later run can continue with `--bc-from DIR`.
 * A full run takes hours, so it can be run a few conditions at a time: results are kept per
 * condition and seed, and only results measured at the same scale (games, steps, modes, and
 * for trained conditions budget, iterations and RL learning rate) are pooled; results at
 * another scale are dropped from the file. `--report-runs` adds the training curves of run
 * folders kept from earlier runs (`run-<seed>-<condition>`).
 * Writes alfworld.json after every condition (a partial run keeps what finished; a re-run
 * replaces the conditions and seeds it runs) and alfworld-report.html into `--out DIR`
 * (default benchmarks/results; give a smoke run at a small scale its own folder, since
 * results at another scale are dropped from the file).
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  createLinearSoftmaxPolicy,
  DreamGymLoop,
  type EvaluationMetrics,
  evaluatePolicy,
  type IterationMetrics,
  type LinearSoftmaxPolicy,
  parseDreamGymConfig,
  type ReplayBuffer,
  SeededRandom,
  syntheticEnvironmentFromConfig,
  type Task,
  wilsonInterval95,
} from '@dreamgym/core';
import { EnvironmentPool } from '@dreamgym/core/rollout';
import { loadRun, type ReportRun, renderReport, reportEpisodes, setUpDomain } from '@dreamgym/run';
import {
  type AlfworldProtocolSettings,
  alfworldBaseConfig,
  cloneAlfworldPolicy,
  log,
  percent,
  writeOfflineBuffer,
} from './alfworld-protocol.js';
import { ABLATION_CONDITIONS, conditionConfig, PAPER_CONDITIONS } from './experiment-conditions.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '1' },
    budget: { type: 'string', default: '3000' },
    iterations: { type: 'string', default: '12' },
    seen: { type: 'string', default: '140' },
    unseen: { type: 'string', default: '134' },
    'max-steps': { type: 'string', default: '30' },
    modes: { type: 'string', default: 'greedy,sampled' },
    'gap-tasks': { type: 'string', default: '24' },
    exploration: { type: 'string', multiple: true },
    conditions: {
      type: 'string',
      default: 'random,bc,real-rl,dreamgym,dreamgym-s2r,no-curriculum,no-replay,no-retrieval',
    },
    servers: { type: 'string', default: '2' },
    'rl-learning-rate': { type: 'string', default: '0.05' },
    'bc-from': { type: 'string' },
    scratch: { type: 'string' },
    'report-runs': { type: 'string', multiple: true },
    out: { type: 'string' },
  },
});

const dataRoot = process.env.DREAMGYM_DATA_DIR;
if (!dataRoot || !existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error('Set DREAMGYM_DATA_DIR to the folder holding alfworld/ (e.g. ../shared/data).');
}
const data = resolve(dataRoot, 'alfworld');
const seeds = values.seeds!.split(',').map(Number);
const budget = Number(values.budget);
const maxSteps = Number(values['max-steps']);
const servers = Number(values.servers);
const rlLearningRate = Number(values['rl-learning-rate']);
if (!(rlLearningRate > 0)) {
  throw new Error(`--rl-learning-rate: ${values['rl-learning-rate']} is not a positive number.`);
}
const modes = values.modes!.split(',') as ('greedy' | 'sampled')[];
const gapTaskCount = Number(values['gap-tasks']);
// `--conditions ''` runs nothing and rewrites the summary and the report from the results file.
const conditionNames = values.conditions!.split(',').filter(Boolean);
const resultsDirectory = values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results');
await mkdir(resultsDirectory, { recursive: true });
const resultsFile = join(resultsDirectory, 'alfworld.json');
const splits = ['valid_seen', 'valid_unseen'] as const;
type Split = (typeof splits)[number];
type Mode = 'greedy' | 'sampled';

const protocolSettings = (seed: number): AlfworldProtocolSettings => ({
  seed,
  iterations: Number(values.iterations),
  maxSteps,
  servers,
  rlLearningRate,
});
const baseConfig = (seed: number) => alfworldBaseConfig(protocolSettings(seed));

interface ConditionResult {
  condition: string;
  seed: number;
  scale: Scale;
  realTransitions: number;
  syntheticTransitions: number;
  trainingSeconds: number;
  evaluations: Record<Split, Partial<Record<Mode, EvaluationMetrics>>>;
  syntheticToRealGap: { tasks: number; synthetic: number; real: number; gap: number };
}

const keepScratch = values.scratch !== undefined;
const scratch = keepScratch
  ? resolve(values.scratch!)
  : await mkdtemp(join(tmpdir(), 'dreamgym-alfworld-experiment-'));
await mkdir(scratch, { recursive: true });
/**
 * What makes two results comparable: a result measured at another scale is not pooled. The
 * training settings (budget, iterations, RL learning rate) matter only to the conditions that
 * train; `random` and `bc` are compared on the evaluation's settings alone.
 */
const evaluationScale = {
  seen: Number(values.seen),
  unseen: Number(values.unseen),
  maxSteps,
  modes: modes.join(','),
  gapTasks: gapTaskCount,
};
const scale = {
  ...evaluationScale,
  budget,
  iterations: Number(values.iterations),
  rlLearningRate,
};
type Scale = typeof scale;
const knownConditions = [...PAPER_CONDITIONS, ...ABLATION_CONDITIONS];
const trains = (condition: string) =>
  conditionConfig(condition, baseConfig(seeds[0]!), budget, knownConditions) !== undefined;
const sameScale = (result: ConditionResult) => {
  const wanted: Partial<Scale> = trains(result.condition) ? scale : evaluationScale;
  return (
    result.scale !== undefined &&
    (Object.keys(wanted) as (keyof Scale)[]).every((key) => result.scale[key] === wanted[key])
  );
};
const setup = await setUpDomain(
  {
    domain: 'alfworld',
    data,
    offline: values.exploration ?? [],
    evalTasks: Number(values.seen),
    index: 'flat',
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
const evaluationSets: Record<Split, Task[]> = {
  valid_seen: setup.evaluationTasks,
  valid_unseen: unseen,
};
// A generous request timeout: on a loaded machine a reset (the engine parses the game's PDDL)
// can take more than the default minute, and a killed engine loses the episode.
const realPool = new EnvironmentPool(() =>
  setup.adapter.connectReal({ requestTimeoutMs: 300_000 }),
);

// The offline buffer is built once and copied for every trained condition.
const offlineBuffer = await writeOfflineBuffer(setup, scratch);
log(`offline buffer: ${offlineBuffer.size} transitions`);

async function evaluate(
  policy: LinearSoftmaxPolicy,
  environment: 'real' | 'synthetic',
  tasks: readonly Task[],
  mode: Mode,
  seed: number,
  label: string,
  buffer?: ReplayBuffer,
): Promise<EvaluationMetrics> {
  const { metrics } = await evaluatePolicy({
    policy,
    // An evaluation on a valid split takes many minutes: a line per tenth of its episodes.
    onEpisode: reportEpisodes(`${label} (${environment}, ${mode})`),
    environmentFactory:
      environment === 'real'
        ? () => realPool.lease()
        : () =>
            syntheticEnvironmentFromConfig(baseConfig(seed), {
              experienceModel: setup.experienceModel,
              retriever: buffer!,
              adapter: setup.adapter,
            }),
    environment,
    tasks,
    maxSteps,
    greedy: mode === 'greedy',
    concurrency: environment === 'real' ? servers : 8,
    random: new SeededRandom(seed + 1000),
    candidateActions: (observation, history) =>
      setup.adapter.candidateActions(observation, history),
  });
  return metrics;
}

const previous = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as { results?: ConditionResult[] })
  : {};
const previousResults = previous.results ?? [];
const results: ConditionResult[] = previousResults.filter(
  (result) =>
    sameScale(result) &&
    !(conditionNames.includes(result.condition) && seeds.includes(result.seed)),
);
const otherScale = previousResults.filter((result) => !sameScale(result));
if (otherScale.length > 0) {
  log(
    `dropping ${otherScale.length} earlier result(s) measured at another scale (${otherScale.map((result) => `${result.condition}/${result.seed}`).join(', ')})`,
  );
}
const runs: ReportRun[] = [];
for (const directory of values['report-runs'] ?? []) {
  runs.push(await loadRun(resolve(directory), basename(directory).replace(/^run-\d+-/, '')));
}
// A kept scratch folder holds the run folders of earlier runs: their training curves stay in
// the report (the conditions run now replace theirs).
if (keepScratch) {
  for (const name of (await readdir(scratch)).sort()) {
    const match = /^run-(\d+)-(.+)$/.exec(name);
    if (!match || Number(match[1]) !== seeds[0] || conditionNames.includes(match[2]!)) continue;
    if (!existsSync(join(scratch, name, 'metrics.jsonl'))) continue;
    runs.push(await loadRun(join(scratch, name), match[2]!));
  }
}

/** Pooled over seeds (and the given splits): successes / episodes with the Wilson interval of the pool. */
function pooled(condition: string, pooledSplits: readonly Split[], mode: Mode) {
  const metrics = results
    .filter((result) => result.condition === condition)
    .flatMap((result) => pooledSplits.map((split) => result.evaluations[split][mode]))
    .filter((value): value is EvaluationMetrics => value !== undefined);
  const episodes = metrics.reduce((total, value) => total + value.episodes, 0);
  const successes = metrics.reduce(
    (total, value) => total + Math.round(value.successRate * value.episodes),
    0,
  );
  return {
    seeds: metrics.length,
    episodes,
    successRate: episodes === 0 ? 0 : successes / episodes,
    successInterval95: wilsonInterval95(successes, episodes),
  };
}

function summary() {
  const conditions = [...new Set(results.map((result) => result.condition))];
  const table = conditions.map((condition) => ({
    condition,
    ...Object.fromEntries(
      splits.flatMap((split) =>
        modes.map((mode) => [`${split}_${mode}`, pooled(condition, [split], mode)]),
      ),
    ),
    syntheticToRealGap: (() => {
      const gaps = results.filter((result) => result.condition === condition);
      const mean = (values: number[]) =>
        values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
      return {
        synthetic: mean(gaps.map((result) => result.syntheticToRealGap.synthetic)),
        real: mean(gaps.map((result) => result.syntheticToRealGap.real)),
      };
    })(),
  }));
  // The paper's claims, on greedy success pooled over seeds and both splits.
  const both = (condition: string) => {
    const greedy = pooled(condition, splits, 'greedy');
    return greedy.episodes === 0 ? undefined : greedy;
  };
  const realRl = both('real-rl');
  const dreamgym = both('dreamgym');
  const s2r = both('dreamgym-s2r');
  return {
    table,
    claims: {
      dreamgymOverRealRl:
        realRl && realRl.successRate > 0 && dreamgym
          ? dreamgym.successRate / realRl.successRate
          : null,
      dreamgymReaches90PercentOfRealRl:
        realRl && dreamgym ? dreamgym.successRate >= 0.9 * realRl.successRate : null,
      s2rBeatsRealRl: realRl && s2r ? s2r.successRate > realRl.successRate : null,
      /** Whether the 95% intervals are disjoint: a difference beyond the evaluation's noise. */
      s2rSeparatesFromRealRl:
        realRl && s2r
          ? s2r.successInterval95[0] > realRl.successInterval95[1] ||
            realRl.successInterval95[0] > s2r.successInterval95[1]
          : null,
      greedySuccess: {
        realRl: realRl?.successRate,
        dreamgym: dreamgym?.successRate,
        s2r: s2r?.successRate,
      },
    },
  };
}

async function writeResults(): Promise<void> {
  await writeFile(
    resultsFile,
    `${JSON.stringify(
      {
        benchmark: 'alfworld-experiment',
        date: new Date().toISOString(),
        protocol: {
          policy:
            'LinearSoftmaxPolicy (2^18 hashed features) warm-started by behaviour cloning on the expert trajectories; GRPO',
          experienceModel:
            'RetrievalExperienceModel over a HashingEmbedder replay buffer of the expert trajectories (and exploration files)',
          scale,
          seeds,
          modes,
          gapTasks: gapTaskCount,
          config: baseConfig(seeds[0]!),
          exploration: values.exploration ?? [],
        },
        ...summary(),
        results,
      },
      null,
      2,
    )}\n`,
  );
  const cell = (metrics: ReturnType<typeof pooled>) =>
    metrics.episodes === 0
      ? '<td>–</td>'
      : `<td>${(100 * metrics.successRate).toFixed(1)}% <span class="ci">[${(100 * metrics.successInterval95[0]).toFixed(1)}, ${(100 * metrics.successInterval95[1]).toFixed(1)}] n=${metrics.episodes}</span></td>`;
  const { table, claims } = summary();
  // The paper's claims are on greedy success over both splits: a column of its own.
  const pooledColumn = splits.length > 1 && modes.includes('greedy');
  const rows = table
    .map((row) => {
      const record = row as unknown as Record<string, ReturnType<typeof pooled>>;
      const cells = splits.flatMap((split) =>
        modes.map((mode) => cell(record[`${split}_${mode}`]!)),
      );
      if (pooledColumn) cells.push(cell(pooled(row.condition, splits, 'greedy')));
      return `<tr><th>${row.condition}</th>${cells.join('')}<td>${(100 * row.syntheticToRealGap.synthetic).toFixed(1)}% vs ${(100 * row.syntheticToRealGap.real).toFixed(1)}%</td></tr>`;
    })
    .join('\n');
  const header = [
    ...splits.flatMap((split) => modes.map((mode) => `<th>${split} (${mode})</th>`)),
    ...(pooledColumn ? ['<th>both splits (greedy)</th>'] : []),
  ].join('');
  const html = renderReport(runs, {
    title: 'DreamGym on ALFWorld: the paper protocol at our scale',
  }).replace(
    '<h2>Runs and ablations</h2>',
    `<h2>Real-engine success, pooled over ${seeds.length === 1 ? 'seed' : 'seeds'} ${seeds.join(', ')} (95% Wilson intervals)</h2>
  <table><thead><tr><th>condition</th>${header}<th>synthetic vs real on ${gapTaskCount} training tasks</th></tr></thead>
  <tbody>${rows}</tbody></table>
  <p>DreamGym (0 real transitions) / real-env RL (${budget}), greedy: ${claims.dreamgymOverRealRl === null ? 'n/a' : claims.dreamgymOverRealRl.toFixed(2)}; S2R (${Math.round(budget / 10)} real) beats real-env RL: ${claims.s2rBeatsRealRl === null ? 'n/a' : `${claims.s2rBeatsRealRl}${claims.s2rSeparatesFromRealRl ? ' (the 95% intervals are disjoint)' : ' (the 95% intervals overlap: not a separation)'}`}.</p>
  <h2>Runs and ablations</h2>`,
  );
  await writeFile(join(resultsDirectory, 'alfworld-report.html'), html);
}

try {
  for (const seed of seeds) {
    // One behaviour-cloned policy per seed; every trained condition starts from it.
    const bcDirectory = join(scratch, `bc-${seed}`);
    // Seconds of behaviour cloning, counted in every trained condition's training time (0
    // when the policy comes from an earlier run).
    let cloningSeconds = 0;
    if (keepScratch && existsSync(bcDirectory)) {
      log(`seed ${seed} bc: the policy cloned earlier into the kept scratch folder ${scratch}`);
    } else if (values['bc-from'] !== undefined) {
      await cp(join(resolve(values['bc-from']), `bc-${seed}`), bcDirectory, { recursive: true });
      log(`seed ${seed} bc: the policy cloned by an earlier run (${values['bc-from']})`);
    } else {
      cloningSeconds = await cloneAlfworldPolicy(setup, protocolSettings(seed), bcDirectory, log);
    }
    const gapTasks = new SeededRandom(seed)
      .fork('gap-tasks')
      .shuffle([...setup.seedTasks])
      .slice(0, gapTaskCount);

    for (const condition of conditionNames) {
      log(`== seed ${seed}: ${condition}`);
      const config = conditionConfig(condition, baseConfig(seed), budget, knownConditions);
      const policy = createLinearSoftmaxPolicy(parseDreamGymConfig(baseConfig(seed)));
      if (condition !== 'random') await policy.loadState(bcDirectory);
      const buffer = await offlineBuffer.fresh(`${seed}-${condition}`);
      let realTransitions = 0;
      let syntheticTransitions = 0;
      const trainingStarted = performance.now();
      if (config !== undefined) {
        const runDirectory = join(scratch, `run-${seed}-${condition}`);
        const result = await new DreamGymLoop({
          config,
          components: {
            adapter: setup.adapter,
            policy,
            experienceModel: setup.experienceModel,
            replayBuffer: buffer,
            seedTasks: setup.seedTasks,
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
      const evaluations = { valid_seen: {}, valid_unseen: {} } as ConditionResult['evaluations'];
      for (const split of splits) {
        for (const mode of modes) {
          evaluations[split][mode] = await evaluate(
            policy,
            'real',
            evaluationSets[split],
            mode,
            seed,
            `${condition} ${split}`,
          );
        }
      }
      const gapMode = modes[0]!;
      const gapLabel = `${condition} gap tasks`;
      const synthetic = await evaluate(
        policy,
        'synthetic',
        gapTasks,
        gapMode,
        seed,
        gapLabel,
        buffer,
      );
      const real = await evaluate(policy, 'real', gapTasks, gapMode, seed, gapLabel);
      await buffer.close();
      const entry: ConditionResult = {
        condition,
        seed,
        scale,
        realTransitions,
        syntheticTransitions,
        trainingSeconds,
        evaluations,
        syntheticToRealGap: {
          tasks: gapTasks.length,
          synthetic: synthetic.successRate,
          real: real.successRate,
          gap: synthetic.successRate - real.successRate,
        },
      };
      log(
        `seed ${seed} ${condition}: ${splits.map((split) => modes.map((mode) => `${split} ${mode} ${percent(evaluations[split][mode])}`).join(', ')).join('; ')}; gap ${(100 * synthetic.successRate).toFixed(1)}% vs ${(100 * real.successRate).toFixed(1)}%`,
      );
      results.push(entry);
      await writeResults();
    }
  }
  // With no condition to run, the summary and the report are rewritten from the results file.
  if (conditionNames.length === 0) await writeResults();
} finally {
  await realPool.closeAll();
  if (!keepScratch) await rm(scratch, { recursive: true, force: true });
}

console.table(
  summary().table.map((row) => {
    const record = row as unknown as Record<string, ReturnType<typeof pooled>>;
    return {
      condition: row.condition,
      ...Object.fromEntries(
        splits.flatMap((split) =>
          modes.map((mode) => {
            const value = record[`${split}_${mode}`]!;
            return [
              `${split} ${mode}`,
              `${(100 * value.successRate).toFixed(1)}% n=${value.episodes}`,
            ];
          }),
        ),
      ),
    };
  }),
);
console.log(JSON.stringify(summary().claims));
