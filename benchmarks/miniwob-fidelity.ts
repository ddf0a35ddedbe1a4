/**
 * On-policy fidelity of the MiniWoB++ synthetic environment: does it agree with the real task
 * pages (the `miniwob` PyPI package served on 127.0.0.1, played in Chromium) on the *policy's
 * own* episodes? The ALFWorld harness (`on-policy-fidelity.ts`) on the second domain whose
 * real environment runs here. Each policy is measured with `dreamgym fidelity` on the same
 * seeded sample of training instances (`policies`, `before`), with the embedded experience
 * model as it is now (learned outcome judge and world memory) and as it was before them (the
 * neighbours' vote alone, `before`); and on a seeded sample of the held-out `eval` seeds
 * (`heldOut`), where the world memory has nothing to answer from:
 * - `bc`: behaviour cloning on the successful uniform-random exploration episodes, no RL;
 * - `dreamgym`: the same cloning, then DreamGym in the synthetic environment of the model now;
 * - `dreamgym-before`: the same cloning, then DreamGym in the synthetic environment of the
 *   model before the judge and the world memory (`--no-outcome-judge --no-world-memory`): the
 *   policy that could learn that model's blind spots.
 *
 * MiniWoB++ task ids name the page and its seed (`click-button:7`) and set no `meta.world`,
 * so each instance is its own world: the world memory answers only on the training instances
 * the exploration played (one episode each), never on a held-out seed.
 *
 * The dataset (task instances and one uniform-random exploration episode per training
 * instance, on the real pages) is built as `miniwob-experiment.ts` builds it, into --data
 * (kept for re-runs; the experiment's README command uses the same folder and scale).
 *
 * Usage (after `npm run build`):
 *   npx tsx benchmarks/miniwob-fidelity.ts [--data /tmp/miniwob-data] [--train-seeds 10] \
 *     [--eval-seeds 8] [--tasks 60] [--seed 1] [--iterations 15] [--concurrency 2] \
 *     [--policies bc,dreamgym,dreamgym-before] [--splits train,eval] [--scratch DIR] [--out DIR]
 * A kept `--scratch DIR` reuses the runs and reports already there. Writes
 * on-policy-fidelity-miniwob.json (and one HTML page per measurement in the scratch folder).
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { MINIWOB_EXPERIMENT_TASKS } from '@dreamgym/miniwob';
import {
  dreamgymIn,
  type FidelityModel,
  fidelityTable,
  measureFidelity,
  type PolicyFidelity,
} from './fidelity-measurement.js';
import { ensureMiniwobExperimentDataset } from './miniwob-dataset.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '/tmp/miniwob-data' },
    'train-seeds': { type: 'string', default: '10' },
    'eval-seeds': { type: 'string', default: '8' },
    tasks: { type: 'string', default: '60' },
    seed: { type: 'string', default: '1' },
    iterations: { type: 'string', default: '15' },
    'max-steps': { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '2' },
    policies: { type: 'string', default: 'bc,dreamgym,dreamgym-before' },
    splits: { type: 'string', default: 'train,eval' },
    scratch: { type: 'string', default: '/tmp/dreamgym-miniwob-fidelity' },
    out: { type: 'string' },
  },
});
const root = resolve(import.meta.dirname, '..');
const data = resolve(values.data!);
const scratch = resolve(values.scratch!);
const resultsDirectory = values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results');
const maxSteps = Number(values['max-steps']);
const realConcurrency = Number(values.concurrency);
const splits = values.splits!.split(',');
await mkdir(scratch, { recursive: true });
await mkdir(resultsDirectory, { recursive: true });
const started = performance.now();

function log(message: string): void {
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  process.stderr.write(
    `${new Date().toISOString()} [${minutes} min, load ${loadavg()[0]!.toFixed(1)}] ${message}\n`,
  );
}

// How loaded the shared machine was: the 1-minute load average every 30 s.
const loadSamples: number[] = [loadavg()[0]!];
const loadTimer = setInterval(() => loadSamples.push(loadavg()[0]!), 30_000);
loadTimer.unref();

const dreamgym = dreamgymIn(root, process.env);

/** The JSON records of every line of `file`. */
async function records(file: string): Promise<Array<Record<string, unknown>>> {
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

// The dataset, built on the real pages unless it is there already.
const built = !(
  'reused' in
  (await ensureMiniwobExperimentDataset({
    dir: data,
    trainSeeds: Number(values['train-seeds']),
    evalSeeds: Number(values['eval-seeds']),
    maxSteps,
    concurrency: realConcurrency,
    log,
  }))
);
const trajectoriesDirectory = join(data, 'trajectories');
// What the dataset holds, counted from its files (built now or earlier).
const taskRecords = await records(join(data, 'tasks.jsonl'));
const episodes = (
  await Promise.all(
    (
      await readdir(trajectoriesDirectory)
    )
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => records(join(trajectoriesDirectory, name))),
  )
).flat();
const dataset = {
  directory: data,
  builtByThisRun: built,
  instances: Object.fromEntries(
    ['train', 'eval'].map((split) => [
      split,
      taskRecords.filter((task) => (task.meta as { split: string }).split === split).length,
    ]),
  ),
  explorationEpisodes: episodes.length,
  successfulEpisodes: episodes.filter((episode) => episode.success === true).length,
  transitions: episodes.reduce((sum, episode) => sum + (episode.steps as unknown[]).length, 0),
};
log(`dataset: ${JSON.stringify(dataset)}`);

/** The MiniWoB++ experiment's loop (`miniwob-experiment.ts`), cloned first. */
const TRAIN_CONFIG = {
  seed: Number(values.seed),
  iterations: Number(values.iterations),
  tasksPerIteration: 16,
  rolloutsPerTask: 4,
  maxSteps,
  concurrency: 8,
  realConcurrency,
  algorithm: 'grpo',
  trainer: { epochs: 2 },
  policy: { hashBits: 18, learningRate: 0.05 },
  // The experiment's cloning: 256-step mini-batches are one step an epoch on ~65 steps.
  warmStart: {
    behaviourCloning: { epochs: 20, miniBatchSize: 64, heldOutShare: 0.1, patience: 3 },
  },
  curriculum: { lambda: 0.3, tasksToExpand: 4, variantsPerTask: 2 },
  retrieval: { k: 8 },
  evaluation: { every: 0, environments: ['synthetic'], modes: ['greedy'] },
  setup: { evalSplit: 'train', evalTasks: 8 },
};
const configFile = join(scratch, 'train-config.json');
await writeFile(configFile, `${JSON.stringify(TRAIN_CONFIG, null, 2)}\n`);

/** Trains into `runDirectory` unless a finished run is there. */
async function ensureRun(runDirectory: string, args: string[]): Promise<string> {
  if (existsSync(join(runDirectory, 'checkpoints'))) {
    log(`reusing ${runDirectory}`);
    return runDirectory;
  }
  log(`training ${runDirectory}...`);
  await dreamgym([
    'train',
    '--domain',
    'miniwob',
    '--data',
    data,
    '--config',
    configFile,
    '--run-dir',
    runDirectory,
    '--no-baseline',
    ...args,
  ]);
  return runDirectory;
}

const TRAINING: Record<string, string[]> = {
  bc: ['--iterations', '0'],
  dreamgym: [],
  'dreamgym-before': ['--no-outcome-judge', '--no-world-memory'],
};
const policyNames = values.policies!.split(',');
for (const name of policyNames) {
  if (!(name in TRAINING))
    throw new Error(`Unknown policy ${name}: one of ${Object.keys(TRAINING)}.`);
}
const runs: Record<string, string> = {};
const warmStarts: Record<string, unknown> = {};
for (const name of policyNames) {
  runs[name] = await ensureRun(join(scratch, name), TRAINING[name]!);
  const { epochs: _epochs, ...cloning } = JSON.parse(
    await readFile(join(runs[name]!, 'warm-start.json'), 'utf8'),
  );
  warmStarts[name] = cloning;
}

function measure(policy: string, model: FidelityModel, split: string): Promise<PolicyFidelity> {
  // --sample-tasks samples the whole split (the runs evaluated on its first 8 instances).
  return measureFidelity({
    dreamgym,
    runDirectory: runs[policy]!,
    policy,
    model,
    split,
    taskFlags: ['--sample-tasks', values.tasks!, '--seed', values.seed!],
    file: join(scratch, `fidelity-${policy}-${model}-${split}`),
    log,
  });
}

const bySplit: Record<string, { policies: PolicyFidelity[]; before: PolicyFidelity[] }> = {};
for (const split of splits) {
  const measured = { policies: [] as PolicyFidelity[], before: [] as PolicyFidelity[] };
  for (const policy of policyNames) {
    measured.policies.push(await measure(policy, 'now', split));
    measured.before.push(await measure(policy, 'before', split));
  }
  bySplit[split] = measured;
}

console.log(
  fidelityTable(Object.values(bySplit).flatMap(({ policies, before }) => [...policies, ...before])),
);
const file = join(resultsDirectory, 'on-policy-fidelity-miniwob.json');
await writeFile(
  file,
  `${JSON.stringify(
    {
      description:
        'On-policy fidelity on a seeded sample of MiniWoB++ training instances (greedy; real task pages of the miniwob package in Chromium): each policy in the synthetic environment and on the real pages, synthetic successes replayed on the real pages, its real steps predicted with teacher forcing. policies: the embedded model now (learned outcome judge, world memory); before: the same policies with the model before them (neighbour vote). heldOut: the same on a seeded sample of the held-out eval seeds.',
      tasks: MINIWOB_EXPERIMENT_TASKS,
      seed: Number(values.seed),
      sampledTasks: Number(values.tasks),
      maxSteps,
      trainConfig: TRAIN_CONFIG,
      dataset,
      worldMemory:
        'keyed by worldOf(task): MiniWoB++ tasks set no meta.world and their ids name the page and seed (click-button:7), so it answers only on the training instances the exploration played, never on a held-out seed',
      runs,
      warmStarts,
      policies: bySplit.train?.policies ?? [],
      before: bySplit.train?.before ?? [],
      ...(bySplit.eval ? { heldOut: bySplit.eval } : {}),
      machine: {
        cores: cpus().length,
        loadAverage1m: {
          min: Math.min(...loadSamples),
          mean: loadSamples.reduce((a, b) => a + b, 0) / loadSamples.length,
          max: Math.max(...loadSamples),
        },
      },
      minutes: (performance.now() - started) / 60_000,
    },
    null,
    2,
  )}\n`,
);
log(`wrote ${file}`);
