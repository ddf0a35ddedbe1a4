/**
 * `dreamgym train`'s pre-flight check on real ALFWorld data: it passes the expert episodes,
 * and refuses offline data whose outcomes the actions do not decide (each expert episode a
 * second time, ended in failure: the same acts, both outcomes), unless `--force`.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAlfworldAdapter } from '@dreamgym/alfworld';
import type { Trajectory } from '@dreamgym/core';
import { ConfigError } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { captureIo, dataRoot } from './cli.test-support.js';
import { checkStartingPolicy, PREFLIGHT_FILE } from './preflight-check.js';

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

describe('checkStartingPolicy', () => {
  /** The loop's start evaluation with the gap on 48 training tasks. */
  const start = (synthetic: number, real: number) => ({
    evaluations: [],
    syntheticToRealGap: {
      tasks: 48,
      syntheticSuccessRate: synthetic / 48,
      realSuccessRate: real / 48,
      gap: (synthetic - real) / 48,
    },
  });
  async function folder(name: string): Promise<string> {
    const runDirectory = join(directory, name);
    await mkdir(runDirectory, { recursive: true });
    await writeFile(
      join(runDirectory, PREFLIGHT_FILE),
      JSON.stringify({ trusted: true, problems: [] }),
    );
    return runDirectory;
  }
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);

  it("stops a run whose starting policy's synthetic success the real one contradicts", async () => {
    // The new user's domain: 66.7% synthetic against 10.4% real on the same 48 games.
    const runDirectory = await folder('contradicted');
    const check = checkStartingPolicy(start(32, 5), {
      domain: 'household',
      force: false,
      runDirectory,
      log,
    });
    await expect(check).rejects.toThrow(ConfigError);
    await expect(check).rejects.toThrow(
      /66\.7% in the synthetic environment and 10\.4% in the real one.*--force/s,
    );
    const saved = JSON.parse(await readFile(join(runDirectory, PREFLIGHT_FILE), 'utf8'));
    expect(saved).toMatchObject({ trusted: false, forced: false, startingPolicy: { apart: true } });
    expect(saved.problems).toHaveLength(1);
  });

  it('lets --force train on, and passes agreeing environments', async () => {
    const forced = await folder('forced');
    await checkStartingPolicy(start(32, 5), {
      domain: 'household',
      force: true,
      runDirectory: forced,
      log,
    });
    expect(JSON.parse(await readFile(join(forced, PREFLIGHT_FILE), 'utf8'))).toMatchObject({
      forced: true,
      trusted: false,
    });
    const agreeing = await folder('agreeing');
    await checkStartingPolicy(start(11, 11), {
      domain: 'alfworld',
      force: false,
      runDirectory: agreeing,
      log,
    });
    expect(JSON.parse(await readFile(join(agreeing, PREFLIGHT_FILE), 'utf8'))).toMatchObject({
      trusted: true,
      startingPolicy: { tasks: 48, apart: false },
    });
    expect(lines.at(-1)).toMatch(
      /starting policy, 48 training tasks in both environments\): synthetic 22\.9% vs real 22\.9%$/,
    );
  });
});
