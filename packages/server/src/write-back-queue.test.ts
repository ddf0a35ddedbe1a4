import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  HashingEmbedder,
  ReplayBuffer,
  SeededRandom,
  type Transition,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { corridorTasks, playCorridor } from '@dreamgym/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AppliedBatch, WriteBackQueue } from './write-back-queue.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function episodes(count: number): Promise<Transition[][]> {
  const tasks = corridorTasks(4);
  const random = new SeededRandom(11);
  const played: Transition[][] = [];
  for (let index = 0; index < count; index += 1) {
    const trajectory = await playCorridor(tasks[index % tasks.length]!, random, {
      noise: 0.5,
      maxSteps: 6,
    });
    played.push(trajectoryToTransitions(trajectory, { trajectoryId: `serve:${index}` }));
  }
  return played;
}

async function queue(batchTransitions: number) {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-write-back-'));
  const file = join(directory, 'experience.jsonl');
  const log = await open(file, 'a');
  cleanup.push(async () => {
    await log.close();
    await rm(directory, { recursive: true, force: true });
  });
  const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
  const seen = { logged: 0, batches: [] as AppliedBatch[] };
  const writeBack = new WriteBackQueue(
    buffer,
    log,
    { batchTransitions, flushMilliseconds: 100 },
    {
      logged: (lines) => {
        seen.logged += lines;
      },
      applied: (batch) => seen.batches.push(batch),
    },
  );
  return { writeBack, buffer, file, seen };
}

describe('WriteBackQueue', () => {
  it('gathers episodes and writes them in one log write and one buffer add', async () => {
    const played = await episodes(3);
    const total = played.reduce((sum, each) => sum + each.length, 0);
    const { writeBack, buffer, file, seen } = await queue(total);
    writeBack.push(0, played[0]!);
    writeBack.push(0, played[1]!);
    expect(writeBack.full).toBe(false);
    expect(buffer.size).toBe(0);
    writeBack.push(1, played[2]!);
    expect(writeBack.full).toBe(true);
    expect(await writeBack.flush()).toBe(total);
    expect(await writeBack.flush()).toBe(0);
    expect(seen.batches).toHaveLength(1);
    expect(seen.batches[0]!.map((each) => each.id)).toEqual(played.flat().map((each) => each.id));
    expect(seen.logged).toBe(total);
    // The same buffer as one add per episode (duplicates counted on the stored record).
    const reference = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
    for (const episode of played) await reference.add(episode);
    const stored = (each: ReplayBuffer) => [...each.transitions()].map((one) => one.id);
    expect(stored(buffer)).toEqual(stored(reference));
    expect(buffer.size).toBeGreaterThan(0);
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(total);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      iteration: 1,
      transition: { id: played[2]!.at(-1)!.id },
    });
    expect(writeBack.stats()).toMatchObject({ batches: 1, transitions: total, pending: 0 });
  });

  it('drops a failed batch from the queue and reports the lines the log did get', async () => {
    const [first] = await episodes(1);
    const { writeBack, buffer, seen } = await queue(1000);
    await buffer.close();
    writeBack.push(0, first!);
    await expect(writeBack.flush()).rejects.toThrow(/closed/);
    expect(seen.logged).toBe(first!.length);
    expect(seen.batches).toHaveLength(0);
    expect(writeBack.size).toBe(0);
  });
});
