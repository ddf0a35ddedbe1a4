/**
 * On-policy fidelity of the ALFWorld synthetic environment: does it agree with the real engine
 * on the *policy's own* episodes? For three policies, each measured with `dreamgym fidelity`
 * on the same seeded sample of training games (never the evaluation splits), with the
 * embedded experience model as it is now (learned outcome judge and world memory) and as it
 * was before them (the neighbours' vote alone, `before`):
 * - `bc`: the main job's starting policy (behaviour cloning on its fixed share of the
 *   demonstrations, no RL);
 * - `main-job`: the main job's trained policy (`--main-run DIR`, else trained here with
 *   `configs/alfworld-main.json`);
 * - `dreamgym-from-scratch`: the previous main job's policy, DreamGym from the untrained
 *   linear policy in the synthetic environment of the model before this change (the policy
 *   that learned the old model's blind spots: 52.5% synthetic vs 0.0% real).
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/on-policy-fidelity.ts \
 *     [--tasks 48] [--seed 1] [--main-run DIR] [--scratch DIR] [--out DIR]
 * A kept `--scratch DIR` reuses the runs and reports already there. Writes
 * on-policy-fidelity.json (and one HTML page per measurement in the scratch folder).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  dataRootEnvironment,
  dreamgymIn,
  type FidelityModel,
  fidelityTable,
  measureFidelity,
  type PolicyFidelity,
} from './fidelity-measurement.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '48' },
    seed: { type: 'string', default: '1' },
    'main-run': { type: 'string' },
    scratch: { type: 'string', default: '/tmp/dreamgym-on-policy-fidelity' },
    out: { type: 'string' },
  },
});
const { env } = dataRootEnvironment('alfworld');
const root = resolve(import.meta.dirname, '..');
const scratch = resolve(values.scratch!);
const resultsDirectory = values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results');
await mkdir(scratch, { recursive: true });
await mkdir(resultsDirectory, { recursive: true });
const started = performance.now();

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString()} ${message}\n`);
}

const dreamgym = dreamgymIn(root, env);

/** The previous main job: DreamGym from the untrained linear policy. */
const FROM_SCRATCH_CONFIG = {
  seed: 1,
  iterations: 12,
  tasksPerIteration: 16,
  rolloutsPerTask: 4,
  maxSteps: 30,
  concurrency: 8,
  realConcurrency: 2,
  algorithm: 'grpo',
  trainer: { epochs: 2 },
  policy: { hashBits: 18, learningRate: 0.05 },
  curriculum: { lambda: 0.3, tasksToExpand: 4, variantsPerTask: 2 },
  retrieval: { k: 8 },
  evaluation: { every: 0, environments: ['synthetic'], modes: ['greedy'] },
  setup: { evalSplit: 'train', evalTasks: 8 },
};

/** Trains into `runDirectory` unless a finished run is there. */
async function ensureRun(runDirectory: string, args: string[]): Promise<string> {
  if (existsSync(join(runDirectory, 'checkpoints'))) {
    log(`reusing ${runDirectory}`);
    return runDirectory;
  }
  log(`training ${runDirectory}...`);
  await dreamgym(['train', '--domain', 'alfworld', '--run-dir', runDirectory, ...args]);
  return runDirectory;
}

const fromScratchConfig = join(scratch, 'from-scratch-config.json');
await writeFile(fromScratchConfig, `${JSON.stringify(FROM_SCRATCH_CONFIG, null, 2)}\n`);
const mainConfig = join(root, 'configs', 'alfworld-main.json');
const runs: Record<string, string> = {
  bc: await ensureRun(join(scratch, 'bc'), [
    '--config',
    mainConfig,
    '--iterations',
    '0',
    '--no-baseline',
    '--eval-env',
    'synthetic',
    '--eval-split',
    'train',
    '--eval-tasks',
    '8',
  ]),
  'main-job': values['main-run']
    ? resolve(values['main-run'])
    : await ensureRun(join(scratch, 'main-job'), ['--config', mainConfig]),
  'dreamgym-from-scratch': await ensureRun(join(scratch, 'from-scratch'), [
    '--config',
    fromScratchConfig,
    '--no-baseline',
    '--no-outcome-judge',
    '--no-world-memory',
  ]),
};

function measure(policy: string, model: FidelityModel): Promise<PolicyFidelity> {
  return measureFidelity({
    dreamgym,
    runDirectory: runs[policy]!,
    policy,
    model,
    split: 'train',
    taskFlags: ['--eval-tasks', '300', '--sample-tasks', values.tasks!, '--seed', values.seed!],
    file: join(scratch, `fidelity-${policy}-${model}`),
    log,
  });
}

/** Waits for a run trained elsewhere (`--main-run`) to finish: its last iteration evaluated. */
async function finished(runDirectory: string): Promise<void> {
  for (;;) {
    const metrics = join(runDirectory, 'metrics.jsonl');
    if (existsSync(metrics)) {
      const lines = (await readFile(metrics, 'utf8')).trim().split('\n');
      const last = lines.at(-1) ? JSON.parse(lines.at(-1)!) : undefined;
      if (last && last.evaluations.length > 0) return;
    }
    log(`waiting for ${runDirectory} to finish...`);
    await new Promise((done) => setTimeout(done, 30_000));
  }
}

const policies: PolicyFidelity[] = [];
const before: PolicyFidelity[] = [];
// The main job last: with --main-run it may still be training.
for (const policy of ['bc', 'dreamgym-from-scratch', 'main-job']) {
  if (policy === 'main-job') await finished(runs[policy]!);
  policies.push(await measure(policy, 'now'));
  before.push(await measure(policy, 'before'));
}

console.log(fidelityTable([...policies, ...before]));
await writeFile(
  join(resultsDirectory, 'on-policy-fidelity.json'),
  `${JSON.stringify(
    {
      description:
        'On-policy fidelity on a seeded sample of ALFWorld training games (greedy): each policy in the synthetic environment and on the real engine, synthetic successes replayed on the real engine, its real steps predicted with teacher forcing. policies: the embedded model now (learned outcome judge, world memory); before: the same policies with the model before them (neighbour vote).',
      seed: Number(values.seed),
      sampledTasks: Number(values.tasks),
      runs,
      policies,
      before,
      minutes: (performance.now() - started) / 60_000,
    },
    null,
    2,
  )}\n`,
);
log(`wrote ${join(resultsDirectory, 'on-policy-fidelity.json')}`);
