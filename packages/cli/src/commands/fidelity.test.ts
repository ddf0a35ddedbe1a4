/**
 * `dreamgym fidelity` on a tiny real ALFWorld run: one synthetic iteration of the linear
 * policy, then its checkpoint measured on three training games against the real engine.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  measureOnPolicyFidelity,
  type Policy,
  SeededRandom,
  SyntheticEnvironment,
} from '@dreamgym/core';
import type { OnPolicyFidelityReport } from '@dreamgym/core/eval';
import { setUpDomain } from '@dreamgym/run';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo, dataRoot } from '../cli.test-support.js';
import { renderFidelityReport } from './fidelity.js';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-fidelity-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('dreamgym fidelity', () => {
  it('lists itself, and needs a run folder', async () => {
    const help = captureIo();
    expect(await runCli(['--help'], help)).toBe(0);
    expect(help.out()).toMatch(/^ {2}fidelity +measure a run's synthetic environment/m);
    const missing = captureIo();
    expect(await runCli(['fidelity'], missing)).toBe(2);
    expect(missing.err()).toMatch(/--run-dir is required.*Usage: dreamgym fidelity/s);
  });

  it('escapes every text of the report on the page', () => {
    const figures = {
      steps: 1,
      exactMatch: 0,
      tokenF1: 0,
      rewardAccuracy: 0,
      rewardMeanAbsoluteError: 1,
      rewardMaxAbsoluteError: 1,
      terminalAgreement: 0,
      terminalRecall: 0,
      terminalPrecision: 0,
      falseSuccessRate: 1,
      trueSuccessRecall: 0,
      realSuccesses: 0,
    };
    const estimate = {
      rate: 1,
      interval95: [0.2, 1] as [number, number],
      successes: 1,
      episodes: 1,
    };
    const page = renderFidelityReport(
      {
        experienceModelId: 'm<1>',
        policyId: 'p&q',
        tasks: 1,
        maxSteps: 3,
        greedy: true,
        syntheticSuccess: estimate,
        realSuccess: { ...estimate, rate: 0, successes: 0, interval95: [0, 0.8] },
        syntheticSuccessPrecision: {
          rate: 0,
          interval95: [0, 0.8],
          replayed: 1,
          reallySucceeded: 0,
          replays: [
            {
              episodeId: 't#0',
              taskId: 't<task>',
              instruction: 'put <b>',
              actions: ['open <door>'],
              stepsReplayed: 1,
              realEnded: false,
              realSuccess: false,
              firstDisagreement: {
                stepIndex: 0,
                action: 'open <door>',
                syntheticNextState: 'You open it & win.',
                realNextState: 'Nothing happens. <script>',
                syntheticReward: 1,
                realReward: 0,
                syntheticDone: true,
                realDone: false,
              },
            },
          ],
        },
        falseSuccessRate: 1,
        trueSuccessRecall: 0,
        nextStateExact: 0,
        teacherForced: figures,
        byActionType: { '<open>': figures },
        worstDisagreements: [
          {
            kind: 'false-success',
            trajectoryId: 't#0',
            taskId: 't<task>',
            instruction: 'put <b>',
            stepIndex: 0,
            action: 'open <door>',
            actionType: '<open>',
            state: 's',
            realNextState: 'Nothing happens. <script>',
            predictedNextState: 'You open it & win.',
            realReward: 0,
            predictedReward: 1,
            realDone: false,
            predictedDone: true,
            tokenF1: 0,
          },
        ],
        episodes: [
          {
            taskId: 't<task>',
            instruction: 'put <b>',
            synthetic: { success: true, steps: 1 },
            real: { success: false, steps: 3 },
          },
        ],
      },
      { runDirectory: '/runs/<x>', checkpoint: 'iteration-000001', split: 'train' },
    );
    expect(page).not.toMatch(/<(script|b|door|task|open|x|1)>/);
    expect(page).toContain('Nothing happens. &#60;script&#62;');
    expect(page).toContain('<tr><th>&#60;open&#62;</th><td>1</td>');
    expect(page).toContain('You open it &#38; win.');
    expect(page).toContain('first disagrees at step 0: open &#60;door&#62;');
  });

  it('measures a run checkpoint on real ALFWorld games: JSON with every figure, and the page', {
    timeout: 120_000,
  }, async () => {
    const runDirectory = join(directory, 'run');
    const configFile = join(directory, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        seed: 5,
        iterations: 1,
        tasksPerIteration: 2,
        rolloutsPerTask: 2,
        maxSteps: 6,
        concurrency: 2,
        realConcurrency: 1,
        evaluation: { every: 0, environments: [] },
        setup: { offlineLimit: 200, trainTasks: 3, evalTasks: 2 },
      }),
    );
    const env = { DREAMGYM_DATA_DIR: dataRoot() };
    const trained = captureIo({ env });
    const trainCode = await runCli(
      [
        'train',
        '--domain',
        'alfworld',
        '--config',
        configFile,
        '--run-dir',
        runDirectory,
        '--no-baseline',
      ],
      trained,
    );
    expect(trained.err()).not.toMatch(/unexpected/);
    expect(trainCode).toBe(0);

    const out = join(directory, 'out', 'fidelity.json');
    const html = join(directory, 'out', 'fidelity.html');
    const io = captureIo({ env });
    const started = performance.now();
    const code = await runCli(
      [
        'fidelity',
        '--run-dir',
        runDirectory,
        '--eval-split',
        'train',
        '--eval-tasks',
        '3',
        '--max-steps',
        '4',
        '--out',
        out,
        '--html',
        html,
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpected/);
    expect(code).toBe(0);
    if (process.env.DEBUG_CLI)
      process.stdout.write(`fidelity took ${(performance.now() - started) / 1000} s\n`);

    const report = JSON.parse(await readFile(out, 'utf8')) as OnPolicyFidelityReport & {
      checkpoint: string;
      split: string;
    };
    expect(report).toMatchObject({
      checkpoint: 'iteration-000001',
      split: 'train',
      tasks: 3,
      maxSteps: 4,
      greedy: true,
      policyId: expect.any(String),
      experienceModelId: expect.any(String),
    });
    for (const estimate of [report.syntheticSuccess, report.realSuccess]) {
      expect(estimate.episodes).toBe(3);
      expect(estimate.rate).toBe(estimate.successes / 3);
      // The Wilson bounds are computed in floating point: 0 successes may give 5.6e-17.
      expect(estimate.interval95[0]).toBeLessThanOrEqual(estimate.rate + 1e-12);
      expect(estimate.interval95[1]).toBeGreaterThanOrEqual(estimate.rate - 1e-12);
    }
    // Every synthetic success is replayed on the real engine, no more than its own actions.
    const precision = report.syntheticSuccessPrecision;
    expect(precision.replayed).toBe(report.syntheticSuccess.successes);
    expect(precision.replays).toHaveLength(precision.replayed);
    expect(precision.reallySucceeded).toBe(
      precision.replays.filter((replay) => replay.realSuccess).length,
    );
    for (const replay of precision.replays)
      expect(replay.stepsReplayed).toBeLessThanOrEqual(replay.actions.length);
    // Teacher forcing covers every step of the three real episodes.
    expect(report.episodes).toHaveLength(3);
    const realSteps = report.episodes.reduce((sum, pair) => sum + pair.real.steps, 0);
    expect(realSteps).toBeGreaterThan(0);
    expect(report.teacherForced.steps).toBe(realSteps);
    expect(report.teacherForced.realSuccesses).toBe(report.realSuccess.successes);
    for (const figure of ['falseSuccessRate', 'trueSuccessRecall', 'nextStateExact'] as const) {
      expect(report[figure]).toBeGreaterThanOrEqual(0);
      expect(report[figure]).toBeLessThanOrEqual(1);
    }
    expect(report.nextStateExact).toBe(report.teacherForced.exactMatch);
    const types = Object.keys(report.byActionType);
    expect(types.length).toBeGreaterThan(0);
    expect(
      Object.values(report.byActionType).reduce((sum, figures) => sum + figures.steps, 0),
    ).toBe(realSteps);
    expect(report.worstDisagreements.length).toBeLessThanOrEqual(20);
    for (const step of report.worstDisagreements) {
      expect(step).toMatchObject({
        instruction: expect.any(String),
        action: expect.any(String),
        realNextState: expect.any(String),
        predictedNextState: expect.any(String),
        realReward: expect.any(Number),
        predictedReward: expect.any(Number),
      });
    }

    const page = await readFile(html, 'utf8');
    for (const table of [
      'headline',
      'by-action-type',
      'episodes',
      'replays',
      'worst-disagreements',
    ]) {
      expect(page).toContain(`<table class="${table}">`);
    }
    for (const type of types) expect(page).toContain(`<tr><th>${type}</th>`);
    expect(page).toContain('synthetic-success precision');
    expect(page).not.toContain('undefined');
    expect(existsSync(join(runDirectory, 'fidelity.json'))).toBe(false);

    expect(io.out()).toMatch(/synthetic success: \d+\.\d% \[95% CI .*\] n=3/);
    expect(io.out()).toMatch(/real success: \d+\.\d% \[95% CI .*\] n=3/);
    expect(io.out()).toMatch(/teacher-forced on \d+ real steps: false-success rate \d+\.\d%/);
    // Progress as the episodes of each phase end.
    expect(io.err()).toMatch(/dreamgym fidelity \(synthetic\) 3\/3 .*success \d+\.\d%/);
    expect(io.err()).toMatch(/dreamgym fidelity \(real\) 3\/3 .*success \d+\.\d%/);
    expect(io.err()).toMatch(/dreamgym fidelity \(teacher-forced\) \d+\/\d+/);
  });

  it("replays synthetic successes on the real engine: the expert's own actions really succeed", {
    timeout: 60_000,
  }, async () => {
    const domain = await setUpDomain({
      domain: 'alfworld',
      data: join(dataRoot(), 'alfworld'),
      offlineLimit: 200,
    });
    // Two short expert games the real engine has: the policy plays their recorded actions.
    const games = new Set(domain.seedTasks.map((task) => task.id));
    const experts = domain.offlineTrajectories
      .filter((trajectory) => games.has(trajectory.task.id))
      .sort((a, b) => a.steps.length - b.steps.length)
      .slice(0, 2);
    expect(experts).toHaveLength(2);
    const actions = new Map(
      experts.map((trajectory) => [
        trajectory.task.id,
        trajectory.steps.map((step) => step.action),
      ]),
    );
    const expert: Policy = {
      id: 'expert-replay',
      act: async (_observation, { task, history }) => ({
        action: actions.get(task.id)![history.length] ?? 'look',
      }),
    };
    const maxSteps = Math.max(...experts.map((trajectory) => trajectory.steps.length)) + 2;
    const report = await measureOnPolicyFidelity({
      policy: expert,
      tasks: experts.map((trajectory) => trajectory.task),
      adapter: domain.adapter,
      syntheticEnvironment: () =>
        new SyntheticEnvironment({
          model: domain.experienceModel,
          retriever: domain.replayBuffer,
          adapter: domain.adapter,
          maxSteps,
        }),
      realEnvironment: domain.realEnvironment,
      experienceModel: domain.experienceModel,
      retriever: domain.replayBuffer,
      maxSteps,
      random: new SeededRandom(1),
    });
    await domain.replayBuffer.close();
    expect(report.realSuccess).toMatchObject({ successes: 2, episodes: 2 });
    // The retrieval model knows these games: their expert episodes succeed synthetically too,
    // and replayed on the real engine they end there, successfully.
    const precision = report.syntheticSuccessPrecision;
    expect(report.syntheticSuccess.successes).toBeGreaterThan(0);
    expect(precision.replayed).toBe(report.syntheticSuccess.successes);
    expect(precision.reallySucceeded).toBe(precision.replayed);
    for (const replay of precision.replays) {
      expect(replay).toMatchObject({ realEnded: true, realSuccess: true });
      expect(replay.stepsReplayed).toBe(actions.get(replay.taskId)!.length);
    }
    expect(report.teacherForced.realSuccesses).toBe(2);
    expect(report.teacherForced.steps).toBe(
      experts.reduce((sum, trajectory) => sum + trajectory.steps.length, 0),
    );
  });
});

/** The MiniWoB++ adapter's recorded dataset: 12 training and 8 held-out instances of 4 pages. */
const miniwobData = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../../../adapters/miniwob/src/__fixtures__/dataset',
);

describe('dreamgym fidelity on a web domain (MiniWoB++)', () => {
  let runDirectory: string;
  beforeAll(async () => {
    runDirectory = join(directory, 'miniwob-run');
    const configFile = join(directory, 'miniwob-config.json');
    // The run evaluated on the first 2 training instances: both of one page (click-test-2).
    await writeFile(
      configFile,
      JSON.stringify({
        seed: 1,
        iterations: 0,
        maxSteps: 2,
        realConcurrency: 1,
        evaluation: { every: 0, environments: [] },
        setup: { evalSplit: 'train', evalTasks: 2 },
      }),
    );
    const io = captureIo();
    const code = await runCli(
      [
        'train',
        '--domain',
        'miniwob',
        '--data',
        miniwobData,
        '--config',
        configFile,
        '--run-dir',
        runDirectory,
        '--no-baseline',
        // Twelve recorded episodes are too few for the pre-flight to trust the judge (0 of 2
        // held-out successes recognised); what is measured here is `fidelity` itself.
        '--force',
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpected/);
    expect(code).toBe(0);
  }, 60_000);

  it('fidelity and eval refuse a split the data lacks instead of reporting every figure of no tasks as 0%', async () => {
    const io = captureIo();
    const code = await runCli(
      ['fidelity', '--run-dir', runDirectory, '--eval-split', 'valid_seen'],
      io,
    );
    expect(code).toBe(2);
    expect(io.err()).toMatch(
      /miniwob data holds no tasks of split "valid_seen" \(--eval-split\): name a split it has, e\.g\. train or eval/,
    );
    expect(existsSync(join(runDirectory, 'fidelity.json'))).toBe(false);
    // eval reopens runs the same way, and refuses alike (it reported 0% on 0 episodes).
    const evaluation = captureIo();
    expect(
      await runCli(['eval', '--run-dir', runDirectory, '--eval-split', 'valid_seen'], evaluation),
    ).toBe(2);
    expect(evaluation.err()).toMatch(/miniwob data holds no tasks of split "valid_seen"/);
  });

  it("samples the whole split, not the run's prefix of one page, and measures it on the real pages", {
    timeout: 180_000,
  }, async () => {
    const out = join(directory, 'miniwob-fidelity.json');
    const io = captureIo();
    const code = await runCli(
      [
        'fidelity',
        '--run-dir',
        runDirectory,
        '--eval-split',
        'train',
        '--sample-tasks',
        '4',
        '--seed',
        '2',
        '--out',
        out,
        '--html',
        join(directory, 'miniwob-fidelity.html'),
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpected/);
    expect(code).toBe(0);
    const report = JSON.parse(await readFile(out, 'utf8')) as OnPolicyFidelityReport;
    expect(report).toMatchObject({ tasks: 4, maxSteps: 2 });
    const pages = new Set(report.episodes.map((pair) => pair.taskId.split(':')[0]));
    expect(pages.size).toBeGreaterThan(1);
    expect(report.realSuccess.episodes).toBe(4);
    const realSteps = report.episodes.reduce((sum, pair) => sum + pair.real.steps, 0);
    expect(report.teacherForced.steps).toBe(realSteps);
    expect(report.teacherForced.realSuccesses).toBe(report.realSuccess.successes);
    expect(report.syntheticSuccessPrecision.replayed).toBe(report.syntheticSuccess.successes);
  });
});
