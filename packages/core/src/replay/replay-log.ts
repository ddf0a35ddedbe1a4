/**
 * The replay buffer's append-only record log (`records.jsonl`): one JSON entry per line,
 * appended with core's `JsonlWriter` (one `write` per entry), so a crash can at worst leave
 * a truncated last line.
 * Reading skips such a line (it was never committed) and reports it.
 */
import { type FileHandle, open, truncate } from 'node:fs/promises';
import { z } from 'zod';
import { DatasetFormatError } from '../errors.js';
import { parseRecord } from '../mdp/jsonl.js';
import { type Transition, TransitionSchema } from '../mdp/schemas.js';

/**
 * One log entry: a transition added (its slot is its rank among `add` entries), a new
 * occurrence count of a stored one, or one evicted.
 */
export const ReplayLogEntrySchema = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('add'),
    transition: TransitionSchema,
    /** Times the transition occurred (exact duplicates counted on it); absent: 1. */
    count: z.number().int().positive().optional(),
    /** Ids of the duplicates counted on it (added again, they are the same occurrences). */
    ids: z.array(z.string().min(1)).optional(),
  }),
  /** The stored transition `id` has now occurred `count` times (its duplicates were added). */
  z.object({
    op: z.literal('count'),
    id: z.string().min(1),
    count: z.number().int().positive(),
    /** Ids of the duplicates counted by this entry. */
    ids: z.array(z.string().min(1)).optional(),
  }),
  z.object({ op: z.literal('evict'), id: z.string().min(1) }),
]);
/** One entry of `records.jsonl`. */
export type ReplayLogEntry = z.infer<typeof ReplayLogEntrySchema>;

/** Where a committed `add` entry lies in the log bytes kept by {@link readReplayLog}. */
export interface LoggedRecord {
  /** 1-based line of `records.jsonl`. */
  line: number;
  /** Index into {@link ReplayLogContents.chunks}. */
  chunk: number;
  /** Byte range of the line (no newline) within that chunk. */
  start: number;
  end: number;
}

/**
 * Receives the committed entries of the log in order. A transition passed to `add` has only
 * its indexed fields checked (see {@link hasIndexedShape}) and must not be kept: the buffer
 * takes what its index needs from it and parses the record again from `where`, validating it
 * in full against {@link TransitionSchema}, when it first serves it. A reload of a million
 * records then neither retains (nor makes the garbage collector trace) a million objects.
 */
export interface ReplayLogVisitor {
  /**
   * A transition stored, with the times it had occurred when it was written (1 or more) and
   * the ids of the duplicates counted on it.
   */
  add(transition: Transition, where: LoggedRecord, count: number, ids: readonly string[]): void;
  /** The stored transition `id` has now occurred `count` times, counting the duplicates `ids`. */
  count(id: string, count: number, line: number, ids: readonly string[]): void;
  evict(id: string, line: number): void;
}

/** What {@link readReplayLog} found. */
export interface ReplayLogContents {
  /** The committed bytes of the log, in chunks that each hold whole lines. */
  chunks: Buffer[];
  /** Bytes of committed (newline-terminated) entries; anything after is a torn write. */
  committedBytes: number;
  /** Bytes of the torn last line, 0 when the file ends with a newline. */
  tornBytes: number;
}

/**
 * Most bytes read per chunk of the log (a line running past it is carried into the next).
 * Large, because each allocation of outside-heap memory may trigger a full garbage collection.
 */
const CHUNK_BYTES = 2 ** 30;
const NEWLINE = 0x0a;
const NO_IDS: readonly string[] = [];

/**
 * Reads every committed entry of `file` (missing file: none) and hands it to `visitor`. A
 * committed line that is not JSON, or whose indexed fields are malformed, is corruption and
 * throws a {@link DatasetFormatError} with `file:line` (and field, from the zod schema). A
 * final line without its newline is a torn write from a crash: it is left out and measured
 * in `tornBytes`.
 *
 * @param options.chunks the array the kept chunks are appended to (default a new one): a
 * chunk is there before its lines are visited, so the visitor may read earlier records
 * (an `evict` looks its record up) with {@link loggedTransition}.
 * @param options.chunkBytes most bytes read at once (small in tests, to cross chunks).
 */
export async function readReplayLog(
  file: string,
  visitor: ReplayLogVisitor,
  options: { chunks?: Buffer[]; chunkBytes?: number } = {},
): Promise<ReplayLogContents> {
  const chunks = options.chunks ?? [];
  const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch {
    return { chunks, committedBytes: 0, tornBytes: 0 };
  }
  let carry: Buffer = Buffer.alloc(0);
  let position = 0;
  let line = 0;
  try {
    const { size } = await handle.stat();
    for (;;) {
      // Sized to what is left (at least 64 KiB, should the file grow meanwhile).
      const want = Math.min(chunkBytes, Math.max(2 ** 16, size - position));
      const chunk = Buffer.allocUnsafe(carry.length + want);
      carry.copy(chunk, 0);
      const { bytesRead } = await handle.read(chunk, carry.length, want, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const filled = chunk.subarray(0, carry.length + bytesRead);
      const chunkIndex = chunks.length;
      chunks.push(filled);
      let start = 0;
      let end = filled.indexOf(NEWLINE, start);
      while (end !== -1) {
        line += 1;
        const content = filled.toString('utf8', start, end);
        if (content.trim() !== '') {
          const entry = parseLine(content, file, line);
          if (entry.op === 'add')
            visitor.add(
              entry.transition,
              { line, chunk: chunkIndex, start, end },
              entry.count ?? 1,
              entry.ids ?? NO_IDS,
            );
          else if (entry.op === 'count')
            visitor.count(entry.id, entry.count, line, entry.ids ?? NO_IDS);
          else visitor.evict(entry.id, line);
        }
        start = end + 1;
        end = filled.indexOf(NEWLINE, start);
      }
      // Only chunks holding a committed line are kept (a long line may span several reads).
      if (start > 0) chunks[chunkIndex] = filled.subarray(0, start);
      else chunks.pop();
      carry = filled.subarray(start);
    }
  } finally {
    await handle.close();
  }
  return { chunks, committedBytes: position - carry.length, tornBytes: carry.length };
}

/**
 * The transition of a committed `add` entry, parsed again from the log bytes (its indexed
 * fields were checked when the log was read; the rest is not validated here).
 */
export function loggedTransition(chunks: readonly Buffer[], where: LoggedRecord): Transition {
  const entry = JSON.parse(chunks[where.chunk]!.toString('utf8', where.start, where.end)) as {
    transition: Transition;
  };
  return entry.transition;
}

const SOURCES = new Set(['offline', 'synthetic', 'real']);

const isNonEmptyString = (value: unknown): value is string =>
  typeof value === 'string' && value !== '';

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

const isIdList = (value: unknown): boolean =>
  value === undefined || (Array.isArray(value) && value.every(isNonEmptyString));

/**
 * True when `value` is a log entry whose fields used for indexing (ids, domain, task,
 * source, trajectory, state / action / next-state texts, instruction, counts) have the types the
 * schema requires. The rest is validated before the record is served.
 */
export function hasIndexedShape(value: unknown): value is ReplayLogEntry {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as {
    op?: unknown;
    id?: unknown;
    transition?: unknown;
    count?: unknown;
    ids?: unknown;
  };
  if (entry.op === 'evict') return isNonEmptyString(entry.id);
  if (entry.op === 'count')
    return isNonEmptyString(entry.id) && isCount(entry.count) && isIdList(entry.ids);
  if (entry.op !== 'add' || typeof entry.transition !== 'object' || entry.transition === null)
    return false;
  if (entry.count !== undefined && !isCount(entry.count)) return false;
  if (!isIdList(entry.ids)) return false;
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

function parseLine(content: string, file: string, line: number): ReplayLogEntry {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (error) {
    throw new DatasetFormatError(
      `invalid JSON in a committed replay-buffer record (${(error as Error).message}). The record log is corrupt; restore it from a backup or remove the line.`,
      { file, line, cause: error },
    );
  }
  if (hasIndexedShape(value)) return value;
  return parseRecord(ReplayLogEntrySchema, value, { file, line });
}

/** Cuts a torn last line off the log so that the next append starts on a fresh line. */
export async function dropTornTail(file: string, committedBytes: number): Promise<void> {
  await truncate(file, committedBytes);
}
