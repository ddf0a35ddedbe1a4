/**
 * Replicas of one served run sharing their write-backs through a LanceDB table: two replica
 * processes on 127.0.0.1 over one folder, episodes on each, a replica killed and resumed;
 * then the errors (LanceDB missing, a URI it cannot open, a foreign table). Real LanceDB
 * (installed by scripts/setup.d/60-lancedb.sh), nothing mocked.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { corridorDomain, playEpisode, TestClient } from '../src/corridor-run.test-support.js';
import { silentLogger } from '../src/logger.js';
import { serveDreamGym } from '../src/serve-dreamgym.js';
import { SharedBuffer, type SharedBufferStats } from '../src/shared-buffer.js';
import { LANCEDB_FOLDER, testLanceDb } from './shared-buffer-replica.test-support.js';

/** Distinct transitions of corridor play (the offline ones of the test domain). */
async function corridorTransitions() {
  const domain = await corridorDomain({ episodes: 6 });
  return { transitions: [...domain.replayBuffer.transitions()] };
}

const replicaScript = join(import.meta.dirname, 'shared-buffer-replica.test-support.ts');

let directory: string;
beforeAll(async () => {
  if (!existsSync(join(LANCEDB_FOLDER, 'node_modules/@lancedb/lancedb'))) {
    throw new Error(
      `${LANCEDB_FOLDER}/node_modules has no @lancedb/lancedb: run \`bash scripts/setup.sh lancedb\`.`,
    );
  }
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-shared-buffer-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

interface Status {
  buffer: { size: number; written: number };
  episodes: { finished: number };
  sharedBuffer: SharedBufferStats;
}

class Replica {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static start(settings: Record<string, unknown>): Promise<Replica> {
    const child = spawn(process.execPath, ['--import', 'tsx', replicaScript], {
      env: { ...process.env, DREAMGYM_REPLICA: JSON.stringify(settings) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    return new Promise((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        const line = /\{"url":"[^"]+"\}/.exec(chunk.toString());
        if (line) resolve(new Replica(child, (JSON.parse(line[0]) as { url: string }).url));
      });
      child.once('exit', (code) => reject(new Error(`replica exited (${code}): ${output}`)));
    });
  }

  async status(): Promise<Status> {
    return (await (await fetch(`${this.url}/dreamgym/status`)).json()) as Status;
  }

  async metrics(): Promise<string> {
    return (await fetch(`${this.url}/metrics`)).text();
  }

  async play(episodes: number, seed: number): Promise<void> {
    const client = await TestClient.connect(this.url);
    const { SeededRandom } = await import('@dreamgym/core');
    const random = new SeededRandom(seed);
    for (let index = 0; index < episodes; index += 1) {
      await playEpisode(client, { noise: 0.5, random });
    }
    await client.close();
  }

  /** Stops it: gracefully (SIGTERM: checkpoint, last appends) or as a crash (SIGKILL). */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    if (this.child.exitCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    return exited;
  }
}

describe('replicas sharing one buffer through LanceDB', () => {
  it('each takes the write-backs of the other, none lost or twice, and a killed one catches up', async () => {
    const uri = join(directory, 'shared');
    const settings = (name: string) => ({
      uri,
      runDirectory: join(directory, `run-${name}`),
      replicaId: name,
      pollMilliseconds: 100,
    });
    const [a, b] = await Promise.all([Replica.start(settings('a')), Replica.start(settings('b'))]);
    let replicaB = b;
    try {
      const offline = (await a.status()).buffer.size;
      await Promise.all([a.play(3, 1), replicaB.play(2, 2)]);
      // Both buffers end up holding the same transitions: offline, A's and B's write-backs.
      await vi.waitFor(
        async () => {
          const [sa, sb] = await Promise.all([a.status(), replicaB.status()]);
          expect(sa.sharedBuffer.pushPending + sb.sharedBuffer.pushPending).toBe(0);
          expect(sb.sharedBuffer.pulled.transitions).toBe(sa.buffer.written);
          expect(sa.sharedBuffer.pulled.transitions).toBe(sb.buffer.written);
          expect(sa.buffer.size).toBe(sb.buffer.size);
        },
        { timeout: 15_000, interval: 100 },
      );
      const [sa, sb] = await Promise.all([a.status(), replicaB.status()]);
      expect(sa.episodes.finished).toBe(3);
      expect(sb.episodes.finished).toBe(2);
      expect(sa.sharedBuffer.pushed).toEqual({ batches: 3, transitions: sa.buffer.written });
      expect(sb.sharedBuffer.pulled.batches).toBe(3);
      expect(sa.sharedBuffer.pulled.batches).toBe(2);
      expect(sa.buffer.size).toBeGreaterThan(offline);
      expect(await a.metrics()).toMatch(
        new RegExp(`dreamgym_shared_buffer_transitions_pulled_total ${sb.buffer.written}\\b`),
      );

      // B crashes after its write-backs reached the table, past its last checkpoint: its log
      // loses them on resume, the table does not. A plays on while B is down.
      await replicaB.stop('SIGKILL');
      await a.play(2, 3);
      await vi.waitFor(async () => expect((await a.status()).sharedBuffer.pushed.batches).toBe(5), {
        timeout: 10_000,
      });
      replicaB = await Replica.start({ ...settings('b'), resume: true });
      const caughtUp = await replicaB.status();
      const sizeA = (await a.status()).buffer.size;
      expect(caughtUp.buffer.size).toBe(sizeA);
      // Everything in the table: A's five batches and the two of B's earlier run.
      expect(caughtUp.sharedBuffer.pulled).toMatchObject({ batches: 7, writers: 2 });
      expect(caughtUp.sharedBuffer.writer).toMatch(/^b\./);
      expect(caughtUp.sharedBuffer.writer).not.toBe(sb.sharedBuffer.writer);

      // The resumed B writes again, and A takes that (its new writer id is new to A).
      await replicaB.play(1, 4);
      await vi.waitFor(
        async () => {
          const [sa2, sb2] = await Promise.all([a.status(), replicaB.status()]);
          expect(sa2.sharedBuffer.pulled.batches).toBe(3);
          expect(sa2.buffer.size).toBe(sb2.buffer.size);
        },
        { timeout: 10_000, interval: 100 },
      );

      // The table: one row per batch, each writer's sequence 1, 2, 3 ... with no gap or repeat.
      await Promise.all([a.stop('SIGTERM'), replicaB.stop('SIGTERM')]);
      const lancedb = await testLanceDb();
      const connection = await lancedb.connect(uri);
      const table = await connection.openTable('dreamgym_write_backs');
      const rows = await table.query().toArray();
      const byWriter = new Map<string, number[]>();
      for (const row of rows) {
        const list = byWriter.get(String(row.writer)) ?? [];
        list.push(Number(row.sequence));
        byWriter.set(String(row.writer), list);
      }
      expect([...byWriter.values()].map((each) => each.length).sort()).toEqual([1, 2, 5]);
      for (const sequences of byWriter.values()) {
        expect(sequences.sort((x, y) => x - y)).toEqual(sequences.map((_, index) => index + 1));
      }
      const ids = rows.flatMap((row) =>
        (JSON.parse(String(row.transitions)) as { id: string }[]).map((each) => each.id),
      );
      expect(new Set(ids).size).toBe(ids.length);
      table.close();
      connection.close();
    } finally {
      await Promise.all([a.stop('SIGKILL'), replicaB.stop('SIGKILL')]);
    }
  }, 60_000);
});

describe('SharedBuffer', () => {
  it('hands each batch of another writer over once, in order, across compactions', async () => {
    const lancedb = await testLanceDb();
    const uri = join(directory, 'compacted');
    const open = (replicaId: string) =>
      SharedBuffer.open(
        { uri, replicaId, pollMilliseconds: 20, compactEvery: 2 },
        { logger: silentLogger, lancedb },
      );
    const [x, y] = [await open('x'), await open('y')];
    const { transitions } = await corridorTransitions();
    const batches = [0, 1, 2, 3, 4, 5, 6].map((index) =>
      transitions.slice(index * 2, index * 2 + 2),
    );
    for (const batch of batches.slice(0, 5)) x.push(batch);
    await vi.waitFor(() => expect(x.stats().pushed.batches).toBe(5));
    const received: string[] = [];
    await y.start(async (pulled) => {
      received.push(...pulled.map((each) => each.id));
    });
    expect(received).toEqual(
      batches
        .slice(0, 5)
        .flat()
        .map((each) => each.id),
    );
    for (const batch of batches.slice(5)) x.push(batch);
    await vi.waitFor(() => expect(received).toHaveLength(14), { timeout: 5000 });
    expect(received).toEqual(batches.flat().map((each) => each.id));
    // The rows are readable once appended; the compaction after them may still be running.
    await vi.waitFor(() => expect(x.stats().compactions.done).toBeGreaterThanOrEqual(2), {
      timeout: 5000,
    });
    expect(y.stats()).toMatchObject({
      pulled: { batches: 7, transitions: 14, writers: 1 },
      errors: 0,
    });
    await Promise.all([x.close(), y.close()]);
  });
});

describe('SharedBuffer, joining a long run', () => {
  it('catches up one writer at a time in pages of 256 batches, in order, none lost', async () => {
    const lancedb = await testLanceDb();
    const uri = join(directory, 'long-run');
    await (
      await SharedBuffer.open({ uri, replicaId: 'x' }, { logger: silentLogger, lancedb })
    ).close();
    const { transitions } = await corridorTransitions();
    const rows = (writer: string, batches: number) =>
      Array.from({ length: batches }, (_, index) => ({
        writer,
        sequence: index + 1,
        count: 1,
        writtenAt: Date.now(),
        transitions: JSON.stringify([{ ...transitions[0]!, id: `${writer}#${index + 1}` }]),
      }));
    const connection = await lancedb.connect(uri);
    const table = await connection.openTable('dreamgym_write_backs');
    await table.add(rows('b.1.1', 300));
    await table.add(rows('a.1.1', 600));
    table.close();
    connection.close();
    const reader = await SharedBuffer.open(
      { uri, replicaId: 'y' },
      { logger: silentLogger, lancedb },
    );
    const calls: string[][] = [];
    await reader.start(async (pulled) => {
      calls.push(pulled.map((each) => each.id));
    });
    await reader.close();
    expect(calls.map((call) => call.length)).toEqual([256, 256, 88, 256, 44]);
    const expected = [
      ...rows('a.1.1', 600).map((row) => `a.1.1#${row.sequence}`),
      ...rows('b.1.1', 300).map((row) => `b.1.1#${row.sequence}`),
    ];
    expect(calls.flat()).toEqual(expected);
    expect(reader.stats()).toMatchObject({
      pulled: { batches: 900, transitions: 900, writers: 2 },
      errors: 0,
    });
  });
});

describe('SharedBuffer, a batch appended twice', () => {
  it('takes it once (an append that failed after committing is appended again)', async () => {
    const lancedb = await testLanceDb();
    const uri = join(directory, 'appended-twice');
    const writer = await SharedBuffer.open(
      { uri, replicaId: 'x' },
      { logger: silentLogger, lancedb },
    );
    await writer.close();
    const { transitions } = await corridorTransitions();
    const row = {
      writer: 'x.1.1',
      sequence: 1,
      count: 2,
      writtenAt: Date.now(),
      transitions: JSON.stringify(transitions.slice(0, 2)),
    };
    const connection = await lancedb.connect(uri);
    const table = await connection.openTable('dreamgym_write_backs');
    await table.add([row]);
    await table.add([row, { ...row, sequence: 2 }]);
    table.close();
    connection.close();
    const reader = await SharedBuffer.open(
      { uri, replicaId: 'y' },
      { logger: silentLogger, lancedb },
    );
    const received: string[] = [];
    await reader.start(async (pulled) => {
      received.push(...pulled.map((each) => each.id));
    });
    await reader.close();
    expect(received).toHaveLength(4);
    expect(reader.stats().pulled).toEqual({ batches: 2, transitions: 4, writers: 1 });
  });
});

describe('a shared buffer with workers', () => {
  it("hands the other replicas' batches to every worker's replica", async () => {
    const lancedb = await testLanceDb();
    const uri = join(directory, 'with-workers');
    const domain = await corridorDomain();
    const offline = domain.replayBuffer.size;
    const other = await SharedBuffer.open(
      { uri, replicaId: 'o' },
      { logger: silentLogger, lancedb },
    );
    // New transitions (another state each), as another replica would write back.
    const { transitions } = await corridorTransitions();
    const novel = transitions.slice(0, 6).map((each, index) => ({
      ...each,
      id: `other:${index}`,
      source: 'synthetic' as const,
      state: { ...each.state, text: `${each.state.text} (elsewhere ${index})` },
    }));
    // One batch before this replica starts (its catch-up), two after (its polls).
    other.push(novel.slice(0, 2));
    await vi.waitFor(() => expect(other.stats().pushed.batches).toBe(1));
    const served = await serveDreamGym({
      ...domain,
      runDirectory: join(directory, 'run-with-workers'),
      server: { port: 0 },
      workers: {
        count: 1,
        replicaModule: new URL('../src/corridor-replica.test-support.ts', import.meta.url).href,
      },
      sharedBuffer: { uri, replicaId: 'w', pollMilliseconds: 20, lancedb },
    });
    try {
      await expect(served.service.status()).resolves.toMatchObject({
        buffer: { size: offline + 2 },
      });
      for (const batch of [novel.slice(2, 4), novel.slice(4)]) other.push(batch);
      await vi.waitFor(
        async () => {
          const status = (await (await fetch(`${served.url}/dreamgym/status`)).json()) as {
            buffer: { size: number };
            workers: { workers: { bufferSize: number }[] };
          };
          expect(status.buffer.size).toBe(offline + 6);
          expect(status.workers.workers[0]!.bufferSize).toBe(offline + 6);
        },
        { timeout: 15_000, interval: 100 },
      );
    } finally {
      await other.close();
      await served.close();
    }
  });
});

describe('shared buffer errors', () => {
  it('says how to install LanceDB when it is missing', async () => {
    const error = await SharedBuffer.open(
      { uri: join(directory, 'x') },
      { logger: silentLogger, cwd: directory, flag: '--shared-buffer' },
    ).catch((caught: unknown) => caught);
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /--shared-buffer .*\/x needs the @lancedb\/lancedb package .*npm install @lancedb\/lancedb/,
    );
  });

  it('finds LanceDB in the working directory project', async () => {
    const shared = await SharedBuffer.open(
      { uri: join(directory, 'found') },
      { logger: silentLogger, cwd: LANCEDB_FOLDER },
    );
    expect(shared.stats()).toMatchObject({ table: 'dreamgym_write_backs', pushPending: 0 });
    await shared.close();
  });

  it('names the URI LanceDB cannot open, and the run folder is not created', async () => {
    const domain = await corridorDomain({ episodes: 4 });
    const runDirectory = join(directory, 'run-bad-uri');
    const error = await serveDreamGym({
      ...domain,
      runDirectory,
      server: { port: 0 },
      sharedBuffer: {
        uri: 'ftp://nowhere/buffer',
        lancedb: await testLanceDb(),
        flag: '--shared-buffer',
      },
    }).catch((caught: unknown) => caught);
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /--shared-buffer ftp:\/\/nowhere\/buffer \(table dreamgym_write_backs\): LanceDB cannot open it: .*ftp/,
    );
    expect(existsSync(runDirectory)).toBe(false);
  });

  it('refuses a table of another schema, naming its columns', async () => {
    const lancedb = await testLanceDb();
    const uri = join(directory, 'foreign');
    const connection = await lancedb.connect(uri);
    const created = await connection.createEmptyTable(
      'dreamgym_write_backs',
      lancedb.makeArrowTable([{ writer: '', payload: '' }]).schema,
      { mode: 'create', existOk: true },
    );
    created.close();
    connection.close();
    const error = await SharedBuffer.open({ uri }, { logger: silentLogger, lancedb }).catch(
      (caught: unknown) => caught,
    );
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /sharedBuffer\.uri .*foreign \(table dreamgym_write_backs\) is not a DreamGym shared-buffer table: its columns are \{writer: Utf8, payload: Utf8\}/,
    );
  });

  it('checks its options', async () => {
    const error = await SharedBuffer.open(
      { uri: join(directory, 'y'), pollMilliseconds: 0 },
      { logger: silentLogger, lancedb: await testLanceDb() },
    ).catch((caught: unknown) => caught);
    expect((error as ConfigError).field).toBe('sharedBuffer.pollMilliseconds');
  });
});
