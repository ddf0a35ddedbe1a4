import { cp, mkdtemp, open, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatasetFormatError } from '../errors.js';
import type { Transition } from '../mdp/schemas.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { loadExpertTransitions, synthetic } from './expert-transitions.test-support.js';
import { ReplayBuffer } from './replay-buffer.js';

const embedder = new HashingEmbedder({ dimension: 64 });
const seeds: Transition[] = [];
const queries: Transition[] = [];
const directories: string[] = [];

beforeAll(async () => {
  const byGame = await loadExpertTransitions(160);
  const games = [...byGame.values()];
  // The last games only query (they are not stored).
  for (const transitions of games.slice(0, -10)) seeds.push(...transitions);
  for (const transitions of games.slice(-10)) queries.push(...transitions);
});
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true });
});

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-slots-'));
  directories.push(directory);
  return directory;
}

/** Offline seeds, duplicates counted under new ids, and synthetic ones evicted past capacity. */
async function buildBuffer(directory: string): Promise<void> {
  const buffer = await ReplayBuffer.open(directory, { embedder, capacity: 1200, compactAt: 0.9 });
  await buffer.add(seeds.slice(0, 1000));
  await buffer.add(seeds.slice(0, 60).map((seed, index) => ({ ...seed, id: `again-${index}` })));
  await buffer.add(seeds.slice(1000, 1600).map((seed, index) => synthetic(seed, `s${index}`)));
  await buffer.close();
}

/** Everything a reader of the buffer sees: stats, records (served in full), searches. */
async function observe(buffer: ReplayBuffer) {
  const searches = [];
  for (const query of queries.slice(0, 40)) {
    const hits = await buffer.search({ state: query.state, action: query.action }, 8);
    searches.push(hits.map((hit) => [hit.transition.id, hit.count, hit.score]));
  }
  const { directory: _, ...stats } = buffer.stats();
  return {
    stats,
    transitions: [...buffer.transitions()],
    searches,
  };
}

/** A copy of the buffer in `directory` without its slot snapshot (so open reads the whole log). */
async function withoutSnapshot(directory: string): Promise<string> {
  const copy = await temporaryDirectory();
  await cp(directory, copy, { recursive: true });
  await rm(join(copy, 'slots.bin'));
  return copy;
}

async function observeReadOnly(directory: string, warnings: string[] = []) {
  const buffer = await ReplayBuffer.open(directory, {
    embedder,
    readOnly: true,
    onWarning: (message) => warnings.push(message),
  });
  try {
    return await observe(buffer);
  } finally {
    await buffer.close();
  }
}

/** Overwrites `from` with `to` (the same length) at its first occurrence in the log after `after`. */
async function editLog(directory: string, from: string, to: string, after = 0): Promise<number> {
  expect(Buffer.byteLength(from)).toBe(Buffer.byteLength(to));
  const file = join(directory, 'records.jsonl');
  const log = await readFile(file);
  const at = log.indexOf(from, after);
  expect(at).toBeGreaterThanOrEqual(0);
  const handle = await open(file, 'r+');
  await handle.write(Buffer.from(to), 0, Buffer.byteLength(to), at);
  await handle.close();
  return log.subarray(0, at).toString().split('\n').length;
}

describe('ReplayBuffer slot snapshot', () => {
  it('reopens from the snapshot exactly as from the whole log, parsing only what the snapshot does not hold', async () => {
    const directory = await temporaryDirectory();
    await buildBuffer(directory);
    const reference = await observeReadOnly(await withoutSnapshot(directory));
    // Some synthetic records were evicted, some duplicates counted.
    expect(reference.stats.bySource.synthetic).toBeLessThan(600);
    expect(reference.stats.occurrences).toBeGreaterThan(reference.stats.size + 60);
    const warnings: string[] = [];
    expect(await observeReadOnly(directory, warnings)).toEqual(reference);
    expect(warnings).toEqual([]);

    // The ids counted as duplicates come back from the snapshot: adding them again counts nothing.
    const writable = await ReplayBuffer.open(directory, { embedder });
    expect(
      await writable.add(
        seeds.slice(0, 60).map((seed, index) => ({ ...seed, id: `again-${index}` })),
      ),
    ).toMatchObject({ duplicates: 60, counted: 0 });
    await writable.close();

    // What the snapshot holds is not parsed on open: a record edited since in an indexed field
    // opens, and is reported with file:line when it is served (the whole log fails on open).
    const line = await editLog(directory, '"source":"offline"', '"source":"offlinX"');
    expect(line).toBe(1);
    const whole = ReplayBuffer.open(await withoutSnapshot(directory), { embedder, readOnly: true });
    await expect(whole).rejects.toThrow(/records\.jsonl:1 \(field `transition\.source`\)/);
    const fromSnapshot = await ReplayBuffer.open(directory, { embedder, readOnly: true });
    const served = () => [...fromSnapshot.transitions()];
    expect(served).toThrow(DatasetFormatError);
    expect(served).toThrow(/records\.jsonl:1 \(field `transition\.source`\)/);
    await fromSnapshot.close();
  });

  it('reads the log after the snapshot: records, counts and evictions committed after the last flush', async () => {
    const directory = await temporaryDirectory();
    await buildBuffer(directory);
    const buffer = await ReplayBuffer.open(directory, { embedder, capacity: 1200, compactAt: 0.9 });
    await buffer.add(seeds.slice(1600, 1700).map((seed, index) => synthetic(seed, `t${index}`)));
    await buffer.add(seeds.slice(60, 80).map((seed, index) => ({ ...seed, id: `later-${index}` })));
    // A crash now: the log holds these entries, the snapshot and manifest the last flush.
    const crashed = await temporaryDirectory();
    await cp(directory, crashed, { recursive: true });
    await rm(join(crashed, 'buffer.lock'));
    await buffer.close();
    const snapshot = await readFile(join(crashed, 'slots.bin'));
    const header = JSON.parse(snapshot.toString('utf8', 4, 4 + snapshot.readUInt32LE(0)));
    const log = await readFile(join(crashed, 'records.jsonl'));
    const after = log.subarray(header.log.bytes).toString().trimEnd().split('\n');
    const ops = after.map((line) => JSON.parse(line).op as string);
    expect(ops.filter((op) => op === 'add')).toHaveLength(100);
    expect(ops.filter((op) => op === 'count')).toHaveLength(20);
    expect(ops.filter((op) => op === 'evict').length).toBeGreaterThan(0);

    const warnings: string[] = [];
    const reopened = await ReplayBuffer.open(crashed, {
      embedder,
      onWarning: (message) => warnings.push(message),
    });
    const caughtUp = await observe(reopened);
    await reopened.close();
    expect(warnings).toEqual([]);
    expect(caughtUp.stats.bySource.synthetic).toBeGreaterThan(0);
    expect(caughtUp).toEqual(await observeReadOnly(directory));
    expect(caughtUp).toEqual(await observeReadOnly(await withoutSnapshot(directory)));
  });

  it('falls back to the whole log, with a warning, when the snapshot is torn, stale or describes another log', async () => {
    const directory = await temporaryDirectory();
    const buffer = await ReplayBuffer.open(directory, { embedder });
    await buffer.add(seeds.slice(0, 500));
    await buffer.flush();
    const older = await readFile(join(directory, 'slots.bin'));
    await buffer.close();
    await buildBuffer(directory);
    const reference = await observeReadOnly(await withoutSnapshot(directory));
    const intact = await readFile(join(directory, 'slots.bin'));

    const cases: [string, (copy: string) => Promise<void>, RegExp][] = [
      [
        'torn',
        (copy) => truncate(join(copy, 'slots.bin'), intact.length - 100),
        /slots\.bin is not used: it is torn/,
      ],
      [
        'not a snapshot',
        (copy) => writeFile(join(copy, 'slots.bin'), 'not a snapshot'),
        /slots\.bin is not used: its header is unreadable/,
      ],
      [
        'from an earlier flush',
        (copy) => writeFile(join(copy, 'slots.bin'), older),
        /slots\.bin is not used: it holds \d+ records, the manifest \d+/,
      ],
      [
        'the log edited near its end',
        async (copy) => {
          const log = await readFile(join(copy, 'records.jsonl'));
          await editLog(copy, '"done":false', '"done":"no!"', log.length - 20_000);
        },
        /slots\.bin is not used: it does not describe .*records\.jsonl as it is now/,
      ],
    ];
    for (const [name, damage, warning] of cases) {
      const copy = await temporaryDirectory();
      await cp(directory, copy, { recursive: true });
      await damage(copy);
      const warnings: string[] = [];
      const seen = await observeReadOnly(copy, warnings).catch((error: unknown) => error);
      expect(warnings, name).toHaveLength(1);
      expect(warnings[0], name).toMatch(warning);
      if (name === 'the log edited near its end') {
        // The edited record fails its full check when served, with file:line.
        expect(seen).toBeInstanceOf(DatasetFormatError);
        expect(String(seen)).toMatch(/records\.jsonl:\d+ \(field `transition\.done`\)/);
        continue;
      }
      expect(seen, name).toEqual(reference);
      // A writable open writes a snapshot that fits again.
      const repairing: string[] = [];
      const writable = await ReplayBuffer.open(copy, {
        embedder,
        onWarning: (message) => repairing.push(message),
      });
      await writable.close();
      expect(repairing, name).toEqual(warnings);
      const after: string[] = [];
      expect(await observeReadOnly(copy, after), name).toEqual(reference);
      expect(after, name).toEqual([]);
    }
  });
});
