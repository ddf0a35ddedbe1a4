/**
 * The proxy's records: one JSON line per model call (`calls.jsonl` in the proxy's folder),
 * appended before the call's answer is returned to the agent, so a proxy killed at any point
 * has lost no call it answered. A line cut short by the kill (the only one that can be) is
 * skipped on reading and overwritten on the next start; every other line is validated.
 */
import {
  closeSync,
  createReadStream,
  existsSync,
  fdatasyncSync,
  openSync,
  writeSync,
} from 'node:fs';
import { mkdir, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { ConfigError } from '@dreamgym/core';
import { z } from 'zod';
import type { ModelCall } from '../capture.js';

/** One recorded model call (a line of `calls.jsonl`). */
export const ProxyRecordSchema = z.object({
  /** 1, 2, 3 ... over the life of the file (a restarted proxy goes on counting). */
  seq: z.number().int().positive(),
  /** ISO time the answer was recorded. */
  at: z.string(),
  /** The episode the call was attributed to; null outside any. */
  episodeId: z.string().nullable(),
  /** How the agent asked: streamed or not (the record is the same either way). */
  stream: z.boolean(),
  model: z.string(),
  messages: z.array(z.unknown()),
  tools: z.array(z.unknown()),
  content: z.string().nullable(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })),
  finishReason: z.string(),
  promptTokenIds: z.array(z.number().int()),
  completionTokenIds: z.array(z.number().int()),
  logprobs: z.array(z.number()).optional(),
  /** Milliseconds the server took (from sending the request to the answer's end). */
  milliseconds: z.number(),
  /** Milliseconds the proxy added (parsing, rewriting, recording). */
  overheadMilliseconds: z.number(),
});
export type ProxyRecord = z.infer<typeof ProxyRecordSchema>;

/** A record as a {@link ModelCall} (what `AgentTrainer` trains on). */
export function recordCall(record: ProxyRecord): ModelCall {
  return {
    episodeId: record.episodeId ?? undefined,
    model: record.model,
    messages: record.messages,
    tools: record.tools,
    content: record.content,
    toolCalls: record.toolCalls,
    finishReason: record.finishReason,
    promptTokenIds: record.promptTokenIds,
    completionTokenIds: record.completionTokenIds,
    ...(record.logprobs ? { logprobs: record.logprobs } : {}),
    milliseconds: record.milliseconds,
    overheadMilliseconds: record.overheadMilliseconds,
  };
}

/** Reads the complete records of `file` (none when it does not exist); `bytes` is where they end. */
export async function readProxyRecords(
  file: string,
): Promise<{ records: ProxyRecord[]; bytes: number }> {
  const records: ProxyRecord[] = [];
  if (!existsSync(file)) return { records, bytes: 0 };
  let bytes = 0;
  let line = 0;
  let pending: { text: string; line: number } | undefined;
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const text of lines) {
    line += 1;
    if (pending) throw invalidLine(file, pending.line, 'not JSON');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // Only the last line may be cut short (a kill while it was written); anywhere else the file is damaged.
      pending = { text, line };
      continue;
    }
    const parsed = ProxyRecordSchema.safeParse(value);
    if (!parsed.success)
      throw invalidLine(file, line, parsed.error.issues[0]?.message ?? 'invalid');
    records.push(parsed.data);
    bytes += Buffer.byteLength(text) + 1;
  }
  return { records, bytes };
}

function invalidLine(file: string, line: number, why: string): ConfigError {
  return new ConfigError(
    `${file}:${line} is not a proxy record (${why}); the file was written by something else or damaged. Point the proxy at another folder.`,
    { field: 'records' },
  );
}

/**
 * Appends records; `append` returns once its line is written (and synced, when asked). The
 * write is a synchronous call on purpose: a line reaches the OS's page cache in microseconds,
 * where a write through libuv's thread pool waited tens of milliseconds for a thread on a
 * loaded machine, and every call's answer waits for its record.
 */
export class ProxyRecordLog {
  private constructor(
    readonly file: string,
    private readonly descriptor: number,
    private nextSeq: number,
    private readonly sync: boolean,
  ) {}

  /**
   * Opens `file` for appending after its last complete record (a torn last line is cut off).
   * `sync`: fsync each record (survives a machine crash, not only a killed proxy).
   */
  static async open(file: string, options: { sync?: boolean } = {}): Promise<ProxyRecordLog> {
    await mkdir(dirname(file), { recursive: true });
    const { records, bytes } = await readProxyRecords(file);
    if (existsSync(file)) await truncate(file, bytes);
    const descriptor = openSync(file, 'a');
    return new ProxyRecordLog(
      file,
      descriptor,
      (records.at(-1)?.seq ?? 0) + 1,
      options.sync ?? false,
    );
  }

  /** The seq the next record gets (the records so far, plus one). */
  get next(): number {
    return this.nextSeq;
  }

  /** Writes one record; returns once it is in the file. */
  append(record: Omit<ProxyRecord, 'seq' | 'at'>): ProxyRecord {
    const full: ProxyRecord = { seq: this.nextSeq++, at: new Date().toISOString(), ...record };
    const line = Buffer.from(`${JSON.stringify(full)}\n`);
    // One line, written whole (O_APPEND; a short write is resumed where it stopped).
    for (let written = 0; written < line.length; ) {
      written += writeSync(this.descriptor, line, written);
    }
    if (this.sync) fdatasyncSync(this.descriptor);
    return full;
  }

  close(): void {
    closeSync(this.descriptor);
  }
}
