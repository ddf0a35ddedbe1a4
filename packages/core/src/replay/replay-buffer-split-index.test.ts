import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Transition } from '../mdp/schemas.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { loadExpertTransitions, synthetic } from './expert-transitions.test-support.js';
import { ReplayBuffer } from './replay-buffer.js';
import type { SplitIndex } from './split-index.js';

let offline: Transition[] = [];
let later: Transition[] = [];
const directories: string[] = [];

beforeAll(async () => {
  const all = [...(await loadExpertTransitions(120)).values()].flat();
  offline = all.slice(0, 400);
  later = all.slice(400, 800);
});

afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true })));
});

/** Write-backs with states of their own (new phi rows), as a synthetic environment makes. */
function writeBacks(from: number, count: number): Transition[] {
  return later.slice(from, from + count).map((transition, index) => {
    const written = synthetic(transition, `w${from + index}`);
    return {
      ...written,
      state: { text: `${transition.state.text}\n(written back ${from + index})` },
    };
  });
}

/** The buffer's index (internal: which faiss index object holds the settled rows). */
function indexOf(buffer: ReplayBuffer): SplitIndex {
  return (buffer as unknown as { state: { index: SplitIndex } }).state.index;
}

/** Ids and scores of the top 10 for each query, by the index and by an exact scan. */
async function bothSearches(buffer: ReplayBuffer, queries: readonly Transition[]) {
  const indexed: string[][] = [];
  const exact: string[][] = [];
  for (const query of queries) {
    const vector = await buffer.embedQuery({ state: query.state, action: query.action });
    const show = (hits: { transition: Transition; score: number }[]) =>
      hits.map((hit) => `${hit.transition.id} ${hit.score.toFixed(5)}`);
    indexed.push(show(buffer.searchVector(vector, 10)));
    exact.push(show(buffer.searchExactVector(vector, 10)));
  }
  return { indexed, exact };
}

describe('ReplayBuffer split index (capped buffers)', () => {
  it('keeps offline rows settled and rebuilds only the fresh part when compacting', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-split-'));
    directories.push(directory);
    const options = {
      embedder: new HashingEmbedder({ dimension: 64 }),
      index: { type: 'flat' as const },
      capacity: offline.length + 60,
      compactAt: 0.1,
    };
    const buffer = await ReplayBuffer.open(directory, options);
    await buffer.add(offline);
    const offlineRows = buffer.stats().indexedRows;
    // Exact duplicates among the expert steps are counted, not stored.
    const stored = buffer.size;
    expect(buffer.stats().freshRows).toBe(0);
    const settled = indexOf(buffer).settled;

    let evicted = 0;
    for (let from = 0; from < 300; from += 20)
      evicted += (await buffer.add(writeBacks(from, 20))).evicted;
    expect(evicted).toBe(stored + 300 - options.capacity);
    const stats = buffer.stats();
    expect(stats.size).toBe(options.capacity);
    expect(stats.bySource.offline).toBe(stored);
    // Compactions happened (the evicted rows are gone) and left the settled index as it was.
    expect(stats.indexedRows).toBeLessThan(offlineRows + 300);
    expect(indexOf(buffer).settled).toBe(settled);
    expect(indexOf(buffer).settledSize).toBe(offlineRows);
    expect(stats.freshRows).toBe(stats.indexedRows - offlineRows);
    expect(stats.freshRows).toBeGreaterThanOrEqual(options.capacity - stored);
    // Over both parts, the flat index answers exactly what a scan of the rows does.
    const queries = [...later.slice(600, 620), ...writeBacks(280, 20)];
    const before = await bothSearches(buffer, queries);
    expect(before.indexed).toEqual(before.exact);

    // Both parts are written (index.faiss, index-fresh.faiss) and read back as they were.
    await buffer.close();
    const reopened = await ReplayBuffer.open(directory, options);
    expect(reopened.stats().freshRows).toBe(stats.freshRows);
    expect(indexOf(reopened).settledSize).toBe(offlineRows);
    expect((await bothSearches(reopened, queries)).indexed).toEqual(before.indexed);
    const reloadedSettled = indexOf(reopened).settled;
    for (let from = 300; from < 400; from += 20) await reopened.add(writeBacks(from, 20));
    expect(indexOf(reopened).settled).toBe(reloadedSettled);
    const after = await bothSearches(reopened, queries);
    expect(after.indexed).toEqual(after.exact);
    await reopened.close();
  });

  it('keeps every row settled without a capacity', async () => {
    const buffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 64 }) });
    await buffer.add(offline.slice(0, 100));
    await buffer.add(writeBacks(0, 50));
    expect(buffer.stats().freshRows).toBe(0);
    expect(indexOf(buffer).settledSize).toBe(buffer.stats().indexedRows);
  });
});
