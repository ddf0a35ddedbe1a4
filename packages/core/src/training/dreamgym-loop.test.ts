import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError } from '../errors.js';
import { evaluatePolicy } from '../eval/policy-evaluation.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import { startTypeScriptChild, waitForLine } from '../test-support/typescript-child.js';
import { CorridorEnvironment } from '../testing/corridor-domain.js';
import {
  corridorLoop,
  corridorLoopConfig,
  corridorSeedTasks,
} from './corridor-loop.test-support.js';
import { parseDreamGymConfig } from './dreamgym-config.js';
import type { IterationMetrics } from './metrics.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-loop-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

function withoutTimings(metrics: readonly IterationMetrics[]) {
  return metrics.map(({ seconds: _, ...rest }) => rest);
}

describe('DreamGymLoop on the corridor with the embedded defaults', () => {
  it('grows the pool within lambda and the buffer, improves success, and spends the real budget exactly', async () => {
    const loop = await corridorLoop(join(directory, 'run'));
    const { metrics, finalEvaluations } = await loop.run();
    const synthetic = metrics.filter((record) => record.phase === 'synthetic');
    const real = metrics.filter((record) => record.phase === 'real');
    expect(synthetic).toHaveLength(8);
    expect(real.length).toBeGreaterThan(0);

    // Curriculum: the pool grows, and no batch has more than lambda generated tasks.
    expect(synthetic.at(-1)!.generatedTasks).toBeGreaterThan(0);
    expect(synthetic.at(-1)!.poolSize).toBe(6 + synthetic.at(-1)!.generatedTasks);
    for (const record of synthetic) expect(record.generatedShare).toBeLessThanOrEqual(0.34);
    expect(synthetic.some((record) => record.generatedShare > 0)).toBe(true);

    // Replay: synthetic and real experience is added (exact duplicates are not stored twice,
    // and the corridor's state space is small, so growth slows down).
    for (let index = 1; index < metrics.length; index += 1) {
      expect(metrics[index]!.bufferSize).toBeGreaterThanOrEqual(metrics[index - 1]!.bufferSize);
    }
    expect(metrics.at(-1)!.bufferSize).toBeGreaterThan(synthetic[0]!.bufferSize);

    // Learning in the synthetic environment (the retrieval model simulates the corridor
    // imperfectly, so the real evaluation below is the test that matters).
    const first = synthetic[0]!.successRate;
    const lastThree = synthetic.slice(-3).reduce((sum, record) => sum + record.successRate, 0) / 3;
    console.log(
      `corridor loop: synthetic success ${synthetic.map((r) => r.successRate.toFixed(2)).join(' ')}; final evaluations ${JSON.stringify(finalEvaluations)}`,
    );
    expect(lastThree).toBeGreaterThanOrEqual(first + 0.3);
    expect(
      metrics.filter((record) => record.evaluations.length > 0).map((record) => record.iteration),
    ).toEqual([3, 7, metrics.at(-1)!.iteration]);

    // Sim-to-real: the budget is spent exactly, never exceeded.
    expect(real.at(-1)!.realTransitions).toBe(120);
    expect(finalEvaluations.map((evaluation) => evaluation.environment)).toEqual([
      'synthetic',
      'real',
    ]);
    const realEvaluation = finalEvaluations.find(
      (evaluation) => evaluation.environment === 'real',
    )!;
    expect(realEvaluation.episodes).toBe(6);
    // Trained on synthetic experience (and a little real), the policy solves real corridors
    // that the untrained uniform policy almost never solves.
    const untrained = await evaluatePolicy({
      policy: new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 14 }),
      environmentFactory: () => new CorridorEnvironment({ maxSteps: corridorLoopConfig.maxSteps }),
      environment: 'real',
      tasks: corridorSeedTasks(),
      episodesPerTask: 10,
      maxSteps: corridorLoopConfig.maxSteps!,
      greedy: false,
      random: new SeededRandom(2),
    });
    console.log(`corridor loop: untrained real success ${untrained.metrics.successRate}`);
    expect(untrained.metrics.successRate).toBeLessThanOrEqual(0.2);
    expect(realEvaluation.successRate).toBeGreaterThanOrEqual(0.5);

    // The run folder holds what `dreamgym report` reads.
    const lines = (await readFile(join(directory, 'run', 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(lines).toHaveLength(metrics.length);
    expect(JSON.parse(await readFile(join(directory, 'run', 'config.json'), 'utf8')).seed).toBe(11);
  });

  it('resumes after a crash mid-run exactly as an uninterrupted run of the same seed', async () => {
    const reference = await (await corridorLoop(join(directory, 'reference'))).run();

    const crashed = join(directory, 'crashed');
    const child = await startTypeScriptChild(
      resolve(import.meta.dirname, 'dreamgym-loop-child.test-support.ts'),
      [crashed],
    );
    // checkpointEvery is 2: after iteration 3 the run folder holds work past the checkpoint.
    await waitForLine(child, /^iteration 3$/);
    child.kill('SIGKILL');
    await new Promise((resolveExit) => child.once('exit', resolveExit));
    const linesAtCrash = (await readFile(join(crashed, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n').length;
    expect(linesAtCrash).toBeGreaterThanOrEqual(3);

    const resumed = await (await corridorLoop(crashed)).run({ resume: true });
    expect(withoutTimings(resumed.metrics)).toEqual(withoutTimings(reference.metrics));
    const weights = (policy: unknown) =>
      Buffer.from((policy as LinearSoftmaxPolicy).weights.buffer);
    expect(weights(resumed.policy).equals(weights(reference.policy))).toBe(true);
  });

  it('refuses to overwrite a run, and detects a corrupt checkpoint', async () => {
    const run = join(directory, 'run');
    const loop = await corridorLoop(run);
    await loop.run();
    await expect((await corridorLoop(run)).run()).rejects.toThrow(/already holds a run.*--resume/);
    const latest = (await readFile(join(run, 'checkpoints', 'LATEST'), 'utf8')).trim();
    await writeFile(
      join(run, 'checkpoints', latest, 'policy', 'linear-softmax-policy.bin'),
      'garbage',
    );
    const error = await (await corridorLoop(run))
      .run({ resume: true })
      .catch((thrown: unknown) => thrown);
    expect(CheckpointError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/linear-softmax-policy\.bin is corrupt/);
  });
});

describe('parseDreamGymConfig', () => {
  it('fills defaults and names a bad field', () => {
    expect(parseDreamGymConfig({}).curriculum.lambda).toBe(0.3);
    expect(parseDreamGymConfig(corridorLoopConfig).simToReal.realTransitionBudget).toBe(120);
    const error = (() => {
      try {
        parseDreamGymConfig({ curriculum: { lambda: 1.5 } });
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).field).toBe('curriculum.lambda');
    expect((error as Error).message).toMatch(/`curriculum\.lambda`: .*1/);
    expect(() => parseDreamGymConfig({ algorithm: 'sarsa' })).toThrow(/`algorithm`.*grpo/);
  });
});
