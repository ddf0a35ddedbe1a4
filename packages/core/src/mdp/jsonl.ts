/**
 * Streaming JSONL: one JSON record per line, validated line by line, with errors that
 * name the file, the 1-based line and the failing field.
 */
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { z } from 'zod';
import { DatasetFormatError, DatasetNotFoundError } from '../errors.js';
import { replaceFileAtomic } from '../files/atomic-write.js';

/** A parsed JSON value with the line it came from. */
export interface JsonlLine {
  /** 1-based line number in the file. */
  line: number;
  value: unknown;
}

/** Formats a zod issue path as a dotted field name (`steps.3.reward`). */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  return path.map((key) => String(key)).join('.');
}

/**
 * Validates one record against `schema`, throwing a {@link DatasetFormatError} that names
 * the file, line and first failing field. Loaders use it for records of any format.
 */
export function parseRecord<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: { file: string; line?: number; fieldPrefix?: string },
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = formatFieldPath([...(where.fieldPrefix ? [where.fieldPrefix] : []), ...issue.path]);
  const more = result.error.issues.length > 1 ? ` (+${result.error.issues.length - 1} more)` : '';
  throw new DatasetFormatError(`${issue.message}${more}`, {
    file: where.file,
    ...(where.line === undefined ? {} : { line: where.line }),
    ...(field ? { field } : {}),
    cause: result.error,
  });
}

async function assertFileExists(file: string): Promise<void> {
  try {
    const info = await stat(file);
    if (!info.isFile()) {
      throw new DatasetNotFoundError(`${file} is not a file.`, { path: file });
    }
  } catch (error) {
    if (DatasetNotFoundError.isInstance(error)) throw error;
    throw new DatasetNotFoundError(
      `Dataset file ${file} does not exist. Check the path, or the --data directory / DREAMGYM_DATA_DIR.`,
      { path: file, cause: error },
    );
  }
}

/**
 * Reads a JSONL file line by line without loading it whole. Blank lines are skipped.
 * Throws a {@link DatasetFormatError} with `file:line` on a line that is not valid JSON.
 */
export async function* readJsonlLines(file: string): AsyncGenerator<JsonlLine> {
  await assertFileExists(file);
  const lines = createInterface({
    input: createReadStream(file, { encoding: 'utf8' }),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let line = 0;
  try {
    for await (const text of lines) {
      line += 1;
      if (text.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        throw new DatasetFormatError(
          `invalid JSON (${(error as Error).message}). Each line must hold one JSON record.`,
          { file, line, cause: error },
        );
      }
      yield { line, value };
    }
  } finally {
    lines.close();
  }
}

/**
 * Reads and validates a JSONL file record by record.
 *
 * @example
 * for await (const trajectory of readJsonl('runs/rollouts.jsonl', TrajectorySchema)) { ... }
 */
export async function* readJsonl<S extends z.ZodType>(
  file: string,
  schema: S,
): AsyncGenerator<z.output<S>> {
  for await (const { line, value } of readJsonlLines(file)) {
    yield parseRecord(schema, value, { file, line });
  }
}

/** Where one line written by a {@link JsonlWriter} lies in its file, in bytes. */
export interface JsonlLineSpan {
  /** Offset of the line's first byte. */
  start: number;
  /** Offset just past the line's last byte (its newline excluded). */
  end: number;
}

/**
 * Appends validated records to a JSONL file, one `write` per call, so a crash can at worst
 * leave a truncated last line (never an interleaved one).
 */
export class JsonlWriter<S extends z.ZodType> {
  private handle: FileHandle | undefined;
  private count = 0;

  private constructor(
    readonly file: string,
    private readonly schema: S,
    handle: FileHandle,
    private offset: number,
  ) {
    this.handle = handle;
  }

  /** Opens `file` for appending (or truncating with `append: false`), creating its directory. */
  static async open<S extends z.ZodType>(
    file: string,
    schema: S,
    options: { append?: boolean } = {},
  ): Promise<JsonlWriter<S>> {
    await mkdir(dirname(file), { recursive: true });
    const handle = await open(file, options.append === false ? 'w' : 'a');
    const { size } = await handle.stat();
    return new JsonlWriter(file, schema, handle, size);
  }

  /** Number of records written by this writer. */
  get written(): number {
    return this.count;
  }

  /** Size of the file in bytes after this writer's writes (where the next line starts). */
  get bytes(): number {
    return this.offset;
  }

  /** Validates and appends one record; resolves to where its line lies in the file. */
  async write(record: z.input<S>): Promise<JsonlLineSpan> {
    const [span] = await this.writeAll([record]);
    return span!;
  }

  /**
   * Validates every record, then appends them all in one write: nothing is written when one
   * is invalid. A write interrupted by a crash leaves a torn last line, which readers of an
   * append-only log drop. Resolves to where each record's line lies in the file.
   */
  async writeAll(records: readonly z.input<S>[]): Promise<JsonlLineSpan[]> {
    if (!this.handle) throw new Error(`JsonlWriter for ${this.file} is closed.`);
    if (records.length === 0) return [];
    const spans: JsonlLineSpan[] = [];
    let offset = this.offset;
    const lines = records.map((record, position) => {
      const line = JSON.stringify(
        parseRecord(this.schema, record, { file: this.file, line: this.count + position + 1 }),
      );
      const end = offset + Buffer.byteLength(line);
      spans.push({ start: offset, end });
      offset = end + 1;
      return `${line}\n`;
    });
    await this.handle.write(lines.join(''));
    this.count += records.length;
    this.offset = offset;
    return spans;
  }

  /** Forces written records to disk. */
  async sync(): Promise<void> {
    await this.handle?.sync();
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }
}

/**
 * Writes a whole JSONL file atomically: records go to a temporary file that is renamed
 * over `file` only when every record has been validated and written.
 */
export async function writeJsonl<S extends z.ZodType>(
  file: string,
  schema: S,
  records: Iterable<z.input<S>> | AsyncIterable<z.input<S>>,
): Promise<number> {
  return replaceJsonl(file, schema, async (writer) => {
    for await (const record of records) await writer.write(record);
    return writer.written;
  });
}

/**
 * Replaces `file` atomically with what `write` writes: a temporary file, synced and renamed
 * over `file` once `write` resolves, removed when it throws. Resolves to `write`'s result.
 */
export async function replaceJsonl<S extends z.ZodType, T>(
  file: string,
  schema: S,
  write: (writer: JsonlWriter<S>) => Promise<T>,
): Promise<T> {
  return replaceFileAtomic(file, async (temporary) => {
    const writer = await JsonlWriter.open(temporary, schema, { append: false });
    try {
      const result = await write(writer);
      await writer.sync();
      return result;
    } finally {
      await writer.close();
    }
  });
}
