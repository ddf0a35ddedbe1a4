import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError } from '../errors.js';
import { CheckpointStore } from './checkpoint-store.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-checkpoints-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('CheckpointStore', () => {
  it('round-trips bytes and JSON parts and tracks the latest', async () => {
    const store = new CheckpointStore(directory);
    expect(await store.load()).toBeUndefined();
    const weights = new Uint8Array(new Float32Array([0.5, -1.25, 3]).buffer);
    await store.save('iteration-000001', {
      policy: weights,
      counters: { iteration: 1, realSteps: 0 },
    });
    await store.save('iteration-000002', {
      policy: weights,
      counters: { iteration: 2, realSteps: 7 },
    });
    const loaded = (await store.load())!;
    expect(loaded.name).toBe('iteration-000002');
    expect(loaded.json<{ realSteps: number }>('counters').realSteps).toBe(7);
    expect([...new Float32Array(new Uint8Array(loaded.bytes('policy')).buffer)]).toEqual([
      0.5, -1.25, 3,
    ]);
    expect(loaded.parts().sort()).toEqual(['counters', 'policy']);
    expect(
      (await store.load('iteration-000001'))!.json<{ iteration: number }>('counters').iteration,
    ).toBe(1);
  });

  it('keeps only the newest checkpoints', async () => {
    const store = new CheckpointStore(directory, 2);
    for (let i = 1; i <= 4; i += 1) await store.save(`iteration-00000${i}`, { counters: { i } });
    const folders = (await readdir(directory)).filter((name) => name.startsWith('iteration'));
    expect(folders.sort()).toEqual(['iteration-000003', 'iteration-000004']);
  });

  it('detects a corrupt part and names the file', async () => {
    const store = new CheckpointStore(directory);
    await store.save('iteration-000001', { counters: { iteration: 1 } });
    await writeFile(join(directory, 'iteration-000001', 'counters.json'), '{"iteration": 9}');
    const error = await store.load().catch((thrown: unknown) => thrown);
    expect(CheckpointError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(
      join(directory, 'iteration-000001', 'counters.json'),
    );
    expect((error as Error).message).toMatch(/checksum/);
  });

  it('detects a truncated manifest and a missing part', async () => {
    const store = new CheckpointStore(directory);
    await store.save('iteration-000001', {
      counters: { iteration: 1 },
      policy: new Uint8Array([1, 2]),
    });
    await rm(join(directory, 'iteration-000001', 'policy.bin'));
    await expect(store.load()).rejects.toThrow(/policy\.bin is missing/);
    await writeFile(join(directory, 'iteration-000001', 'manifest.json'), '{"format":');
    await expect(store.load()).rejects.toThrow(/manifest cannot be read/);
  });

  it('asking for an absent part is a clear error', async () => {
    const store = new CheckpointStore(directory);
    await store.save('iteration-000001', { counters: {} });
    const loaded = (await store.load())!;
    expect(() => loaded.json('policy')).toThrow(/no part "policy"/);
  });
});
