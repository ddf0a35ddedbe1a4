/**
 * The main job's MiniWoB++ dataset (`npm run train`), built on the real pages with the
 * adapter's `buildMiniwobDataset` unless a complete one is in the folder: the twelve tasks of
 * `MINIWOB_EXPERIMENT_TASKS`, training seeds 0-29 with one uniform-random exploration episode
 * each (the offline data, whose successes the start clones a share of), held-out seeds
 * 100000-100024 (300 instances, evaluation only). The build is made once: `dataset.json`,
 * written last, marks the folder complete; an interrupted build is made again.
 *
 * Usage: npx tsx scripts/miniwob-dataset.ts --dir DIR [--train-seeds 30] [--eval-seeds 25]
 *   [--tasks a,b] [--concurrency 2]
 */
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildMiniwobDataset, MINIWOB_EXPERIMENT_TASKS } from '@dreamgym/miniwob';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' },
    'train-seeds': { type: 'string', default: '30' },
    'eval-seeds': { type: 'string', default: '25' },
    tasks: { type: 'string' },
    concurrency: { type: 'string', default: '2' },
  },
});
if (!values.dir)
  throw new Error('scripts/miniwob-dataset.ts: pass --dir DIR (the dataset folder).');
const wholeNumber = (flag: 'train-seeds' | 'eval-seeds' | 'concurrency') => {
  const value = Number(values[flag]);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(
      `scripts/miniwob-dataset.ts: --${flag} must be a positive whole number, got "${values[flag]}".`,
    );
  }
  return value;
};
const dir = resolve(values.dir);
const settings = {
  tasks: values.tasks ? values.tasks.split(',') : [...MINIWOB_EXPERIMENT_TASKS],
  trainSeeds: wholeNumber('train-seeds'),
  evalSeeds: wholeNumber('eval-seeds'),
  explorationMaxSteps: 5,
};
const marker = join(dir, 'dataset.json');
const log = (message: string) => process.stderr.write(`[miniwob dataset] ${message}\n`);

if (existsSync(marker)) {
  const built = JSON.parse(await readFile(marker, 'utf8'));
  if (JSON.stringify(built.settings) !== JSON.stringify(settings)) {
    throw new Error(
      `${dir} holds a MiniWoB++ dataset built with ${JSON.stringify(built.settings)}, not ${JSON.stringify(settings)}: remove the folder or choose another.`,
    );
  }
  log(`reusing ${dir} (built ${built.builtAt} in ${built.seconds.toFixed(0)} s)`);
} else {
  // An interrupted build leaves a partial folder: it is made again from the start.
  await rm(dir, { recursive: true, force: true });
  log(
    `building ${dir} on the real pages: ${settings.tasks.length} tasks x (${settings.trainSeeds} train + ${settings.evalSeeds} eval seeds), one exploration episode per train seed`,
  );
  const started = performance.now();
  let shown = 0;
  const summary = await buildMiniwobDataset({
    dir,
    ...settings,
    concurrency: wholeNumber('concurrency'),
    onProgress: ({ phase, done, total }) => {
      if (done === total || performance.now() - shown > 20_000) {
        shown = performance.now();
        log(`${phase} ${done}/${total}`);
      }
    },
  });
  const seconds = (performance.now() - started) / 1000;
  const { files: _files, ...counts } = summary;
  await writeFile(
    marker,
    `${JSON.stringify({ settings, ...counts, seconds, builtAt: new Date().toISOString() }, null, 2)}\n`,
  );
  log(
    `built in ${seconds.toFixed(0)} s: ${counts.tasks.train} train and ${counts.tasks.eval} eval instances, ${counts.trajectories} exploration episodes (${counts.successes} successes)`,
  );
}
