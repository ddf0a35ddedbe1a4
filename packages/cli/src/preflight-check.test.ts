/**
 * `dreamgym train`'s pre-flight check on real ALFWorld data: it passes the expert episodes,
 * and refuses offline data whose outcomes the actions do not decide (each expert episode a
 * second time, ended in failure: the same acts, both outcomes), unless `--force`.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAlfworldAdapter } from '@dreamgym/alfworld';
import type { Trajectory } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { captureIo, dataRoot } from './cli.test-support.js';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-preflight-'));
  // The check runs before any evaluation; these runs need none.
  await writeFile(
    join(directory, 'no-evaluation.json'),
    JSON.stringify({ evaluation: { environments: [] } }),
  );
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** A tiny run on the first `offline` expert episodes, plus the `--offline` files given. */
function trainArgs(runDirectory: string, offline: number, extra: string[] = []): string[] {
  return [
    'train',
    '--domain',
    'alfworld',
    '--data',
    join(dataRoot(), 'alfworld'),
    '--offline-limit',
    String(offline),
    '--train-tasks',
    '4',
    '--eval-tasks',
    '2',
    '--iterations',
    '1',
    '--tasks-per-iteration',
    '1',
    '--rollouts-per-task',
    '2',
    '--max-steps',
    '3',
    '--no-baseline',
    '--config',
    join(directory, 'no-evaluation.json'),
    '--run-dir',
    runDirectory,
    ...extra,
  ];
}

describe('dreamgym train: the pre-flight check', () => {
  it('passes the expert episodes and says so beside the headline', async () => {
    const io = captureIo();
    expect(await runCli(trainArgs(join(directory, 'experts'), 300), io)).toBe(0);
    expect(io.err()).toMatch(
      /pre-flight \(offline, judge trained on \d+ episodes, \d+ held out\): recall \d+\/\d+ \(/,
    );
    expect(io.out()).toMatch(/^pre-flight: passed \(held-out recall \d+\.\d%/m);
    const saved = JSON.parse(await readFile(join(directory, 'experts', 'preflight.json'), 'utf8'));
    expect(saved).toMatchObject({ trusted: true, forced: false, problems: [] });
  }, 180_000);

  it('refuses outcomes the actions do not decide, with what to do; --force trains anyway', async () => {
    const adapter = createAlfworldAdapter();
    const experts: Trajectory[] = [];
    for await (const trajectory of adapter.datasets.trajectories.load(
      join(dataRoot(), 'alfworld'),
      {
        limit: 300,
      },
    ))
      experts.push(trajectory);
    // The same acts ended in failure: nothing in the episode tells the two outcomes apart.
    const failed = experts.map((trajectory) => ({
      ...trajectory,
      id: `${trajectory.id ?? trajectory.task.id}-failed`,
      success: false,
      steps: trajectory.steps.map((step) => ({ ...step, reward: 0 })),
    }));
    const file = join(directory, 'ambiguous.jsonl');
    await writeFile(file, `${failed.map((trajectory) => JSON.stringify(trajectory)).join('\n')}\n`);

    const refused = captureIo();
    const runDirectory = join(directory, 'ambiguous');
    expect(await runCli(trainArgs(runDirectory, 300, ['--offline', file]), refused)).toBe(2);
    expect(refused.err()).toMatch(/cannot be trusted on alfworld/);
    expect(refused.err()).toMatch(/recognises \d+\/\d+ .* held-out real successes|pays \d+\/\d+/);
    expect(refused.err()).toMatch(/--experience hybrid/);
    expect(refused.err()).toMatch(/--force/);
    const saved = JSON.parse(await readFile(join(runDirectory, 'preflight.json'), 'utf8'));
    expect(saved).toMatchObject({ trusted: false, forced: false });

    const forced = captureIo();
    expect(
      await runCli(
        trainArgs(join(directory, 'forced'), 300, ['--offline', file, '--force']),
        forced,
      ),
    ).toBe(0);
    expect(forced.out()).toMatch(/^pre-flight: FAILED, trained with --force/m);
  }, 300_000);
});
