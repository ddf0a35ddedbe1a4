import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { corridorLoop } from './corridor-loop.test-support.js';
import type { DreamGymConfigInput } from './dreamgym-config.js';
import type { StartEvaluation } from './loop-evaluation.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-start-check-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('DreamGymLoop checkStart', () => {
  const config: DreamGymConfigInput = {
    iterations: 2,
    simToReal: { realTransitionBudget: 0 },
    evaluation: { every: 0, atStart: true, environments: ['real'], gapTasks: 4 },
  };

  it('hands a new run its starting policy measured, gap included, and a throw stops it before any training', async () => {
    const seen: StartEvaluation[] = [];
    const loop = await corridorLoop(
      join(directory, 'refused'),
      {
        checkStart: (start) => {
          seen.push(start);
          throw new Error('refused');
        },
      },
      config,
    );
    await expect(loop.run()).rejects.toThrow('refused');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.syntheticToRealGap?.tasks).toBe(4);
    expect(seen[0]!.evaluations.map((evaluation) => evaluation.environment)).toEqual(['real']);
    // Nothing was trained: no checkpoint.
    expect(await readdir(join(directory, 'refused'))).not.toContain('checkpoints');
  });

  it('is not asked again when a run resumes', async () => {
    let calls = 0;
    const runDirectory = join(directory, 'resumed');
    await (await corridorLoop(runDirectory, { checkStart: () => (calls += 1) }, config)).run();
    expect(calls).toBe(1);
    const longer = { ...config, iterations: 3 };
    await (await corridorLoop(runDirectory, { checkStart: () => (calls += 1) }, longer)).run({
      resume: true,
      extend: true,
    });
    expect(calls).toBe(1);
  });
});
