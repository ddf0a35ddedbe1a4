/**
 * The inputs of the tiny-scale check of `benchmarks/gpu/miniwob-llm.sh` on a CPU machine
 * (benchmarks/README.md): a MiniWoB++ dataset of the experiment's 12 tasks with 3 training and 1
 * held-out seed each (built on the real pages unless already there) and the start's cloning
 * settings cut to one epoch.
 *
 * Usage: npx tsx benchmarks/gpu/miniwob-llm-check-inputs.ts [DIRECTORY]  (default
 * scratch/h52-gpu-check): writes DIRECTORY/dataset and DIRECTORY/bc-settings-1-epoch.json.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { log } from '../alfworld-protocol.js';
import { MINIWOB_MAX_STEPS } from '../miniwob-budget-domain.js';
import { ensureMiniwobExperimentDataset } from '../miniwob-dataset.js';

const root = resolve(import.meta.dirname, '..', '..');
const directory = resolve(process.argv[2] ?? join(root, 'scratch', 'h52-gpu-check'));
await mkdir(directory, { recursive: true });
await ensureMiniwobExperimentDataset({
  dir: join(directory, 'dataset'),
  trainSeeds: 3,
  evalSeeds: 1,
  maxSteps: MINIWOB_MAX_STEPS,
  concurrency: 2,
  log,
});
const settings = JSON.parse(
  await readFile(join(root, 'benchmarks', 'results', 'miniwob-llm', 'bc-settings.json'), 'utf8'),
) as { chosen: { epochs: number } };
settings.chosen.epochs = 1;
await writeFile(
  join(directory, 'bc-settings-1-epoch.json'),
  `${JSON.stringify({ ...settings, note: 'the tiny-scale check of benchmarks/gpu/miniwob-llm.sh: one epoch' }, null, 2)}\n`,
);
log(`check inputs in ${directory}`);
