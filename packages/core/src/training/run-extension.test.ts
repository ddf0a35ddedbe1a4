import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError } from '../errors.js';
import { corridorLoop, corridorLoopConfig } from './corridor-loop.test-support.js';
import type { DreamGymConfigInput } from './dreamgym-config.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'run-extension-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const withBudget = (realTransitionBudget: number): DreamGymConfigInput => ({
  simToReal: { ...corridorLoopConfig.simToReal, realTransitionBudget },
});

async function caught(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected the run to be refused');
    },
    (error: unknown) => error as Error,
  );
}

describe('extending a run', () => {
  it('takes a finished run to a larger real-transition budget, continuing its iterations', async () => {
    const run = join(directory, 'run');
    const first = await (await corridorLoop(run, {}, withBudget(60))).run();
    expect(first.metrics.at(-1)!.realTransitions).toBe(60);

    const logged: string[] = [];
    const extended = await (
      await corridorLoop(run, { log: (line) => logged.push(line) }, withBudget(150))
    ).run({ resume: true, extend: true });
    expect(logged).toContain(`extending ${run}: simToReal.realTransitionBudget 60 -> 150`);
    expect(extended.metrics.at(-1)!.realTransitions).toBe(150);
    // The first run's iterations are kept as they were, and the new ones follow them.
    expect(extended.metrics.slice(0, first.metrics.length)).toEqual(first.metrics);
    const first0 = extended.metrics[0]!.iteration;
    expect(extended.metrics.map((record) => record.iteration - first0)).toEqual(
      extended.metrics.map((_, index) => index),
    );
    const config = JSON.parse(await readFile(join(run, 'config.json'), 'utf8'));
    expect(config.simToReal.realTransitionBudget).toBe(150);

    // The extended run is now the run: a plain resume at its budget has nothing left to do.
    const again = await (await corridorLoop(run, {}, withBudget(150))).run({ resume: true });
    expect(again.metrics).toEqual(extended.metrics);
  });

  it('adds synthetic iterations to a run without a real phase', async () => {
    const run = join(directory, 'run');
    const config = { ...withBudget(0), iterations: 4, evaluation: { every: 2 } };
    await (await corridorLoop(run, {}, config)).run();
    const extended = await (await corridorLoop(run, {}, { ...config, iterations: 6 })).run({
      resume: true,
      extend: true,
    });
    expect(extended.metrics.map((record) => record.phase)).toEqual(Array(6).fill('synthetic'));
  });

  it('needs extend to resume with another configuration', async () => {
    const run = join(directory, 'run');
    await (await corridorLoop(run, {}, withBudget(60))).run();
    const error = await caught(
      (await corridorLoop(run, {}, withBudget(150))).run({ resume: true }),
    );
    expect(CheckpointError.isInstance(error)).toBe(true);
    expect(error.message).toMatch(
      /different configuration.*extend it to more iterations.*extend: true/,
    );
  });

  it('refuses any other change, a smaller budget, and synthetic iterations after real ones, naming the field', async () => {
    const run = join(directory, 'run');
    await (await corridorLoop(run, {}, withBudget(60))).run();
    const refusal = async (config: DreamGymConfigInput) => {
      const error = await caught(
        (await corridorLoop(run, {}, config)).run({ resume: true, extend: true }),
      );
      expect(ConfigError.isInstance(error)).toBe(true);
      return error as ConfigError;
    };
    const otherField = await refusal({
      ...withBudget(150),
      policy: { ...corridorLoopConfig.policy, learningRate: 0.2 },
    });
    expect(otherField.field).toBe('policy.learningRate');
    expect(otherField.message).toMatch(/policy\.learningRate differs from the run's config\.json/);

    const smaller = await refusal(withBudget(30));
    expect(smaller.field).toBe('simToReal.realTransitionBudget');
    expect(smaller.message).toMatch(/30 is below the 60 it started with/);

    const afterReal = await refusal({ ...withBudget(150), iterations: 10 });
    expect(afterReal.field).toBe('iterations');
    expect(afterReal.message).toMatch(/real phase has begun/);

    // A refused extension leaves the run as it was.
    const config = JSON.parse(await readFile(join(run, 'config.json'), 'utf8'));
    expect(config.simToReal.realTransitionBudget).toBe(60);
  });
});
