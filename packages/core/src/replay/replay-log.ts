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

/** Where a committed `add` entry lies in the log: its line and its bytes (newline excluded). */
export interface LoggedRecord {
  /** 1-based line of `records.jsonl`. */
  line: number;
  /** Byte offsets of the line in the file. */
  start: number;
  end: number;
}

/**
 * Bytes of the record log held in memory: chunks of whole lines, each with the file offset
 * of its first byte. Records reloaded from the log stay here as bytes until first served.
 */
export class LogBytes {
  private readonly chunks: Buffer[] = [];
  private readonly starts: number[] = [];

  /** Keeps `chunk`, which starts at file offset `start` (after every chunk kept so far). */
  add(chunk: Buffer, start: number): void {
    this.chunks.push(chunk);
    this.starts.push(start);
  }

  /** Cuts the last chunk to its first `length` bytes (0: drops it). */
  trimLast(length: number): void {
    const last = this.chunks.length - 1;
    if (length > 0) this.chunks[last] = this.chunks[last]!.subarray(0, length);
    else {
      this.chunks.pop();
      this.starts.pop();
    }
  }

  /** The bytes [start, end) of the file, or undefined where they are not held. */
  slice(start: number, end: number): Buffer | undefined {
    const { chunks, starts } = this;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle]! <= start) low = middle;
      else high = middle - 1;
    }
    const chunk = chunks[low];
    const base = starts[low]!;
    if (!chunk || start < base || end > base + chunk.length) return undefined;
    return chunk.subarray(start - base, end - base);
  }

  /** Whether the bytes [start, end) are held. */
  holds(start: number, end: number): boolean {
    return this.slice(start, end) !== undefined;
  }
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
  /** Bytes of committed (newline-terminated) entries; anything after is a torn write. */
  committedBytes: number;
  /** Lines of the committed entries (the last one's number). */
  committedLines: number;
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
 * @param options.bytes where the read chunks are kept: a chunk is there before its lines are
 * visited, so the visitor may read earlier records (an `evict` looks its record up) with
 * {@link loggedTransition}.
 * @param options.from where to start: a byte offset at the start of a line and the number of
 * lines before it (default the file's start); the bytes before it are read and kept
 * but not parsed (their entries are known from a snapshot).
 * @param options.chunkBytes most bytes read at once (small in tests, to cross chunks).
 */
export async function readReplayLog(
  file: string,
  visitor: ReplayLogVisitor,
  options: { bytes: LogBytes; from?: { byte: number; line: number }; chunkBytes?: number },
): Promise<ReplayLogContents> {
  const { bytes } = options;
  const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  const from = options.from ?? { byte: 0, line: 0 };
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch {
    return { committedBytes: 0, committedLines: 0, tornBytes: 0 };
  }
  let carry: Buffer = Buffer.alloc(0);
  let position = 0;
  let line = from.line;
  try {
    const { size } = await handle.stat();
    for (;;) {
      // Sized to what is left (at least 64 KiB, should the file grow meanwhile).
      const want = Math.min(chunkBytes, Math.max(2 ** 16, size - position));
      const chunk = Buffer.allocUnsafe(carry.length + want);
      carry.copy(chunk, 0);
      const { bytesRead } = await handle.read(chunk, carry.length, want, position);
      if (bytesRead === 0) break;
      const chunkStart = position - carry.length;
      position += bytesRead;
      const filled = chunk.subarray(0, carry.length + bytesRead);
      bytes.add(filled, chunkStart);
      // Lines before `from` are known (from a snapshot): kept, not parsed.
      let start =
        from.byte - chunkStart >= filled.length
          ? filled.lastIndexOf(NEWLINE) + 1
          : Math.max(0, from.byte - chunkStart);
      let end = filled.indexOf(NEWLINE, start);
      while (end !== -1) {
        line += 1;
        const content = filled.toString('utf8', start, end);
        if (content.trim() !== '') {
          const entry = parseLine(content, file, line);
          if (entry.op === 'add')
            visitor.add(
              entry.transition,
              { line, start: chunkStart + start, end: chunkStart + end },
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
      // Only whole lines are kept (a long line may span several reads).
      bytes.trimLast(start);
      carry = filled.subarray(start);
    }
  } finally {
    await handle.close();
  }
  return { committedBytes: position - carry.length, committedLines: line, tornBytes: carry.length };
}

/**
 * The transition of a committed `add` entry, parsed again from the log bytes (its indexed
 * fields were checked when the log was read; the rest is not validated here).
 */
export function loggedTransition(bytes: LogBytes, where: LoggedRecord): Transition {
  const line = bytes.slice(where.start, where.end);
  if (!line) throw new RangeError(`line ${where.line} of the record log is not held in memory`);
  const entry = JSON.parse(line.toString('utf8')) as { transition: Transition };
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

/** The error for a committed log line that is not JSON. */
export function invalidJsonError(cause: unknown, file: string, line: number): DatasetFormatError {
  return new DatasetFormatError(
    `invalid JSON in a committed replay-buffer record (${(cause as Error).message}). The record log is corrupt; restore it from a backup or remove the line.`,
    { file, line, cause },
  );
}

function parseLine(content: string, file: string, line: number): ReplayLogEntry {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (error) {
    throw invalidJsonError(error, file, line);
  }
  if (hasIndexedShape(value)) return value;
  return parseRecord(ReplayLogEntrySchema, value, { file, line });
}

/** Cuts a torn last line off the log so that the next append starts on a fresh line. */
export async function dropTornTail(file: string, committedBytes: number): Promise<void> {
  await truncate(file, committedBytes);
}
