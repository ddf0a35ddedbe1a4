/**
 * Writing a replay buffer's files (see `buffer-files.ts` for what each holds): entries are
 * appended to the record log as they come; a flush appends the vectors and rows added since
 * the last one, rewrites the index, syncs the record log and rewrites the slot snapshot and
 * the manifest; a compaction (or rebuild) drops evicted transitions, rebuilds the index and
 * rewrites every file, the log first.
 */
import { rm } from 'node:fs/promises';
import { JsonlWriter, replaceJsonl } from '../mdp/jsonl.js';
import type { Transition } from '../mdp/schemas.js';
import { appendAfter, writeManifestFile } from './buffer-files.js';
import { embedRows, rebuildIndex, replaceIndex } from './buffer-index.js';
import { type BufferState, recordsFile, statePath } from './buffer-state.js';
import { compactContents } from './compaction.js';
import { tuneIfStale } from './recall-upkeep.js';
import { type LoggedRecord, type ReplayLogEntry, ReplayLogEntrySchema } from './replay-log.js';
import { writeSlotSnapshot } from './slot-snapshot.js';

/**
 * Writes the vectors, rows and faiss index of everything added since the last flush, syncs
 * the record log, and writes the slot snapshot and the manifest (nothing for a buffer in
 * memory or read-only).
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
  if (state.writer) {
    await state.writer.sync();
    // After the log it describes and before the manifest (see `slot-snapshot.ts`).
    await writeSlotSnapshot(statePath(state, 'slots'), state.contents, {
      file: statePath(state, 'records'),
      bytes: state.writer.bytes,
      lines: state.logLines,
    });
  }
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
  replaceIndex(state, undefined);
  if (reembed) await embedRows(state, 0, state.contents.rows.size, false);
  if (state.contents.vectors.size > 0) {
    await rebuildIndex(state);
    await tuneIfStale(state);
  }
  if (!state.directory) return;
  // Log first: a crash before the index is rewritten leaves an index longer than the
  // log, which `open` reports and `rebuild: true` repairs. The snapshot of the old log goes
  // before it.
  await rm(statePath(state, 'slots'), { force: true });
  await state.writer?.close();
  const logged = await rewriteLog(
    statePath(state, 'records'),
    compacted.transitions.map((transition, position) =>
      addEntry(transition, compacted.counts[position]!, compacted.aliases[position]!),
    ),
  );
  logged.forEach((where, slot) => {
    state.contents.slots.setLogged(slot, where);
  });
  state.logLines = logged.length;
  await openRecordLog(state);
  await rewriteFiles(state);
}

/**
 * Replaces the log `file` with `entries` atomically (a temporary file renamed over it);
 * resolves to where each entry lies in it.
 */
async function rewriteLog(file: string, entries: ReplayLogEntry[]): Promise<LoggedRecord[]> {
  return replaceJsonl(file, ReplayLogEntrySchema, async (writer) => {
    const logged: LoggedRecord[] = [];
    // In parts, so that a million entries are not one string.
    for (let from = 0; from < entries.length; from += 8192) {
      const spans = await writer.writeAll(entries.slice(from, from + 8192));
      spans.forEach((span, offset) => {
        logged.push({ line: from + offset + 1, ...span });
      });
    }
    return logged;
  });
}

/**
 * Appends `entries` to the record log in one write; resolves to where each lies (nothing
 * for a buffer in memory).
 */
export async function appendToLog(
  state: BufferState,
  entries: readonly ReplayLogEntry[],
): Promise<LoggedRecord[]> {
  if (!state.writer || entries.length === 0) return [];
  const spans = await state.writer.writeAll(entries);
  const first = state.logLines + 1;
  state.logLines += entries.length;
  return spans.map((span, offset) => ({ line: first + offset, ...span }));
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
