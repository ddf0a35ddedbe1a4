/**
 * Writing a replay buffer's files (see `buffer-files.ts` for what each holds): a flush
 * appends the vectors and rows added since the last one, rewrites the index and the
 * manifest and syncs the record log; a compaction (or rebuild) drops evicted transitions,
 * rebuilds the index and rewrites every file, the log first.
 */
import { rm } from 'node:fs/promises';
import { JsonlWriter, writeJsonl } from '../mdp/jsonl.js';
import type { Transition } from '../mdp/schemas.js';
import { appendAfter, writeManifestFile } from './buffer-files.js';
import { embedRows, rebuildIndex } from './buffer-index.js';
import { type BufferState, recordsFile, statePath } from './buffer-state.js';
import { compactContents } from './compaction.js';
import { tuneIfStale } from './recall-upkeep.js';
import { type ReplayLogEntry, ReplayLogEntrySchema } from './replay-log.js';

/**
 * Writes the vectors, rows and faiss index of everything added since the last flush and
 * the manifest, and syncs the record log (nothing for a buffer in memory or read-only).
 */
export async function flushBuffer(state: BufferState): Promise<void> {
  if (!state.directory || state.readOnly) return;
  const { rows, slots, vectors } = state.contents;
  const rowCount = rows.size;
  const slotCount = slots.length;
  await appendAfter(
    statePath(state, 'vectors'),
    state.flushedRows * state.dimension * 4,
    vectors.bytes(state.flushedRows, rowCount),
  );
  const slotRows = rows.slotRows(state.flushedSlots, slotCount);
  await appendAfter(statePath(state, 'rows'), state.flushedSlots * 4, [
    new Uint8Array(slotRows.buffer, slotRows.byteOffset, slotRows.byteLength),
  ]);
  if (state.index) await state.index.write(statePath(state, 'index'));
  else await rm(statePath(state, 'index'), { force: true });
  await state.writer?.sync();
  await writeManifest(state, rowCount, slotCount);
  state.flushedRows = rowCount;
  state.flushedSlots = slotCount;
}

async function writeManifest(
  state: BufferState,
  indexedCount: number,
  slotCount: number,
): Promise<void> {
  await writeManifestFile(statePath(state, 'manifest'), {
    format: 'dreamgym-replay-buffer',
    version: 2,
    embedderId: state.embedder.id,
    dimension: state.dimension,
    index: state.indexSettings,
    phiWeights: state.phiWeights,
    indexedCount,
    slotCount,
    liveCount: state.contents.slots.live,
    ...(state.recall ? { recall: state.recall } : {}),
    updatedAt: new Date().toISOString(),
  });
}

/** Writes vectors, rows, index and manifest from scratch. */
export async function rewriteFiles(state: BufferState): Promise<void> {
  state.flushedRows = 0;
  state.flushedSlots = 0;
  await flushBuffer(state);
}

/**
 * Drops evicted slots and unused rows (see `compaction.ts`), rebuilds the index
 * (re-embedding when `reembed`, else from the stored vectors) and rewrites the files.
 */
export async function compactBuffer(state: BufferState, reembed: boolean): Promise<void> {
  const compacted = compactContents(state.contents, {
    logFile: recordsFile(state),
    withInstruction: state.phiWeights.instruction > 0,
    dimension: state.dimension,
    reembed,
  });
  state.contents = compacted.contents;
  state.evictCursor = 0;
  state.index = undefined;
  if (reembed) await embedRows(state, 0, state.contents.rows.size, false);
  if (state.contents.vectors.size > 0) {
    await rebuildIndex(state);
    tuneIfStale(state);
  }
  if (!state.directory) return;
  // Log first: a crash before the index is rewritten leaves an index longer than the
  // log, which `open` reports and `rebuild: true` repairs.
  await state.writer?.close();
  await writeJsonl(
    statePath(state, 'records'),
    ReplayLogEntrySchema,
    compacted.transitions.map((transition, position) =>
      addEntry(transition, compacted.counts[position]!, compacted.aliases[position]!),
    ),
  );
  await openRecordLog(state);
  await rewriteFiles(state);
}

/** Opens the record log for appending. */
export async function openRecordLog(state: BufferState): Promise<void> {
  state.writer = await JsonlWriter.open(statePath(state, 'records'), ReplayLogEntrySchema);
}

/** The log entry that adds `transition`, occurred `count` times, with its duplicates' `ids`. */
export function addEntry(transition: Transition, count: number, ids: string[]): ReplayLogEntry {
  return {
    op: 'add',
    transition,
    ...(count > 1 ? { count } : {}),
    ...(ids.length > 0 ? { ids } : {}),
  };
}
