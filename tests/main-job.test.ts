/**
 * The main job's script (`npm run train`, scripts/train.sh) at a tiny scale, as a user runs it:
 * its set-up steps, the build, the dataset made on the real MiniWoB++ pages (two tasks) and
 * `dreamgym train` with configs/miniwob-main.json for two iterations. It must print the
 * pre-flight verdict, the same training instances in both environments and the headline, then
 * the phases' seconds with the load; a second dataset call reuses the folder. The full job is
 * a benchmark (benchmarks/main-job.ts).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoryRoot, run } from './workspace.js';

const DATASET = '--tasks click-test,click-button --train-seeds 12 --eval-seeds 2';

describe('npm run train (scripts/train.sh), tiny scale', () => {
  let jobDirectory: string;
  let output: string;
  beforeAll(async () => {
    jobDirectory = await mkdtemp(join(tmpdir(), 'dreamgym-main-job-'));
    output = await run(
      'bash',
      [
        'scripts/train.sh',
        '--run-dir',
        join(jobDirectory, 'run'),
        '--iterations',
        '2',
        '--gap-tasks',
        '2',
      ],
      {
        cwd: repositoryRoot,
        env: { DREAMGYM_MAIN_JOB_DIR: jobDirectory, DREAMGYM_MAIN_JOB_DATASET: DATASET },
      },
    );
  }, 600_000);
  afterAll(async () => {
    await rm(jobDirectory, { recursive: true, force: true });
  });

  it('prints the pre-flight verdict and the same-task line beside the headline, then the phases with the load', () => {
    expect(output).toMatch(/^pre-flight: (passed|FAILED, trained with --force) \(held-out recall/m);
    expect(output).toMatch(
      /^same 2 training tasks, starting policy: synthetic \d+\.\d% vs real \d+\.\d%$/m,
    );
    expect(output).toMatch(/^same 2 training tasks, trained policy: synthetic/m);
    expect(output).toMatch(/^success before training \(greedy\): .* on 4 real episodes$/m);
    expect(output).toMatch(
      /^headline \(greedy, real\): \d+\.\d% -> \d+\.\d% \([+-]\d+\.\d points\)$/m,
    );
    expect(output).toMatch(
      /^main job: \d+ min \d\d s \(set-up \d+ s \(cpu \d+ s\), build \d+ s \(cpu \d+ s\), dataset \d+ s \(cpu \d+ s\), train \d+ s \(cpu \d+ s\); load \d+\.\d mean, \d+\.\d-\d+\.\d on \d+ CPUs\)$/m,
    );
  });

  it('trains through dreamgym train with the main job configuration, with no real transition', async () => {
    const config = JSON.parse(await readFile(join(jobDirectory, 'run', 'config.json'), 'utf8'));
    expect(config.warmStart.behaviourCloning.taskShare).toBeCloseTo(1 / 6, 3);
    expect(config.evaluation).toMatchObject({ environments: ['real'], modes: ['greedy'] });
    const metrics = (await readFile(join(jobDirectory, 'run', 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(metrics).toHaveLength(2);
    expect(metrics.at(-1).realTransitions).toBe(0);
    const spec = JSON.parse(await readFile(join(jobDirectory, 'run', 'run.json'), 'utf8'));
    expect(spec).toMatchObject({ command: 'train', setup: { domain: 'miniwob' } });
  });

  it('builds the dataset once: a second call reuses it, another scale is refused', async () => {
    const built = JSON.parse(await readFile(join(jobDirectory, 'dataset', 'dataset.json'), 'utf8'));
    expect(built).toMatchObject({ tasks: { train: 24, eval: 4 }, trajectories: 24 });
    const dataset = ['tsx', 'scripts/miniwob-dataset.ts', '--dir', join(jobDirectory, 'dataset')];
    expect(await run('npx', [...dataset, ...DATASET.split(' ')], { cwd: repositoryRoot })).toMatch(
      /reusing .* \(built .* in \d+ s\)/,
    );
    await expect(run('npx', dataset, { cwd: repositoryRoot })).rejects.toThrow(
      /holds a MiniWoB\+\+ dataset built with .*remove the folder or choose another/,
    );
  });
});
