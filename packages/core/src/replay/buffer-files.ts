/**
 * The replay buffer's files and manifest (a directory, one writer at a time):
 * - `records.jsonl`  append-only log: `{op:'add', transition, count?}` / `{op:'count', id,
 *                    count}` / `{op:'evict', id}`, one write per entry; committed as soon
 *                    as `add` resolves (see `replay-log.ts`).
 * - `vectors.f32`    phi vectors, float32 row-major, one row per distinct phi input.
 * - `rows.i32`       the row of every record, int32 in slot (log) order.
 * - `index.faiss`    the faiss index over the rows of `vectors.f32`.
 * - `slots.bin`      snapshot of what the slot table derives from the log up to the last
 *                    flush (see `slot-snapshot.ts`); replaced atomically.
 * - `manifest.json`  embedder id, dimension, index settings and measured recall, counts;
 *                    replaced atomically.
 * - `buffer.lock`    pid of the writing process.
 * Vectors, rows, index and slot snapshot are written by `flush`; records added after the last
 * flush (e.g. before a crash) are parsed and embedded again on open, everything flushed is
 * reloaded as it is.
 */
import { type FileHandle, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../files/atomic-write.js';
import { RecallMeasurementSchema } from './index-tuning.js';
import { DEFAULT_PHI_WEIGHTS } from './phi.js';
import type { VectorStore } from './vector-store.js';

export const FILES = {
  records: 'records.jsonl',
  vectors: 'vectors.f32',
  rows: 'rows.i32',
  index: 'index.faiss',
  slots: 'slots.bin',
  manifest: 'manifest.json',
  lock: 'buffer.lock',
} as const;

/** Path of one of the buffer's files. */
export function bufferPath(directory: string, name: keyof typeof FILES): string {
  return join(directory, FILES[name]);
}

export const PhiWeightsSchema = z.object({
  state: z.number().nonnegative().finite().default(DEFAULT_PHI_WEIGHTS.state),
  action: z.number().nonnegative().finite().default(DEFAULT_PHI_WEIGHTS.action),
  instruction: z.number().nonnegative().finite().default(DEFAULT_PHI_WEIGHTS.instruction),
});

/** The index settings a manifest records (every parameter resolved). */
export const StoredIndexSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('flat') }),
  z.object({
    type: z.literal('hnsw'),
    m: z.number().int().min(2),
    efConstruction: z.number().int().positive(),
    efSearch: z.number().int().positive(),
    targetRecall: z.number().gt(0).max(1).optional(),
    /** Whether the graph degree is the buffer's to choose (no `m` was given). */
    autoDegree: z.boolean().optional(),
  }),
]);
export type StoredIndex = z.infer<typeof StoredIndexSchema>;

export const ManifestSchema = z.object({
  format: z.literal('dreamgym-replay-buffer'),
  /** 1: one vector row per record (no `rows.i32`); 2: one per distinct phi input. */
  version: z.union([z.literal(1), z.literal(2)]),
  embedderId: z.string().min(1),
  dimension: z.number().int().positive(),
  index: StoredIndexSchema,
  phiWeights: PhiWeightsSchema,
  /** Rows in `index.faiss` and `vectors.f32` at the last flush. */
  indexedCount: z.number().int().nonnegative(),
  /** Records whose row `rows.i32` holds (version 2). */
  slotCount: z.number().int().nonnegative().optional(),
  /** Live (not evicted) transitions at the last flush. */
  liveCount: z.number().int().nonnegative(),
  /** The last recall measurement of an index with a recall target. */
  recall: RecallMeasurementSchema.optional(),
  updatedAt: z.string(),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** The manifest, undefined when there is none; throws what `JSON.parse` / zod throw. */
export async function readManifestFile(file: string): Promise<Manifest | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  return ManifestSchema.parse(JSON.parse(text));
}

/** Replaces the manifest atomically (a temporary file renamed over it). */
export function writeManifestFile(file: string, manifest: Manifest): Promise<void> {
  return writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`);
}

/**
 * Makes `file` hold `keepBytes` bytes followed by `parts`, and syncs it: drops what a
 * crashed flush may have appended beyond the last manifest, then appends.
 */
export async function appendAfter(
  file: string,
  keepBytes: number,
  parts: Iterable<Uint8Array>,
): Promise<void> {
  const handle = await open(file, 'a+');
  try {
    await handle.truncate(keepBytes);
    for (const bytes of parts) await handle.write(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Reads `count` int32 values from the start of `file`; throws when it is shorter. */
export async function readInt32File(file: string, count: number): Promise<Int32Array> {
  const values = new Int32Array(count);
  const bytes = new Uint8Array(values.buffer);
  let handle: FileHandle;
  handle = await open(file, 'r');
  try {
    let filled = 0;
    while (filled < bytes.byteLength) {
      const { bytesRead } = await handle.read(bytes, filled, bytes.byteLength - filled, filled);
      if (bytesRead === 0) {
        throw new RangeError(
          `${file} holds ${Math.floor(filled / 4)} values, fewer than the ${count} expected`,
        );
      }
      filled += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return values;
}

/** Reads the first `rows` rows of a vector file into `store` (appended). */
export async function readVectorFile(
  file: string,
  store: VectorStore,
  rows: number,
): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await store.appendFromFile(handle, store.size * store.dimension * 4, rows - store.size);
  } finally {
    await handle.close();
  }
}
