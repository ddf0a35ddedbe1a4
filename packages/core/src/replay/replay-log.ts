/**
 * The replay buffer's append-only record log (`records.jsonl`): one JSON entry per line,
 * appended with core's `JsonlWriter` (one `write` per entry), so a crash can at worst leave
 * a truncated last line.
 * Reading skips such a line (it was never committed) and reports it.
 */
import { createReadStream } from 'node:fs';
import { stat, truncate } from 'node:fs/promises';
import { z } from 'zod';
import { DatasetFormatError } from '../errors.js';
import { parseRecord } from '../mdp/jsonl.js';
import { TransitionSchema } from '../mdp/schemas.js';

/** One log entry: a transition added (its slot is its rank among `add` entries), or one evicted. */
export const ReplayLogEntrySchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('add'), transition: TransitionSchema }),
  z.object({ op: z.literal('evict'), id: z.string().min(1) }),
]);
/** One entry of `records.jsonl`. */
export type ReplayLogEntry = z.infer<typeof ReplayLogEntrySchema>;

/**
 * A log entry as read back, with its 1-based line. Only the fields the buffer indexes are
 * checked on reading (see {@link hasIndexedShape}); the buffer validates a transition fully
 * against {@link TransitionSchema} before it first serves it, so a reload of a million
 * records does not pay for (nor allocate) a million schema copies.
 */
export type ReadReplayLogEntry = ReplayLogEntry & { line: number };

/** What {@link readReplayLog} found. */
export interface ReplayLogContents {
  entries: ReadReplayLogEntry[];
  /** Bytes of committed (newline-terminated) entries; anything after is a torn write. */
  committedBytes: number;
  /** Bytes of the torn last line, 0 when the file ends with a newline. */
  tornBytes: number;
}

/**
 * Reads every committed entry of `file` (missing file: none). A committed line that is not
 * JSON, or whose indexed fields are malformed, is corruption and throws a
 * {@link DatasetFormatError} with `file:line` (and field, from the zod schema). A final line without its newline
 * is a torn write from a crash: it is left out and measured in `tornBytes`.
 */
export async function readReplayLog(file: string): Promise<ReplayLogContents> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch {
    return { entries: [], committedBytes: 0, tornBytes: 0 };
  }
  const entries: ReadReplayLogEntry[] = [];
  let pending = '';
  let line = 0;
  let committedBytes = 0;
  const stream = createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 });
  for await (const chunk of stream as AsyncIterable<string>) {
    const text = pending + chunk;
    let start = 0;
    let end = text.indexOf('\n', start);
    while (end !== -1) {
      line += 1;
      const content = text.slice(start, end);
      committedBytes += Buffer.byteLength(content, 'utf8') + 1;
      if (content.trim() !== '') entries.push(parseLine(content, file, line));
      start = end + 1;
      end = text.indexOf('\n', start);
    }
    pending = text.slice(start);
  }
  return { entries, committedBytes, tornBytes: size - committedBytes };
}

const SOURCES = new Set(['offline', 'synthetic', 'real']);

const isNonEmptyString = (value: unknown): value is string =>
  typeof value === 'string' && value !== '';

/**
 * True when `value` is a log entry whose fields used for indexing (ids, domain, task,
 * source, trajectory, state / action / next-state texts, instruction) have the types the
 * schema requires. The rest is validated before the record is served.
 */
export function hasIndexedShape(value: unknown): value is ReplayLogEntry {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as { op?: unknown; id?: unknown; transition?: unknown };
  if (entry.op === 'evict') return isNonEmptyString(entry.id);
  if (entry.op !== 'add' || typeof entry.transition !== 'object' || entry.transition === null)
    return false;
  const t = entry.transition as Record<string, unknown>;
  const state = t.state as { text?: unknown } | null | undefined;
  const nextState = t.nextState as { text?: unknown } | null | undefined;
  return (
    isNonEmptyString(t.id) &&
    isNonEmptyString(t.domain) &&
    isNonEmptyString(t.taskId) &&
    typeof t.instruction === 'string' &&
    typeof t.action === 'string' &&
    (t.trajectoryId === undefined || typeof t.trajectoryId === 'string') &&
    SOURCES.has(t.source as string) &&
    typeof state?.text === 'string' &&
    typeof nextState?.text === 'string'
  );
}

function parseLine(content: string, file: string, line: number): ReadReplayLogEntry {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (error) {
    throw new DatasetFormatError(
      `invalid JSON in a committed replay-buffer record (${(error as Error).message}). The record log is corrupt; restore it from a backup or remove the line.`,
      { file, line, cause: error },
    );
  }
  if (hasIndexedShape(value)) return Object.assign(value, { line });
  return Object.assign(parseRecord(ReplayLogEntrySchema, value, { file, line }), { line });
}

/** Cuts a torn last line off the log so that the next append starts on a fresh line. */
export async function dropTornTail(file: string, committedBytes: number): Promise<void> {
  await truncate(file, committedBytes);
}
