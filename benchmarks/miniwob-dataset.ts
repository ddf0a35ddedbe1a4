/**
 * The MiniWoB++ benchmarks' dataset (`miniwob-experiment.ts`, `miniwob-fidelity.ts`): task
 * instances of `MINIWOB_EXPERIMENT_TASKS` and one uniform-random exploration episode per
 * training instance, built on the real pages into a folder unless a complete one is there.
 */
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  buildMiniwobDataset,
  MINIWOB_EXPERIMENT_TASKS,
  type MiniwobDatasetSummary,
} from '@dreamgym/miniwob';

/**
 * Builds the dataset in `dir` unless it is complete; resolves to the build's summary, or
 * `{ reused: true }`. A dataset is complete once its exploration episodes are written (the
 * tasks file comes first: an interrupted build leaves it without them).
 */
export async function ensureMiniwobExperimentDataset(options: {
  dir: string;
  trainSeeds: number;
  evalSeeds: number;
  maxSteps: number;
  concurrency: number;
  log: (message: string) => void;
}): Promise<MiniwobDatasetSummary | { reused: true }> {
  const { dir, trainSeeds, evalSeeds, log } = options;
  const trajectoriesDirectory = join(dir, 'trajectories');
  const complete =
    existsSync(join(dir, 'tasks.jsonl')) &&
    existsSync(trajectoriesDirectory) &&
    (await readdir(trajectoriesDirectory)).some((name) => name.endsWith('.jsonl'));
  if (complete) {
    log(`reusing the dataset in ${dir}`);
    return { reused: true };
  }
  log(
    `building the dataset in ${dir}: ${MINIWOB_EXPERIMENT_TASKS.length} tasks x (${trainSeeds} train + ${evalSeeds} eval seeds), one exploration episode per train seed`,
  );
  let lastShown = 0;
  const summary = await buildMiniwobDataset({
    dir,
    tasks: MINIWOB_EXPERIMENT_TASKS,
    trainSeeds,
    evalSeeds,
    explorationMaxSteps: options.maxSteps,
    concurrency: options.concurrency,
    onProgress: ({ phase, done, total, detail }) => {
      if (done === total || Date.now() - lastShown > 20_000) {
        lastShown = Date.now();
        log(`dataset ${phase} ${done}/${total} (${detail})`);
      }
    },
  });
  log(`dataset: ${JSON.stringify(summary)}`);
  return summary;
}
