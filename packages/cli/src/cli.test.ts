import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { TrajectorySchema } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { captureIo, dataRoot } from './cli.test-support.js';

const capture = (env: NodeJS.ProcessEnv = {}) => captureIo({ env });

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-cli-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('dreamgym', () => {
  it('prints usage for --help and for train --help', async () => {
    const io = capture();
    expect(await runCli(['--help'], io)).toBe(0);
    expect(io.out()).toMatch(/train .*\n.*eval/s);
    const train = capture();
    expect(await runCli(['train', '--help'], train)).toBe(0);
    expect(train.out()).toMatch(/--domain NAME/);
    expect(train.out()).toMatch(/--real-budget N/);
  });

  it('rejects bad flags, unknown domains and missing data with what to do', async () => {
    const unknownFlag = capture();
    expect(await runCli(['train', '--domain', 'alfworld', '--bogus'], unknownFlag)).toBe(2);
    expect(unknownFlag.err()).toMatch(/Unknown option '--bogus'.*Usage: dreamgym train/s);

    const badNumber = capture();
    expect(
      await runCli(
        ['train', '--domain', 'alfworld', '--data', '.', '--iterations', 'ten'],
        badNumber,
      ),
    ).toBe(2);
    expect(badNumber.err()).toMatch(/--iterations must be an integer, got "ten"/);

    const badConfig = capture();
    expect(
      await runCli(['train', '--domain', 'alfworld', '--data', '.', '--lambda', '2'], badConfig),
    ).toBe(2);
    expect(badConfig.err()).toMatch(/`curriculum\.lambda`/);

    const unknownDomain = capture();
    expect(await runCli(['train', '--domain', 'minecraft', '--data', '.'], unknownDomain)).toBe(2);
    expect(unknownDomain.err()).toMatch(
      /Unknown domain "minecraft".*Installed adapters: .*@dreamgym\/alfworld/s,
    );

    const noData = capture();
    expect(await runCli(['train', '--domain', 'alfworld'], noData)).toBe(2);
    expect(noData.err()).toMatch(/--data DIR is required.*DREAMGYM_DATA_DIR/);

    const missingData = capture();
    expect(
      await runCli(
        ['train', '--domain', 'alfworld', '--data', join(directory, 'nope')],
        missingData,
      ),
    ).toBe(2);
    expect(missingData.err()).toMatch(/does not exist\. Pass --data DIR/);

    const unknownCommand = capture();
    expect(await runCli(['fly'], unknownCommand)).toBe(2);
    expect(unknownCommand.err()).toMatch(/Unknown command "fly"/);
  });

  it('trains briefly on ALFWorld from a config file, reports like for like, resumes, evaluates and reports the run', {
    timeout: 300_000,
  }, async () => {
    const runDirectory = join(directory, 'run');
    const configFile = join(directory, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        seed: 3,
        iterations: 2,
        tasksPerIteration: 4,
        rolloutsPerTask: 2,
        maxSteps: 10,
        invalidActionPenalty: -0.1,
        evaluation: { every: 0 },
        setup: { offlineLimit: 400, trainTasks: 12, evalTasks: 2 },
      }),
    );
    const io = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    const code = await runCli(
      [
        'train',
        '--domain',
        'alfworld',
        '--config',
        configFile,
        '--run-dir',
        runDirectory,
        '--iterations',
        '1',
        '--no-curriculum',
        '--no-replay-write-back',
        '--no-history',
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpected/);
    expect(code).toBe(0);
    // Before and after are measured alike: greedy and sampled, each with its interval, and the
    // headline compares greedy with greedy.
    for (const label of ['before', 'after '] as const) {
      for (const mode of ['greedy', 'sampled']) {
        expect(io.out()).toMatch(
          new RegExp(
            `success ${label} training \\(${mode}\\): \\d+\\.\\d% \\[95% CI .*\\] on 2 real episodes`,
          ),
        );
      }
    }
    expect(io.out()).toMatch(
      /headline \(greedy, real\): \d+\.\d% -> \d+\.\d% \([+-]\d+\.\d points\)/,
    );
    expect(io.err()).toMatch(/dreamgym train .*1\/1/);
    // Flags override the config file; ablation flags reach the loop's configuration.
    const saved = JSON.parse(await readFile(join(runDirectory, 'config.json'), 'utf8'));
    expect(saved).toMatchObject({
      seed: 3,
      iterations: 1,
      maxSteps: 10,
      invalidActionPenalty: -0.1,
      curriculum: { enabled: false },
      replayWriteBack: false,
      history: { enabled: false },
      evaluation: { modes: ['greedy', 'sampled'], environments: ['real'] },
    });
    expect(JSON.parse(await readFile(join(runDirectory, 'run.json'), 'utf8'))).toMatchObject({
      command: 'train',
      setup: { offlineLimit: 400, trainTasks: 12, evalTasks: 2 },
      policy: { kind: 'linear' },
      models: {},
    });
    const metrics = async () =>
      (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n');
    expect(await metrics()).toHaveLength(1);

    // A finished run resumes to the same end: no new iteration, the same final figures.
    const resumed = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    expect(await runCli(['train', '--run-dir', runDirectory, '--resume'], resumed)).toBe(0);
    expect(resumed.err()).toMatch(/resumed .* from checkpoint iteration-000001/);
    expect(await metrics()).toHaveLength(1);

    // A larger --iterations takes --extend; with it the run goes on from where it ended.
    const larger = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    const twoIterations = ['train', '--run-dir', runDirectory, '--resume', '--iterations', '2'];
    expect(await runCli(twoIterations, larger)).toBe(2);
    expect(larger.err()).toMatch(/different configuration.*--resume --extend/);
    const extended = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    expect(await runCli([...twoIterations, '--extend'], extended)).toBe(0);
    expect(extended.err()).toMatch(/extending .*: iterations 1 -> 2/);
    expect(await metrics()).toHaveLength(2);
    const withoutResume = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    expect(await runCli(['train', '--run-dir', runDirectory, '--extend'], withoutResume)).toBe(2);
    expect(withoutResume.err()).toMatch(/--extend goes on with the run .*pass --resume/);

    const evaluation = capture();
    expect(await runCli(['eval', '--run-dir', runDirectory, '--eval-tasks', '2'], evaluation)).toBe(
      0,
    );
    expect(evaluation.out()).toMatch(/success \(greedy\): .* on 2 real episodes/);
    // Progress while it plays: the episodes ended, with the success so far.
    expect(evaluation.err()).toMatch(/dreamgym eval 2\/2 .*success \d+\.\d%/);

    const report = capture();
    expect(await runCli(['report', '--run-dir', runDirectory], report)).toBe(0);
    expect(await readFile(join(runDirectory, 'report.html'), 'utf8')).toMatch(/<svg/);

    const again = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    expect(
      await runCli(
        ['train', '--domain', 'alfworld', '--run-dir', runDirectory, '--offline-limit', '400'],
        again,
      ),
    ).toBe(2);
    expect(again.err()).toMatch(/already holds a run.*--resume/);
  });

  it('with a warm start, "before" is the cloned policy, measured by the loop beside the same training tasks in both environments', {
    timeout: 300_000,
  }, async () => {
    const runDirectory = join(directory, 'warm');
    const io = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    const code = await runCli(
      [
        'train',
        '--domain',
        'alfworld',
        '--run-dir',
        runDirectory,
        '--offline-limit',
        '200',
        '--train-tasks',
        '12',
        '--eval-tasks',
        '2',
        '--iterations',
        '1',
        '--tasks-per-iteration',
        '2',
        '--rollouts-per-task',
        '2',
        '--max-steps',
        '8',
        '--eval-mode',
        'greedy',
        '--gap-tasks',
        '2',
        '--warm-start',
        'bc',
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpected/);
    expect(code).toBe(0);
    expect(io.err()).toMatch(/warm start: kept epoch \d+/);
    expect(io.err()).toMatch(/evaluating the starting policy/);
    expect(io.err()).not.toMatch(/evaluating the untrained policy/);
    const start = JSON.parse(await readFile(join(runDirectory, 'start-evaluation.json'), 'utf8'));
    expect(start.evaluations).toHaveLength(1);
    expect(start.syntheticToRealGap.tasks).toBe(2);
    expect(io.out()).toMatch(
      /same 2 training tasks, starting policy: synthetic \d+\.\d% vs real \d+\.\d%/,
    );
    expect(io.out()).toMatch(
      /same 2 training tasks, trained policy: synthetic \d+\.\d% vs real \d+\.\d%/,
    );
    const before = (start.evaluations[0].successRate * 100).toFixed(1);
    expect(io.out()).toContain(`success before training (greedy): ${before}%`);
    expect(io.out()).toMatch(/headline \(greedy, real\): /);
  });

  it('data explore plays real ALFWorld episodes and writes them as trajectories', {
    timeout: 120_000,
  }, async () => {
    const out = join(directory, 'exploration.jsonl');
    const io = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    const code = await runCli(
      [
        'data',
        'explore',
        '--domain',
        'alfworld',
        '--out',
        out,
        '--episodes',
        '2',
        '--max-steps',
        '4',
        '--seed',
        '7',
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpected/);
    expect(code).toBe(0);
    const trajectories = (await readFile(out, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => TrajectorySchema.parse(JSON.parse(line)));
    expect(trajectories).toHaveLength(2);
    for (const trajectory of trajectories) {
      expect(trajectory.source).toBe('offline');
      expect(trajectory.steps.length).toBeGreaterThan(0);
      expect(trajectory.steps.length).toBeLessThanOrEqual(4);
      expect(trajectory.steps[0]!.observation.text).toMatch(
        /ALFRED|You are in the middle of a room/,
      );
    }
    expect(JSON.parse(io.out())).toMatchObject({ episodes: 2 });

    const unknown = capture();
    expect(await runCli(['data', 'fly'], unknown)).toBe(2);
    expect(unknown.err()).toMatch(/Unknown data command "fly"\. Available: data explore/);
  });

  it('runs as the installed bin', async () => {
    const bin = resolve(import.meta.dirname, '../dist/bin.js');
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'report', '--help']);
    expect(stdout).toMatch(/Usage: dreamgym report/);
  });
});
