import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DatasetFormatError } from '../errors.js';
import type { Transition } from '../mdp/schemas.js';
import { LogBytes, type LoggedRecord, loggedTransition, readReplayLog } from './replay-log.js';

const directories: string[] = [];
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true });
});

async function logFile(text: string): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-replay-log-'));
  directories.push(directory);
  const file = join(directory, 'records.jsonl');
  await writeFile(file, text);
  return file;
}

function transition(index: number): Transition {
  return {
    id: `t${index}`,
    domain: 'corridor',
    taskId: 'task',
    instruction: 'reach the end',
    trajectoryId: `trajectory-${index}`,
    stepIndex: index,
    state: { text: `room ${index} ${'x'.repeat(index * 7)}` },
    action: 'go east',
    nextState: { text: `room ${index + 1}` },
    reward: 0,
    done: false,
    source: 'synthetic',
  };
}

async function read(file: string, chunkBytes?: number, from?: { byte: number; line: number }) {
  const added: {
    transition: Transition;
    where: LoggedRecord;
    count: number;
    ids: readonly string[];
  }[] = [];
  const counted: { id: string; count: number; line: number; ids: readonly string[] }[] = [];
  const evicted: { id: string; line: number }[] = [];
  const bytes = new LogBytes();
  const contents = await readReplayLog(
    file,
    {
      add: (value, where, count, ids) => added.push({ transition: value, where, count, ids }),
      count: (id, count, line, ids) => counted.push({ id, count, line, ids }),
      evict: (id, line) => {
        // Earlier records can be read back while reading (the buffer finds an evicted one so).
        const record = added.find((entry) => entry.transition.id === id)!;
        expect(loggedTransition(bytes, record.where).id).toBe(id);
        evicted.push({ id, line });
      },
    },
    { bytes, chunkBytes, ...(from ? { from } : {}) },
  );
  return { contents, bytes, added, counted, evicted };
}

describe('readReplayLog', () => {
  it('finds every committed line across read chunks, parses it again from its bytes, and measures a torn tail', async () => {
    const entries = [0, 1, 2, 3, 4].map((index) =>
      JSON.stringify({ op: 'add', transition: transition(index) }),
    );
    const lines = [entries[0], entries[1], '', JSON.stringify({ op: 'evict', id: 't0' })];
    lines.push(...entries.slice(2));
    const text = `${lines.join('\n')}\n`;
    const file = await logFile(text);
    await appendFile(file, '{"op":"add","transition":{"id":"t9"');
    // 61-byte reads: every line spans several, so each is carried into a later chunk.
    for (const chunkBytes of [61, undefined]) {
      const { contents, bytes, added, evicted } = await read(file, chunkBytes);
      expect(added.map((entry) => entry.transition.id)).toEqual(['t0', 't1', 't2', 't3', 't4']);
      expect(added.map((entry) => entry.where.line)).toEqual([1, 2, 5, 6, 7]);
      expect(evicted).toEqual([{ id: 't0', line: 4 }]);
      for (const [index, { where }] of added.entries()) {
        expect(loggedTransition(bytes, where)).toEqual(transition(index));
      }
      expect(contents.committedBytes).toBe(Buffer.byteLength(text));
      expect(contents.committedLines).toBe(7);
      expect(contents.tornBytes).toBe('{"op":"add","transition":{"id":"t9"'.length);
    }
  });

  it('from a line start, keeps the bytes before it unparsed and numbers the later lines after it', async () => {
    const entries = [0, 1, 2, 3].map((index) =>
      JSON.stringify({ op: 'add', transition: transition(index) }),
    );
    const file = await logFile(`${entries.join('\n')}\n`);
    const from = { byte: Buffer.byteLength(`${entries[0]}\n${entries[1]}\n`), line: 2 };
    for (const chunkBytes of [61, 1000, undefined]) {
      const { contents, bytes, added } = await read(file, chunkBytes, from);
      expect(added.map((entry) => [entry.transition.id, entry.where.line])).toEqual([
        ['t2', 3],
        ['t3', 4],
      ]);
      expect(added[0]!.where.start).toBe(from.byte);
      expect(contents.committedLines).toBe(4);
      // The skipped lines are held: a snapshot's records are served from them.
      const first = { line: 1, start: 0, end: Buffer.byteLength(entries[0]!) };
      expect(loggedTransition(bytes, first)).toEqual(transition(0));
    }
  });

  it('reads occurrence counts from add entries and count entries', async () => {
    const file = await logFile(
      [
        JSON.stringify({ op: 'add', transition: transition(0) }),
        JSON.stringify({ op: 'add', transition: transition(1), count: 3, ids: ['u1', 'u2'] }),
        JSON.stringify({ op: 'count', id: 't0', count: 2, ids: ['u3'] }),
        '',
      ].join('\n'),
    );
    const { added, counted } = await read(file);
    expect(added.map((entry) => [entry.count, entry.ids])).toEqual([
      [1, []],
      [3, ['u1', 'u2']],
    ]);
    expect(counted).toEqual([{ id: 't0', count: 2, line: 3, ids: ['u3'] }]);
    const zero = await logFile(`${JSON.stringify({ op: 'count', id: 't0', count: 0 })}\n`);
    await expect(read(zero)).rejects.toThrow(/records\.jsonl:1 \(field `count`\)/);
  });

  it('reports a committed line that is not JSON, or lacks an indexed field, with file:line', async () => {
    const good = JSON.stringify({ op: 'add', transition: transition(0) });
    const notJson = await logFile(`${good}\n{"op":\n`);
    await expect(read(notJson, 61)).rejects.toThrow(/records\.jsonl:2: invalid JSON/);
    const { domain: _, ...withoutDomain } = transition(1);
    const noDomain = await logFile(
      `${good}\n${JSON.stringify({ op: 'add', transition: withoutDomain })}\n`,
    );
    const error = await read(noDomain).catch((caught: unknown) => caught);
    expect(DatasetFormatError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/records\.jsonl:2 \(field `transition\.domain`\)/);
  });

  it('reads a missing file as empty', async () => {
    const { contents, added } = await read(join(tmpdir(), 'dreamgym-no-such-log.jsonl'));
    expect(added).toEqual([]);
    expect(contents).toEqual({ committedBytes: 0, committedLines: 0, tornBytes: 0 });
  });
});
