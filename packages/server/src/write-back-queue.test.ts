import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  HashingEmbedder,
  ReplayBuffer,
  SeededRandom,
  type Transition,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { LedgerCountersSchema, RunLedger } from '@dreamgym/core/internal';
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
  cleanup.push(() => rm(directory, { recursive: true, force: true }));
  const { ledger } = await RunLedger.open(
    {
      runDirectory: directory,
      holds: 'a run',
      configFile: 'config.json',
      counters: LedgerCountersSchema,
    },
    { settings: {}, config: {}, seed: 1, counters: {} },
  );
  const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
  const batches: AppliedBatch[] = [];
  const writeBack = new WriteBackQueue(
    buffer,
    (records) => ledger.appendExperience(records),
    { batchTransitions, flushMilliseconds: 100 },
    (batch) => batches.push(batch),
  );
  return { writeBack, buffer, file: ledger.path('experience.jsonl'), ledger, batches };
}

describe('WriteBackQueue', () => {
  it('gathers episodes and writes them in one log write and one buffer add', async () => {
    const played = await episodes(3);
    const total = played.reduce((sum, each) => sum + each.length, 0);
    const { writeBack, buffer, file, ledger, batches } = await queue(total);
    writeBack.push(0, played[0]!);
    writeBack.push(0, played[1]!);
    expect(writeBack.full).toBe(false);
    expect(buffer.size).toBe(0);
    writeBack.push(1, played[2]!);
    expect(writeBack.full).toBe(true);
    expect(await writeBack.flush()).toBe(total);
    expect(await writeBack.flush()).toBe(0);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.map((each) => each.id)).toEqual(played.flat().map((each) => each.id));
    expect(ledger.counters.experienceLines).toBe(total);
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

  it('drops a failed batch from the queue and counts the lines the log did get', async () => {
    const [first] = await episodes(1);
    const { writeBack, buffer, ledger, batches } = await queue(1000);
    await buffer.close();
    writeBack.push(0, first!);
    await expect(writeBack.flush()).rejects.toThrow(/closed/);
    expect(ledger.counters.experienceLines).toBe(first!.length);
    expect(batches).toHaveLength(0);
    expect(writeBack.size).toBe(0);
  });
});
