/**
 * Does the synthetic environment tell the truth on every domain, the user's included, and does
 * DreamGym training on it leave the agent no worse on the real environment? For each domain
 * (ALFWorld, MiniWoB++, TextWorld: the last added as a user would, on multi-entity goals) and
 * each seed, with the embedded defaults exactly as `dreamgym train` builds them (one factory,
 * learned outcome judge):
 * - `start`: the behaviour-cloned starting policy, no RL (`--iterations 0`);
 * - `dreamgym`: the same start, then DreamGym in the synthetic environment; the run's own
 *   pre-flight check (`preflight.json`) and its real evaluation on held-out tasks before and
 *   after training (the DreamGym effect);
 * - both measured with `dreamgym fidelity` on a seeded sample of training tasks: synthetic vs
 *   real success on the same tasks, synthetic successes replayed on the real environment
 *   (precision), the policy's real steps teacher-forced (recall of real successes, false
 *   successes).
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/fidelity-domains.ts \
 *     [--domains alfworld,miniwob,textworld] [--seeds 1,2,3] [--tasks 48] [--eval-tasks N] \
 *     [--scratch DIR] [--out DIR] [--keep-best-on-real N]
 * A kept `--scratch DIR` reuses the runs and measurements already there, so an interrupted
 * run resumes where it stopped. Writes results/fidelity-domains.json, merging the domains it
 * measured into the file's others.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { wilsonInterval95 } from '@dreamgym/core/eval';
import { buildTextworldDataset } from '@dreamgym/textworld';
import { dreamgymIn, measureFidelity, type PolicyFidelity } from './fidelity-measurement.js';
import { ensureMiniwobExperimentDataset } from './miniwob-dataset.js';

const { values } = parseArgs({
  options: {
    domains: { type: 'string', default: 'alfworld,miniwob,textworld' },
    seeds: { type: 'string', default: '1,2,3' },
    tasks: { type: 'string', default: '48' },
    'eval-tasks': { type: 'string' },
    scratch: { type: 'string', default: 'scratch/fidelity-domains' },
    out: { type: 'string' },
    'keep-best-on-real': { type: 'string' },
  },
});
/**
 * With `--keep-best-on-real N`, the DreamGym runs keep the policy N real training tasks prefer
 * (validated every sixth iteration: `selection` of the loop), and the results are this variant's.
 */
const selection = values['keep-best-on-real']
  ? { realTasks: Number(values['keep-best-on-real']), every: 6 }
  : undefined;
const variant = selection ? `keep-best-on-real ${selection.realTasks}` : undefined;
const root = resolve(import.meta.dirname, '..');
const scratch = resolve(root, values.scratch!);
const resultsDirectory = values.out ? resolve(values.out) : join(import.meta.dirname, 'results');
const dataRoot = resolve(root, process.env.DREAMGYM_DATA_DIR ?? '../shared/data');
const env = { ...process.env, DREAMGYM_DATA_DIR: dataRoot };
const seeds = values.seeds!.split(',').map(Number);
const started = performance.now();
function log(message: string): void {
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  process.stderr.write(
    `${new Date().toISOString()} [${minutes} min, load ${loadavg()[0]!.toFixed(1)}] ${message}\n`,
  );
}
const dreamgym = dreamgymIn(root, env);

/** How each domain is trained: its data folder and the run configuration (`--config`). */
interface DomainSpec {
  data: () => Promise<string>;
  config: Record<string, unknown>;
  /** Flags every run of the domain takes (given the data folder). */
  flags: (data: string) => string[];
}

const DOMAINS: Record<string, DomainSpec> = {
  // The main job's configuration: behaviour cloning on 500 demonstrations, 24 GRPO iterations.
  alfworld: {
    data: async () => join(dataRoot, 'alfworld'),
    config: JSON.parse(await readFile(join(root, 'configs', 'alfworld-main.json'), 'utf8')),
    flags: () => [],
  },
  // The MiniWoB++ experiment's loop and cloning (`miniwob-fidelity.ts`), evaluated on the
  // held-out seeds of its 12 tasks.
  miniwob: {
    data: async () => {
      const dir = join(root, 'scratch', 'miniwob-data');
      await ensureMiniwobExperimentDataset({
        dir,
        trainSeeds: 30,
        evalSeeds: 15,
        maxSteps: 8,
        concurrency: 2,
        log,
      });
      return dir;
    },
    config: {
      iterations: 40,
      tasksPerIteration: 16,
      rolloutsPerTask: 4,
      maxSteps: 5,
      concurrency: 8,
      realConcurrency: 2,
      algorithm: 'grpo',
      trainer: { epochs: 2 },
      policy: { hashBits: 18, learningRate: 0.005 },
      warmStart: {
        behaviourCloning: { epochs: 20, miniBatchSize: 64, heldOutShare: 0.1, patience: 3 },
      },
      curriculum: { lambda: 0.3, tasksToExpand: 4, variantsPerTask: 2 },
      retrieval: { k: 8 },
      evaluation: { every: 0, environments: ['real'], modes: ['greedy'] },
      setup: { evalSplit: 'eval' },
    },
    flags: () => [],
  },
  // The third domain, added with `dreamgym new adapter` as a user would: TextWorld's cooking
  // games, recipes of 1 to 4 named ingredients (counted multi-entity goals), 40 training games
  // with their walkthroughs plus 200 exploration episodes (random and perturbed walkthroughs),
  // 60 held-out games of foods the training games never show.
  textworld: {
    data: async () => {
      const dir = join(root, 'scratch', 'textworld-data');
      await buildTextworldDataset({ dir, train: 40, valid: 60, test: 20 });
      const exploration = join(dir, 'exploration.jsonl');
      if (!existsSync(exploration)) {
        log('exploring the TextWorld training games: 200 episodes...');
        await dreamgym([
          'data',
          'explore',
          '--domain',
          'textworld',
          '--data',
          dir,
          '--out',
          exploration,
          '--episodes',
          '200',
          '--concurrency',
          '2',
        ]);
      }
      return dir;
    },
    config: {
      iterations: 24,
      tasksPerIteration: 16,
      rolloutsPerTask: 4,
      maxSteps: 40,
      concurrency: 8,
      realConcurrency: 2,
      algorithm: 'grpo',
      trainer: { epochs: 2, learningRate: 0.01, episodeWeighting: 'episode' },
      policy: { hashBits: 18, learningRate: 0.05 },
      warmStart: { behaviourCloning: {} },
      curriculum: { lambda: 0.3, tasksToExpand: 4, variantsPerTask: 2 },
      retrieval: { k: 8 },
      evaluation: { every: 0, environments: ['real'], modes: ['greedy'], gapTasks: 20 },
      setup: { evalSplit: 'valid' },
    },
    flags: (data) => ['--offline', join(data, 'exploration.jsonl')],
  },
};

/** Trains into `runDirectory` unless a finished run is there. */
async function ensureRun(runDirectory: string, args: string[]): Promise<void> {
  if (existsSync(join(runDirectory, 'checkpoints', 'LATEST'))) {
    log(`reusing ${runDirectory}`);
    return;
  }
  log(`training ${runDirectory}...`);
  const resume = existsSync(join(runDirectory, 'config.json')) ? ['--resume'] : [];
  await dreamgym(['train', '--run-dir', runDirectory, ...args, ...resume]);
}

interface Evaluation {
  mode: string;
  environment: string;
  successRate: number;
  episodes: number;
}

/** The greedy real evaluation of `evaluations`. */
function greedyReal(evaluations: readonly Evaluation[]): Evaluation {
  const found = evaluations.find(
    (evaluation) => evaluation.mode === 'greedy' && evaluation.environment === 'real',
  );
  if (!found) throw new Error('the run has no greedy real evaluation');
  return found;
}

/** Pooled successes over seeds, with the 95% interval. */
function pooled(counts: ReadonlyArray<{ successes: number; episodes: number }>) {
  const successes = counts.reduce((sum, count) => sum + count.successes, 0);
  const episodes = counts.reduce((sum, count) => sum + count.episodes, 0);
  return {
    rate: episodes === 0 ? 0 : successes / episodes,
    interval95: wilsonInterval95(successes, episodes),
    successes,
    episodes,
  };
}

/** A policy's fidelity figures over seeds: the fields, pooled, and per seed. */
function policyFigures(policy: string, measured: ReadonlyArray<PolicyFidelity & { seed: number }>) {
  const count = (field: 'syntheticSuccess' | 'realSuccess') =>
    pooled(measured.map((row) => row[field] as { successes: number; episodes: number }));
  const precision = pooled(
    measured.map((row) => ({
      successes: row.syntheticSuccessPrecision.reallySucceeded,
      episodes: row.syntheticSuccessPrecision.replayed,
    })),
  );
  const mean = (field: 'trueSuccessRecall' | 'falseSuccessRate') =>
    measured.reduce((sum, row) => sum + row[field], 0) / Math.max(1, measured.length);
  return {
    policy,
    syntheticSuccess: count('syntheticSuccess'),
    realSuccess: count('realSuccess'),
    precision,
    recall: mean('trueSuccessRecall'),
    falseSuccessRate: mean('falseSuccessRate'),
    seeds: measured.map((row) => ({
      seed: row.seed,
      tasks: row.tasks,
      syntheticSuccess: row.syntheticSuccess,
      realSuccess: row.realSuccess,
      precision: row.syntheticSuccessPrecision,
      recall: row.trueSuccessRecall,
      falseSuccessRate: row.falseSuccessRate,
      report: row.report,
    })),
  };
}

async function measureDomain(domain: string) {
  const spec = DOMAINS[domain];
  if (!spec) throw new Error(`Unknown domain ${domain}: one of ${Object.keys(DOMAINS)}.`);
  const data = await spec.data();
  const directory = join(scratch, domain);
  await mkdir(directory, { recursive: true });
  const measured: Record<'start' | 'dreamgym', Array<PolicyFidelity & { seed: number }>> = {
    start: [],
    dreamgym: [],
  };
  const effect = [];
  const selections: unknown[] = [];
  let preflight: unknown;
  for (const seed of seeds) {
    const configFile = join(directory, `config-${seed}.json`);
    const config = { ...spec.config, seed, ...(selection ? { selection } : {}) };
    await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`);
    const common = [
      '--domain',
      domain,
      '--data',
      data,
      '--config',
      configFile,
      ...spec.flags(data),
    ];
    const evalTasks = values['eval-tasks'] ? ['--eval-tasks', values['eval-tasks']] : [];
    const runs = {
      start: join(directory, `start-${seed}`),
      dreamgym: join(directory, `dreamgym-${seed}`),
    };
    // The starting policy alone: cloned, no RL, nothing evaluated (the DreamGym run measures it).
    await ensureRun(runs.start, [
      ...common,
      '--iterations',
      '0',
      '--no-baseline',
      '--eval-env',
      'synthetic',
      '--eval-split',
      'train',
      '--eval-tasks',
      '8',
    ]);
    await ensureRun(runs.dreamgym, [...common, ...evalTasks]);
    for (const policy of ['start', 'dreamgym'] as const) {
      const row = await measureFidelity({
        dreamgym,
        runDirectory: runs[policy],
        policy,
        model: 'now',
        split: 'train',
        taskFlags: [
          '--eval-tasks',
          '100000',
          '--sample-tasks',
          values.tasks!,
          '--seed',
          String(seed),
        ],
        file: join(directory, `fidelity-${policy}-${seed}`),
        log,
      });
      measured[policy].push({ ...row, seed });
    }
    preflight = JSON.parse(await readFile(join(runs.dreamgym, 'preflight.json'), 'utf8'));
    const start = greedyReal(
      JSON.parse(await readFile(join(runs.dreamgym, 'start-evaluation.json'), 'utf8')).evaluations,
    );
    // The policy the run ended on: the kept one (`selection.json`), or the last iteration's.
    const selectionFile = join(runs.dreamgym, 'selection.json');
    const lines = (await readFile(join(runs.dreamgym, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    const kept = existsSync(selectionFile)
      ? JSON.parse(await readFile(selectionFile, 'utf8'))
      : undefined;
    const after = greedyReal(kept?.evaluations ?? JSON.parse(lines.at(-1)!).evaluations);
    if (kept) selections.push({ seed, keptIteration: kept.keptIteration, records: kept.records });
    const counted = (evaluation: Evaluation) => ({
      successes: Math.round(evaluation.successRate * evaluation.episodes),
      episodes: evaluation.episodes,
    });
    effect.push({ seed, start: pooled([counted(start)]), after: pooled([counted(after)]) });
    log(
      `${domain} seed ${seed}: real ${(start.successRate * 100).toFixed(1)}% -> ${(after.successRate * 100).toFixed(1)}%`,
    );
  }
  const startPooled = pooled(effect.map((seed) => seed.start));
  const afterPooled = pooled(effect.map((seed) => seed.after));
  return {
    domain,
    ...(variant ? { variant, selection: { ...selection, perSeed: selections } } : {}),
    data,
    policies: [
      policyFigures('start', measured.start),
      policyFigures('dreamgym', measured.dreamgym),
    ],
    preflight,
    dreamgymEffect: {
      start: startPooled,
      after: afterPooled,
      // Lower outside the intervals: the trained policy's interval entirely below the start's.
      lowered: afterPooled.interval95[1] < startPooled.interval95[0],
      perSeed: effect.map((seed) => ({
        ...seed,
        lowered: seed.after.interval95[1] < seed.start.interval95[0],
      })),
    },
  };
}

await mkdir(resultsDirectory, { recursive: true });
const resultsFile = join(resultsDirectory, 'fidelity-domains.json');
const previous = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as {
      domains: Array<{ domain: string; variant?: string }>;
    })
  : { domains: [] };
for (const domain of values.domains!.split(',')) {
  const result = await measureDomain(domain);
  previous.domains = [
    ...previous.domains.filter((entry) => entry.domain !== domain || entry.variant !== variant),
    result,
  ];
  await writeFile(
    resultsFile,
    `${JSON.stringify(
      {
        description:
          "Truth of the synthetic environment on each domain, on the policy's own episodes (greedy, a seeded sample of training tasks per seed): the starting (behaviour-cloned) and the DreamGym-trained policy in the synthetic and the real environment, synthetic successes replayed for real (precision), real steps teacher-forced (recall, false successes); the run's pre-flight check; real held-out success before and after DreamGym (pooled over seeds, 95% Wilson intervals).",
        targets: {
          precision: 0.9,
          recall: 0.9,
          syntheticRealGapPoints: 5,
          falseSuccessRate: 0.02,
          dreamgymLowersNoDomain: true,
        },
        machine: { cores: cpus().length, loadAverage1m: loadavg()[0] },
        domains: previous.domains,
      },
      null,
      2,
    )}\n`,
  );
  log(`${domain}: written to ${resultsFile}`);
}
