import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, DatasetFormatError, IndexError, LockedError } from '../errors.js';
import { writeJsonl } from '../mdp/jsonl.js';
import type { Transition } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { SeededRandom } from '../random/seeded-random.js';
import { startTypeScriptChild } from '../test-support/typescript-child.js';
import { actionType, loadExpertTransitions, synthetic } from './expert-transitions.test-support.js';
import { FaissVectorIndex } from './faiss-index.js';
import { DEFAULT_PHI_WEIGHTS, embedPhi } from './phi.js';
import { ReplayBuffer } from './replay-buffer.js';
import { ReplayLogEntrySchema } from './replay-log.js';

/** A HashingEmbedder that counts the texts it embeds (to prove reloads do not re-embed). */
class CountingEmbedder implements EmbeddingModel {
  readonly inner: HashingEmbedder;
  embedded = 0;
  constructor(dimension = 256) {
    this.inner = new HashingEmbedder({ dimension });
  }
  get id(): string {
    return this.inner.id;
  }
  get dimension(): number {
    return this.inner.dimension;
  }
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.embedded += texts.length;
    return this.inner.embed(texts);
  }
}

const train: Transition[] = [];
let heldOut: Transition[] = [];
const directories: string[] = [];

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-replay-'));
  directories.push(directory);
  return directory;
}

/** Distinct phi inputs (state and action) among `transitions`: the vector rows they need. */
function distinctPhi(transitions: Iterable<Transition>): number {
  return new Set(
    [...transitions].map((transition) => `${transition.state.text}\u0000${transition.action}`),
  ).size;
}

beforeAll(async () => {
  // 600 expert trajectories; 1 game in 8 is held out (split by game, never by step).
  const byGame = await loadExpertTransitions(600);
  const random = new SeededRandom(7);
  // Games replayed in several trials repeat (state, action, next state) exactly; keep one.
  const seen = new Set<string>();
  for (const [, transitions] of byGame) {
    const unique = transitions.filter((transition) => {
      const key = JSON.stringify([
        transition.state.text,
        transition.action,
        transition.nextState.text,
      ]);
      return !seen.has(key) && seen.add(key);
    });
    if (random.int(8) === 0) heldOut.push(...unique);
    else train.push(...unique);
  }
  heldOut = new SeededRandom(3).shuffle(heldOut).slice(0, 300);
});

afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true });
});

describe('ReplayBuffer retrieval on ALFWorld expert trajectories', () => {
  it.each([
    { type: 'flat' } as const,
    { type: 'hnsw', m: 16, efConstruction: 40, efSearch: 64 } as const,
  ])('returns transitions of the held-out step’s action type first (%o)', async (index) => {
    expect(train.length).toBeGreaterThan(4000);
    const buffer = ReplayBuffer.create({
      embedder: new HashingEmbedder({ dimension: 256 }),
      index,
    });
    const result = await buffer.add(train);
    expect(result.added.length + result.duplicates).toBe(train.length);
    let topMatches = 0;
    let majority = 0;
    for (const step of heldOut) {
      const found = await buffer.search({ state: step.state, action: step.action }, 8);
      expect(found).toHaveLength(8);
      const type = actionType(step.action);
      if (actionType(found[0]!.transition.action) === type) topMatches += 1;
      const same = found.filter((hit) => actionType(hit.transition.action) === type).length;
      if (same >= 6) majority += 1;
      for (let position = 1; position < found.length; position += 1) {
        expect(found[position]!.score).toBeLessThanOrEqual(found[position - 1]!.score + 1e-6);
      }
    }
    expect(heldOut.length).toBe(300);
    console.info(
      `${index.type}: top-1 action type ${topMatches}/300, >= 6 of top 8 ${majority}/300`,
    );
    expect(topMatches / heldOut.length).toBeGreaterThanOrEqual(0.95);
    expect(majority / heldOut.length).toBeGreaterThanOrEqual(0.85);
  });

  it('filters by domain, source, task and trajectory, exactly even when few transitions pass', async () => {
    const buffer = ReplayBuffer.create({
      embedder: new HashingEmbedder({ dimension: 256 }),
      exactScanBelow: 0,
    });
    const seeds = train.slice(0, 3000);
    const generated = train.slice(3000, 3040).map((transition) => synthetic(transition, 'gen'));
    await buffer.add([...seeds, ...generated]);
    const query = { state: heldOut[0]!.state, action: heldOut[0]!.action };
    const onlySynthetic = await buffer.search(query, 8, { sources: ['synthetic'] });
    expect(onlySynthetic).toHaveLength(8);
    expect(onlySynthetic.every((hit) => hit.transition.source === 'synthetic')).toBe(true);
    // The same answer as an exact (flat) search over the 40 synthetic transitions alone.
    const alone = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 256 }) });
    await alone.add(generated);
    const expected = await alone.search(query, 8);
    // Scores, not ids: equal phi vectors (same state and action) tie in any order.
    expect(onlySynthetic).toHaveLength(expected.length);
    for (const [position, hit] of onlySynthetic.entries()) {
      expect(hit.score).toBeCloseTo(expected[position]!.score, 5);
    }
    const task = seeds[100]!.taskId;
    const byTask = await buffer.search(query, 50, { taskIds: [task] });
    const inTask = seeds.filter((transition) => transition.taskId === task).length;
    expect(byTask).toHaveLength(inTask);
    expect(byTask.every((hit) => hit.transition.taskId === task)).toBe(true);
    expect(await buffer.search(query, 8, { domain: 'webshop' })).toEqual([]);
    const excluded = await buffer.search(query, 8, {
      excludeTrajectoryIds: [byTask[0]!.transition.trajectoryId!],
    });
    expect(excluded.some((hit) => hit.transition.taskId === task)).toBe(false);
  });

  it('suppresses exact duplicates and rejects a reused id with other content', async () => {
    const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
    const [first, second] = train;
    expect(await buffer.add([first!, first!, second!])).toEqual({
      added: [first!.id, second!.id],
      duplicates: 1,
      counted: 0,
      evicted: 0,
    });
    // Same state, action and next state under another id: still a duplicate.
    expect((await buffer.add([{ ...first!, id: 'copy' }])).duplicates).toBe(1);
    await expect(buffer.add([{ ...first!, action: 'look' }])).rejects.toThrow(ConfigError);
    await expect(buffer.add([{ ...first!, id: '' }])).rejects.toThrow(/transitions\.0\.id/);
    expect(buffer.stats().duplicatesSuppressed).toBe(2);
  });

  it('counts the occurrences of each transition and serves them with its search hits', async () => {
    const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
    const [first, second] = train;
    // Within one batch and across batches; the same id again is the same record, not another occurrence.
    expect(
      await buffer.add([first!, { ...first!, id: 'a' }, second!, { ...first!, id: 'b' }]),
    ).toEqual({ added: [first!.id, second!.id], duplicates: 2, counted: 2, evicted: 0 });
    expect(await buffer.add([{ ...second!, id: 'c' }, first!])).toMatchObject({
      added: [],
      duplicates: 2,
      counted: 1,
    });
    const hits = await buffer.search({ state: first!.state, action: first!.action }, 2);
    const counts = new Map(hits.map((hit) => [hit.transition.id, hit.count]));
    expect(counts).toEqual(
      new Map([
        [first!.id, 3],
        [second!.id, 2],
      ]),
    );
    expect(buffer.stats()).toMatchObject({ size: 2, occurrences: 5 });
    // The same data added again (every id seen, stored or counted) is no new occurrence.
    expect(
      await buffer.add([
        first!,
        { ...first!, id: 'a' },
        { ...first!, id: 'b' },
        { ...second!, id: 'c' },
      ]),
    ).toMatchObject({ added: [], duplicates: 4, counted: 0 });
    expect(buffer.stats()).toMatchObject({ size: 2, occurrences: 5 });
    await expect(buffer.add([{ ...second!, id: 'a' }])).rejects.toThrow(
      /`a` is already in the buffer/,
    );
  });

  it.each([
    { type: 'flat' } as const,
    { type: 'hnsw', m: 16, efConstruction: 40, efSearch: 16 } as const,
  ])('ranks equally similar transitions by occurrence count (%o)', async (index) => {
    const buffer = ReplayBuffer.create({
      embedder: new HashingEmbedder({ dimension: 64 }),
      index,
      exactScanBelow: 0,
    });
    await buffer.add(train.slice(0, 3000));
    // Sixty outcomes of one state and action (the same phi, so equal scores); outcome i
    // occurs 1 + (i * 7) % 60 times, so the most frequent ones are scattered among the rest.
    const [template] = train;
    const outcomes = Array.from({ length: 60 }, (_, outcome) => outcome);
    const copies = outcomes.flatMap((outcome) =>
      Array.from({ length: 1 + ((outcome * 7) % 60) }, (_, copy) => ({
        ...template!,
        id: `outcome-${outcome}-${copy}`,
        nextState: { text: `outcome ${outcome}` },
      })),
    );
    await buffer.add(new SeededRandom(5).shuffle(copies));
    const hits = await buffer.search({ state: template!.state, action: template!.action }, 5);
    expect(hits.map((hit) => hit.count)).toEqual([60, 59, 58, 57, 56]);
    expect(new Set(hits.map((hit) => hit.score)).size).toBe(1);
  });

  it('evicts synthetic/real transitions first-in first-out and never offline seeds', async () => {
    const directory = await temporaryDirectory();
    const embedder = new CountingEmbedder(64);
    const buffer = await ReplayBuffer.open(directory, { embedder, capacity: 100 });
    const seeds = train.slice(0, 60);
    await buffer.add(seeds);
    const generated = train
      .slice(60, 160)
      .map((transition, index) => synthetic(transition, `g${index}`));
    const result = await buffer.add(generated);
    expect(result.evicted).toBe(60);
    expect(buffer.size).toBe(100);
    expect(buffer.stats().bySource).toEqual({ offline: 60, synthetic: 40, real: 0 });
    expect(buffer.get(generated[59]!.id)).toBeUndefined();
    expect(buffer.get(generated[60]!.id)).toBeDefined();
    expect(seeds.every((seed) => buffer.get(seed.id) !== undefined)).toBe(true);
    // Evicted rows were compacted away (60 of 160 >= 25%): the index holds live rows only.
    expect(buffer.stats().indexedRows).toBe(distinctPhi(buffer.transitions()));
    const hits = await buffer.search(
      { state: generated[0]!.state, action: generated[0]!.action },
      100,
    );
    expect(hits).toHaveLength(100);
    await buffer.close();
    const embeddedBefore = embedder.embedded;
    const reopened = await ReplayBuffer.open(directory, { embedder, capacity: 100 });
    expect(embedder.embedded).toBe(embeddedBefore);
    expect(reopened.stats().bySource).toEqual({ offline: 60, synthetic: 40, real: 0 });
    await reopened.close();
  });

  it('answers every search while its memo of query parts fills and clears, also concurrently', async () => {
    const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
    await buffer.add(train.slice(0, 50));
    const expected = await buffer.search({ state: train[0]!.state, action: train[0]!.action }, 3);
    // One action shared by every query stays remembered while ~5,000 new states push the
    // memo past its capacity: its clearing must not lose the vectors a query already found.
    const queries = Array.from({ length: 5000 }, (_, index) => ({
      state: { ...train[0]!.state, text: `${train[0]!.state.text} variant ${index}` },
      action: train[0]!.action,
    }));
    for (let start = 0; start < queries.length; start += 50) {
      const batch = queries.slice(start, start + 50);
      const hits = await Promise.all(batch.map((query) => buffer.search(query, 3)));
      expect(hits.every((found) => found.length === 3)).toBe(true);
    }
    expect(await buffer.search({ state: train[0]!.state, action: train[0]!.action }, 3)).toEqual(
      expected,
    );
    await buffer.close();
  });
});

describe('ReplayBuffer persistence', () => {
  it('keeps occurrence counts across reload and compaction', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 64 });
    const options = { embedder, capacity: 40 };
    const seeds = train.slice(0, 20);
    const buffer = await ReplayBuffer.open(directory, options);
    // Seed 0 occurs three times (two in the first batch, one later), seed 1 twice.
    await buffer.add([...seeds, { ...seeds[0]!, id: 'again-0' }]);
    await buffer.add([
      { ...seeds[0]!, id: 'third-0' },
      { ...seeds[1]!, id: 'again-1' },
    ]);
    await buffer.close();

    const countOf = async (target: ReplayBuffer, transition: Transition) => {
      const hits = await target.search({ state: transition.state, action: transition.action }, 40);
      return hits.find((hit) => hit.transition.id === transition.id)?.count;
    };
    const reopened = await ReplayBuffer.open(directory, options);
    expect(await countOf(reopened, seeds[0]!)).toBe(3);
    expect(await countOf(reopened, seeds[1]!)).toBe(2);
    expect(await countOf(reopened, seeds[2]!)).toBe(1);
    expect(reopened.stats().occurrences).toBe(23);
    // Synthetic transitions past capacity evict and compact: the log is rewritten.
    const generated = train
      .slice(20, 60)
      .map((transition, index) => synthetic(transition, `c${index}`));
    expect((await reopened.add(generated)).evicted).toBe(20);
    expect(reopened.stats().indexedRows).toBe(distinctPhi(reopened.transitions()));
    expect(await countOf(reopened, seeds[0]!)).toBe(3);
    await reopened.close();
    const log = await readFile(join(directory, 'records.jsonl'), 'utf8');
    expect(log).not.toContain('"op":"count"');

    const compacted = await ReplayBuffer.open(directory, options);
    expect(await countOf(compacted, seeds[0]!)).toBe(3);
    expect(await countOf(compacted, seeds[1]!)).toBe(2);
    expect(compacted.stats()).toMatchObject({ size: 40, occurrences: 43 });
    // The ids counted as duplicates survive reload and compaction: adding them again counts nothing.
    expect(
      await compacted.add([
        { ...seeds[0]!, id: 'again-0' },
        { ...seeds[0]!, id: 'third-0' },
        { ...seeds[1]!, id: 'again-1' },
      ]),
    ).toMatchObject({ duplicates: 3, counted: 0 });
    expect(await countOf(compacted, seeds[0]!)).toBe(3);
    await compacted.close();
  });

  it('replays evictions from the log and still catches duplicates and reused ids of records not yet served', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 64 });
    const options = { embedder, capacity: 50, compactAt: 0.9 };
    const buffer = await ReplayBuffer.open(directory, options);
    const generated = train
      .slice(0, 60)
      .map((transition, index) => synthetic(transition, `e${index}`));
    expect((await buffer.add(generated)).evicted).toBe(10);
    await buffer.close();
    const log = (await readFile(join(directory, 'records.jsonl'), 'utf8')).trimEnd().split('\n');
    expect(log.filter((line) => line.includes('"op":"evict"'))).toHaveLength(10);

    const reopened = await ReplayBuffer.open(directory, options);
    expect(reopened.size).toBe(50);
    // Rows of evicted transitions stay until the next compaction.
    expect(reopened.stats().indexedRows).toBe(distinctPhi(generated));
    expect(reopened.get(generated[9]!.id)).toBeUndefined();
    // Both checks compare against reloaded records the buffer has not served since.
    expect((await reopened.add([{ ...generated[30]!, id: 'same-content' }])).duplicates).toBe(1);
    await expect(reopened.add([{ ...generated[31]!, action: 'look' }])).rejects.toThrow(
      ConfigError,
    );
    // An evicted transition is gone: adding it again stores it (and evicts the oldest).
    expect(await reopened.add([generated[0]!])).toEqual({
      added: [generated[0]!.id],
      duplicates: 0,
      counted: 0,
      evicted: 1,
    });
    expect(reopened.get(generated[10]!.id)).toBeUndefined();
    expect([...reopened.transitions()].map((transition) => transition.id)).toEqual(
      [...generated.slice(11), generated[0]!].map((transition) => transition.id),
    );
    await reopened.close();
  });

  it('reloads without re-embedding and answers searches identically', async () => {
    const directory = await temporaryDirectory();
    const embedder = new CountingEmbedder();
    const buffer = await ReplayBuffer.open(directory, { embedder });
    await buffer.add(train.slice(0, 2000));
    const query = { state: heldOut[1]!.state, action: heldOut[1]!.action };
    const before = await buffer.search(query, 8);
    await buffer.close();
    const embedded = embedder.embedded;
    const reopened = await ReplayBuffer.open(directory, { embedder });
    expect(embedder.embedded).toBe(embedded);
    expect(reopened.size).toBe(2000);
    const after = await reopened.search(query, 8);
    expect(after.map((hit) => hit.transition.id)).toEqual(before.map((hit) => hit.transition.id));
    const manifest = JSON.parse(await readFile(join(directory, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({
      embedderId: embedder.id,
      dimension: 256,
      indexedCount: distinctPhi(train.slice(0, 2000)),
      slotCount: 2000,
      index: { type: 'flat' },
    });
    await reopened.close();
  });

  it('converts a buffer of the earlier layout (one vector per record) without re-embedding', async () => {
    const directory = await temporaryDirectory();
    const inner = new HashingEmbedder({ dimension: 64 });
    const records = [...train.slice(0, 300), ...train.slice(0, 40).map((t) => synthetic(t, 'v1'))];
    const original = ReplayBuffer.create({ embedder: inner });
    await original.add(records);
    const query = { state: heldOut[2]!.state, action: heldOut[2]!.action };
    const expected = await original.search(query, 8);
    // The earlier layout: records.jsonl as now; vectors.f32 and index.faiss one row per record.
    await writeJsonl(
      join(directory, 'records.jsonl'),
      ReplayLogEntrySchema,
      records.map((transition) => ({ op: 'add' as const, transition })),
    );
    const vectors = new Float32Array(records.length * 64);
    await embedPhi(
      inner,
      records.map((t) => ({ stateText: t.state.text, action: t.action })),
      DEFAULT_PHI_WEIGHTS,
      vectors,
    );
    await writeFile(join(directory, 'vectors.f32'), new Uint8Array(vectors.buffer));
    const legacyIndex = await FaissVectorIndex.create(64, { type: 'flat' });
    legacyIndex.add(vectors, records.length);
    await legacyIndex.write(join(directory, 'index.faiss'));
    await writeFile(
      join(directory, 'manifest.json'),
      JSON.stringify({
        format: 'dreamgym-replay-buffer',
        version: 1,
        embedderId: inner.id,
        dimension: 64,
        index: { type: 'flat' },
        phiWeights: { state: 1, action: 1, instruction: 0 },
        indexedCount: records.length,
        liveCount: records.length,
        updatedAt: new Date().toISOString(),
      }),
    );
    await expect(
      ReplayBuffer.open(directory, { embedder: new CountingEmbedder(64), readOnly: true }),
    ).rejects.toThrow(
      /earlier version of the replay buffer .* open it writable once to convert it/,
    );
    const embedder = new CountingEmbedder(64);
    const converted = await ReplayBuffer.open(directory, { embedder });
    expect(embedder.embedded).toBe(0);
    expect(converted.stats()).toMatchObject({
      size: records.length,
      occurrences: records.length,
      indexedRows: distinctPhi(records),
    });
    const found = await converted.search(query, 8);
    expect(found.map((hit) => hit.score)).toEqual(expected.map((hit) => hit.score));
    await converted.close();
    const manifest = JSON.parse(await readFile(join(directory, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ version: 2, slotCount: records.length });
  });

  it('refuses a mismatched embedder with a clear error, and rebuilds with it on request', async () => {
    const directory = await temporaryDirectory();
    const buffer = await ReplayBuffer.open(directory, {
      embedder: new HashingEmbedder({ dimension: 256 }),
    });
    await buffer.add(train.slice(0, 200));
    await buffer.close();
    const other = new HashingEmbedder({ dimension: 128 });
    await expect(ReplayBuffer.open(directory, { embedder: other })).rejects.toThrow(
      /embedded with `hashing-v1:dim=256.*but the embedder given is `hashing-v1:dim=128.*rebuild: true/,
    );
    const rebuilt = await ReplayBuffer.open(directory, { embedder: other, rebuild: true });
    expect(rebuilt.size).toBe(200);
    expect(rebuilt.stats().embedderId).toBe(other.id);
    await rebuilt.close();
    const reopened = await ReplayBuffer.open(directory, { embedder: other });
    expect(reopened.size).toBe(200);
    await reopened.close();
  });

  it('detects a corrupt or truncated index and rebuilds it from the records', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 256 });
    const buffer = await ReplayBuffer.open(directory, { embedder });
    await buffer.add(train.slice(0, 500));
    const query = { state: heldOut[2]!.state, action: heldOut[2]!.action };
    const before = (await buffer.search(query, 8)).map((hit) => hit.transition.id);
    await buffer.close();
    const indexFile = join(directory, 'index.faiss');
    const original = await readFile(indexFile);

    await truncate(indexFile, Math.floor(original.length / 2));
    await expect(ReplayBuffer.open(directory, { embedder })).rejects.toSatisfy(
      (error) => IndexError.isInstance(error) && /index\.faiss.*rebuild: true/s.test(error.message),
    );
    await writeFile(indexFile, 'not a faiss index');
    await expect(ReplayBuffer.open(directory, { embedder })).rejects.toThrow(/rebuild: true/);
    // An index with fewer vectors than the manifest records (an older index file).
    const small = await ReplayBuffer.open(await temporaryDirectory(), { embedder });
    await small.add(train.slice(0, 10));
    await small.close();
    await writeFile(indexFile, await readFile(join(directories.at(-1)!, 'index.faiss')));
    await expect(ReplayBuffer.open(directory, { embedder })).rejects.toThrow(
      /holds 10 vectors.*rebuild: true/s,
    );

    const rebuilt = await ReplayBuffer.open(directory, { embedder, rebuild: true });
    expect((await rebuilt.search(query, 8)).map((hit) => hit.transition.id)).toEqual(before);
    await rebuilt.close();
    const reopened = await ReplayBuffer.open(directory, { embedder });
    expect(reopened.size).toBe(500);
    await reopened.close();
  });

  it('keeps its index type across reopen and rebuild, and rebuild() can change it', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 64 });
    const buffer = await ReplayBuffer.open(directory, { embedder, index: { type: 'hnsw', m: 8 } });
    await buffer.add(train.slice(0, 300));
    await buffer.close();
    await expect(
      ReplayBuffer.open(directory, { embedder, index: { type: 'flat' } }),
    ).rejects.toThrow(/rebuild: true/);
    const rebuilt = await ReplayBuffer.open(directory, { embedder, rebuild: true });
    expect(rebuilt.stats().index).toEqual({
      type: 'hnsw',
      m: 8,
      efConstruction: 40,
      efSearch: 128,
    });
    await rebuilt.rebuild({ index: { type: 'flat' } });
    await rebuilt.close();
    const reopened = await ReplayBuffer.open(directory, { embedder });
    expect(reopened.stats()).toMatchObject({
      size: 300,
      index: { type: 'flat' },
      unflushedRows: 0,
    });
    const [hit] = await reopened.search({ state: train[7]!.state, action: train[7]!.action }, 1);
    expect(hit!.transition.id).toBe(train[7]!.id);
    await reopened.close();
  });

  it('ignores a truncated last record with a warning, and appends cleanly after it', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 64 });
    const buffer = await ReplayBuffer.open(directory, { embedder });
    await buffer.add(train.slice(0, 20));
    await buffer.close();
    const records = join(directory, 'records.jsonl');
    const torn = JSON.stringify({ op: 'add', transition: train[20] }).slice(0, 150);
    await appendFile(records, torn);
    const warnings: string[] = [];
    const reopened = await ReplayBuffer.open(directory, {
      embedder,
      onWarning: (message) => warnings.push(message),
    });
    expect(warnings).toEqual([expect.stringMatching(/truncated last record.*never committed/)]);
    expect(reopened.size).toBe(20);
    expect(reopened.get(train[20]!.id)).toBeUndefined();
    await reopened.add([train[21]!]);
    await reopened.close();
    const lines = (await readFile(records, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(21);
    for (const line of lines) JSON.parse(line);
  });

  it('reports a corrupt committed record with file:line instead of serving it', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 64 });
    const buffer = await ReplayBuffer.open(directory, { embedder });
    await buffer.add(train.slice(0, 5));
    await buffer.close();
    const records = join(directory, 'records.jsonl');
    const lines = (await readFile(records, 'utf8')).trimEnd().split('\n');
    // Line 3: a field the index does not use is broken; found when the record is served.
    const third = JSON.parse(lines[2]!);
    third.transition.reward = 'high';
    await writeFile(
      records,
      `${[...lines.slice(0, 2), JSON.stringify(third), ...lines.slice(3)].join('\n')}\n`,
    );
    const reopened = await ReplayBuffer.open(directory, { embedder });
    expect(reopened.get(train[0]!.id)).toEqual(train[0]);
    expect(() => reopened.get(train[2]!.id)).toThrow(
      /records\.jsonl:3 \(field `transition\.reward`\)/,
    );
    await expect(
      reopened.search({ state: train[2]!.state, action: train[2]!.action }, 1),
    ).rejects.toThrow(DatasetFormatError);
    await reopened.close();
    // Line 2: not JSON at all; the buffer refuses to open.
    await writeFile(records, `${[lines[0], '{"op":"add","tr', ...lines.slice(2)].join('\n')}\n`);
    await expect(ReplayBuffer.open(directory, { embedder })).rejects.toThrow(
      /records\.jsonl:2: invalid JSON/,
    );
  });

  it('keeps every committed record and serves no corrupt one after the writer is killed mid-append', async () => {
    const directory = await temporaryDirectory();
    const work = await temporaryDirectory();
    const transitionsFile = join(work, 'transitions.json');
    await writeFile(transitionsFile, JSON.stringify(train.slice(0, 3000)));
    const child = await startTypeScriptChild(
      resolve(import.meta.dirname, 'append-child.test-support.ts'),
      [directory, transitionsFile, '40'],
    );
    const committed: string[] = [];
    await new Promise<void>((done, fail) => {
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        if (line.startsWith('committed ')) committed.push(line.slice('committed '.length));
        // Kill while it is appending (well past its one flush, far from the end).
        if (committed.length === 150) {
          child.kill('SIGKILL');
          done();
        }
        if (line === 'exhausted') fail(new Error('the child finished before it was killed'));
      });
      child.on('exit', (code, signal) => {
        if (signal !== 'SIGKILL') fail(new Error(`child exited early (${code ?? signal})`));
      });
    });
    await new Promise((done) => child.once('exit', done).exitCode !== null && done(undefined));

    // The dead child's lock is stale; the reopen takes it over with a warning.
    const warnings: string[] = [];
    const embedder = new CountingEmbedder();
    const reopened = await ReplayBuffer.open(directory, {
      embedder,
      onWarning: (message) => warnings.push(message),
    });
    expect(warnings.some((message) => /stale replay-buffer lock/.test(message))).toBe(true);
    for (const id of committed) expect(reopened.get(id)?.id).toBe(id);
    // Anything beyond the reported ids is a record the child wrote but had not yet reported.
    expect(reopened.size).toBeGreaterThanOrEqual(committed.length);
    expect(reopened.size).toBeLessThanOrEqual(committed.length + 1);
    const byId = new Map(train.slice(0, 3000).map((transition) => [transition.id, transition]));
    for (const transition of reopened.transitions())
      expect(transition).toEqual(byId.get(transition.id));
    // Only the rows of records added after the child's flush were embedded (2 texts each).
    const stored = [...reopened.transitions()];
    expect(embedder.embedded).toBe(2 * (distinctPhi(stored) - distinctPhi(stored.slice(0, 40))));
    const hits = await reopened.search({ state: train[5]!.state, action: train[5]!.action }, 1);
    expect(hits[0]!.transition.id).toBe(train[5]!.id);
    await reopened.close();
  });
});

describe('ReplayBuffer lock', () => {
  it('refuses a second writer while the first is alive, and takes over a stale lock', async () => {
    const directory = await temporaryDirectory();
    const embedder = new HashingEmbedder({ dimension: 64 });
    const buffer = await ReplayBuffer.open(directory, { embedder });
    await expect(ReplayBuffer.open(directory, { embedder })).rejects.toThrow(LockedError);
    const reader = await ReplayBuffer.open(directory, { embedder, readOnly: true });
    await expect(reader.add([train[0]!])).rejects.toThrow(/readOnly/);
    await buffer.close();

    // A lock held by another live process.
    const sleeper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      stdio: 'ignore',
    });
    try {
      const { hostname } = await import('node:os');
      const lockFile = join(directory, 'buffer.lock');
      await writeFile(
        lockFile,
        JSON.stringify({ pid: sleeper.pid, host: hostname(), since: 'test' }),
      );
      await expect(ReplayBuffer.open(directory, { embedder })).rejects.toSatisfy(
        (error) =>
          LockedError.isInstance(error) && error.message.includes(`process ${sleeper.pid}`),
      );
      sleeper.kill('SIGKILL');
      await new Promise((done) => sleeper.once('exit', done));
      const warnings: string[] = [];
      const taken = await ReplayBuffer.open(directory, {
        embedder,
        onWarning: (message) => warnings.push(message),
      });
      expect(warnings).toEqual([
        expect.stringContaining(`process ${sleeper.pid}, which is no longer running`),
      ]);
      await taken.close();
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
