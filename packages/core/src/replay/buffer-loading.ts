/**
 * Opening a stored replay buffer: the manifest read and checked against the options
 * (embedder, index, phi weights), the slots and rows of the last flush restored from the
 * slot snapshot and the record log's later entries replayed into slots and rows (the whole
 * log where no snapshot fits; each slot's row from `rows.i32`), the flushed vectors and
 * index reloaded and checked for length, records committed after the last flush embedded
 * again, a version-1 buffer (one vector per record) converted, and `{ rebuild: true }`
 * handed to compaction. Every failure names the file and says how to repair it.
 */
import { stat } from 'node:fs/promises';
import type { z } from 'zod';
import { ConfigError, IndexError } from '../errors.js';
import {
  FILES,
  type Manifest,
  PhiWeightsSchema,
  readInt32File,
  readManifestFile,
  readVectorFile,
  type StoredIndex,
} from './buffer-files.js';
import { embedRows, rebuildIndex } from './buffer-index.js';
import { compactBuffer, flushBuffer, openRecordLog, rewriteFiles } from './buffer-persistence.js';
import { type BufferState, emptyContents, statePath } from './buffer-state.js';
import { FaissVectorIndex } from './faiss-index.js';
import { tuneIfStale } from './recall-upkeep.js';
import { dropTornTail, readReplayLog } from './replay-log.js';
import {
  type ReplayBufferOptionsSchema,
  type ReplayIndexOptions,
  ReplayIndexOptionsSchema,
} from './replay-options.js';
import { readSlotSnapshot } from './slot-snapshot.js';
import { VectorStore } from './vector-store.js';

/** Options of a buffer being opened, as parsed. */
type ParsedOptions = z.output<typeof ReplayBufferOptionsSchema>;

/**
 * Loads the buffer in `state.directory` into `state` (an empty directory gives an empty
 * buffer); with `rebuild`, re-embeds every stored record with the options' embedder.
 */
export async function loadBuffer(
  state: BufferState,
  options: ParsedOptions,
  rebuild: boolean,
): Promise<void> {
  const manifest = await readManifest(state, rebuild);
  if (manifest) {
    checkCompatible(state, manifest, options, rebuild);
    // Stored settings stay unless a rebuild is asked to change them; a new search depth
    // or recall target applies at once.
    if (!rebuild || options.index === undefined)
      state.indexSettings = adoptStoredIndex(manifest.index, options.index);
    if (!rebuild || options.phiWeights === undefined) state.phiWeights = manifest.phiWeights;
    if (manifest.recall && !rebuild) state.recall = manifest.recall;
  } else if (state.readOnly) {
    throw new IndexError(
      `${statePath(state, 'manifest')} does not exist: no replay buffer in ${state.directory}.`,
      { path: state.directory },
    );
  }
  state.contents = emptyContents(state);
  const usable = manifest && !rebuild && manifest.indexedCount > 0;
  // Version 1 kept one vector per record: its vectors become the rows' vectors below.
  const legacy = usable && manifest.version === 1;
  const mapped =
    usable && !legacy ? await readRowsFile(state, manifest.slotCount ?? 0) : new Int32Array(0);
  // The flushed vectors are read (by libuv's threads) while the log is parsed (on this one).
  const preloaded = usable ? preloadVectors(state, manifest.indexedCount) : undefined;
  await replayLog(state, mapped);

  if (rebuild || legacy) {
    if (state.readOnly) {
      throw new IndexError(
        rebuild
          ? 'ReplayBuffer.open: { rebuild: true } needs a writable buffer, not { readOnly: true }.'
          : `${state.directory} was written by an earlier version of the replay buffer (one vector per record); open it writable once to convert it (its vectors are kept, nothing is re-embedded).`,
        { path: state.directory },
      );
    }
    if (rebuild) await compactBuffer(state, true);
    else await convertLegacy(state, manifest!, preloaded);
    return;
  }
  const indexed = usable ? await loadVectors(state, manifest, preloaded) : 0;
  const { contents } = state;
  if (state.readOnly && indexed < contents.rows.size) {
    throw new IndexError(
      `${state.directory}: records were added after the last flush; open the buffer writable once to index them.`,
      { path: state.directory },
    );
  }
  // Rows of records committed after the last flush (a crash, or no close): embed just those.
  const caughtUp = indexed < contents.rows.size;
  await embedRows(state, indexed, contents.rows.size);
  state.flushedSlots = Math.min(mapped.length, contents.slots.length);
  await tuneIfStale(state);
  if (!state.readOnly) {
    await openRecordLog(state);
    if (!manifest || caughtUp || mapped.length < contents.slots.length) await flushBuffer(state);
  }
}

/**
 * Replays `records.jsonl` into the (empty) contents, each slot on its row from `mapped`
 * (`rows.i32`) where it has one, and drops a torn last record of a writable buffer. Where
 * the slot snapshot describes the log up to the last flush, it fills the contents and only
 * the entries after it are parsed.
 */
async function replayLog(state: BufferState, mapped: Int32Array): Promise<void> {
  const from = mapped.length > 0 ? await restoreSnapshot(state, mapped) : undefined;
  const { contents } = state;
  const { slots } = contents;
  const log = await readReplayLog(
    statePath(state, 'records'),
    {
      add: (transition, where, count, ids) => {
        const slot = slots.length;
        contents.register(transition, {
          keep: false,
          count,
          logged: where,
          ...(slot < mapped.length ? { row: mapped[slot]! } : {}),
        });
        for (const id of ids) slots.addAlias(slot, id);
      },
      count: (id, count, _line, ids) => {
        const slot = slots.slotOf(id);
        if (slot === undefined) return;
        slots.setCount(slot, count);
        for (const alias of ids) slots.addAlias(slot, alias);
      },
      evict: (id) => {
        const slot = slots.slotOf(id);
        if (slot !== undefined) contents.unregister(slot);
      },
    },
    { bytes: slots.log, ...(from ? { from } : {}) },
  ).catch((error: unknown) => {
    if (error instanceof RangeError) {
      throw new IndexError(
        `${statePath(state, 'rows')} does not match ${FILES.records} (${error.message}). Open the buffer with { rebuild: true } to rebuild rows, vectors and index from ${FILES.records}.`,
        { path: statePath(state, 'rows'), cause: error },
      );
    }
    throw error;
  });
  state.logLines = log.committedLines;
  if (log.tornBytes > 0) {
    state.warn(
      `${statePath(state, 'records')}: ignoring a truncated last record (${log.tornBytes} bytes, an append interrupted by a crash); it was never committed.`,
    );
    if (!state.readOnly) await dropTornTail(statePath(state, 'records'), log.committedBytes);
  }
}

/**
 * Fills the (empty) contents from the slot snapshot where it describes the log and `mapped`;
 * returns where the log's entries after it start (undefined: none is usable, so the whole
 * log is parsed; a snapshot that exists but does not fit is reported).
 */
async function restoreSnapshot(
  state: BufferState,
  mapped: Int32Array,
): Promise<{ byte: number; line: number } | undefined> {
  const file = statePath(state, 'slots');
  const logFile = statePath(state, 'records');
  const snapshot = await readSlotSnapshot(file, {
    logFile,
    logBytes: await stat(logFile).then(
      (info) => info.size,
      () => 0,
    ),
    slotCount: mapped.length,
    withInstruction: state.contents.withInstruction,
  });
  if (snapshot === undefined) return undefined;
  let stale = 'stale' in snapshot ? snapshot.stale : undefined;
  if (!('stale' in snapshot)) {
    try {
      state.contents.restore(snapshot.columns, snapshot.rowHashes, mapped);
      return { byte: snapshot.log.bytes, line: snapshot.log.lines };
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      stale = `it does not match ${FILES.rows} (${error.message})`;
      state.contents = emptyContents(state);
    }
  }
  state.warn(`${file} is not used: ${stale}. Reading the whole ${FILES.records} instead.`);
  return undefined;
}

async function readManifest(state: BufferState, rebuild: boolean): Promise<Manifest | undefined> {
  const file = statePath(state, 'manifest');
  try {
    return await readManifestFile(file);
  } catch (error) {
    if (rebuild) return undefined;
    throw new IndexError(
      `${file} is unreadable (${(error as Error).message}). Open the buffer with { rebuild: true } to rebuild manifest and index from ${FILES.records}.`,
      { path: file, cause: error },
    );
  }
}

/** The stored settings, with a search depth or recall target the options ask for now. */
function adoptStoredIndex(stored: StoredIndex, given: ReplayIndexOptions | undefined): StoredIndex {
  if (stored.type !== 'hnsw' || given?.type !== 'hnsw') return stored;
  const next = { ...stored };
  if (given.efSearch !== undefined) next.efSearch = given.efSearch;
  // The graph degree stays the stored one: chosen by the buffer only where it was from the start.
  if (given.targetRecall !== undefined) next.targetRecall = given.targetRecall;
  return next;
}

function checkCompatible(
  state: BufferState,
  manifest: Manifest,
  options: ParsedOptions,
  rebuild: boolean,
): void {
  if (rebuild) return;
  if (manifest.embedderId !== state.embedder.id || manifest.dimension !== state.dimension) {
    throw new IndexError(
      `The replay buffer in ${state.directory} was embedded with \`${manifest.embedderId}\` (dimension ${manifest.dimension}), but the embedder given is \`${state.embedder.id}\` (dimension ${state.dimension}). Open it with the embedder it was built with, or pass { rebuild: true } to re-embed its records with this one.`,
      { path: statePath(state, 'manifest') },
    );
  }
  const given = options.index && ReplayIndexOptionsSchema.parse(options.index);
  const stored = manifest.index;
  // What needs another graph needs a rebuild; search depth and recall target do not.
  const indexDiffers =
    given !== undefined &&
    (given.type !== stored.type ||
      (given.type === 'hnsw' &&
        stored.type === 'hnsw' &&
        ((given.m !== undefined && given.m !== stored.m) ||
          (given.efConstruction !== undefined && given.efConstruction !== stored.efConstruction))));
  const givenWeights = options.phiWeights && PhiWeightsSchema.parse(options.phiWeights);
  const weightsDiffer =
    givenWeights !== undefined &&
    JSON.stringify(givenWeights) !== JSON.stringify(manifest.phiWeights);
  if (indexDiffers || weightsDiffer) {
    throw new ConfigError(
      `The replay buffer in ${state.directory} uses index ${JSON.stringify(stored)} and phi weights ${JSON.stringify(manifest.phiWeights)}; the options ask for others. Leave them out to use the stored ones, or pass { rebuild: true } to rebuild with the new ones.`,
      { field: indexDiffers ? 'index' : 'phiWeights' },
    );
  }
}

/** `rows.i32`'s first `count` values, or none where the file cannot be read. */
async function readRowsFile(state: BufferState, count: number): Promise<Int32Array> {
  if (count === 0) return new Int32Array(0);
  const file = statePath(state, 'rows');
  try {
    return await readInt32File(file, count);
  } catch (error) {
    throw new IndexError(
      `cannot read ${file}: ${(error as Error).message}. Open the buffer with { rebuild: true } to rebuild rows, vectors and index from ${FILES.records}.`,
      { path: file, cause: error },
    );
  }
}

/**
 * The first `rows` rows of `vectors.f32`, or undefined where they cannot be read: then
 * {@link loadVectors} reads the file again and reports what is wrong with it.
 */
async function preloadVectors(state: BufferState, rows: number): Promise<VectorStore | undefined> {
  const store = new VectorStore(state.dimension);
  try {
    await readVectorFile(statePath(state, 'vectors'), store, rows);
    return store;
  } catch {
    return undefined;
  }
}

/** Reads `index.faiss` and `vectors.f32` (rest of `preloaded`); returns the rows they hold. */
async function loadVectors(
  state: BufferState,
  manifest: Manifest,
  preloaded: Promise<VectorStore | undefined> | undefined,
): Promise<number> {
  const indexFile = statePath(state, 'index');
  const rebuildHint = `Open the buffer with { rebuild: true } to rebuild the index from ${FILES.records} (re-embeds ${state.contents.slots.live} records).`;
  const index = await FaissVectorIndex.read(indexFile, state.dimension).catch((error) => {
    throw new IndexError(`${(error as Error).message}. ${rebuildHint}`, {
      path: indexFile,
      cause: error,
    });
  });
  const rows = index.size;
  if (rows < manifest.indexedCount || rows > state.contents.rows.size) {
    throw new IndexError(
      `${indexFile} holds ${rows} vectors, but the manifest records ${manifest.indexedCount} and ${FILES.records} gives ${state.contents.rows.size} rows: the index is truncated or stale. ${rebuildHint}`,
      { path: indexFile },
    );
  }
  const store = await readVectors(state, rows, preloaded, rebuildHint);
  state.index = index;
  state.contents.vectors = store;
  if (state.indexSettings.type === 'hnsw')
    index.setDepths({ efSearch: state.indexSettings.efSearch });
  state.flushedRows = rows;
  return rows;
}

/** The first `rows` rows of `vectors.f32` (continuing `preloaded`), checked for length. */
async function readVectors(
  state: BufferState,
  rows: number,
  preloaded: Promise<VectorStore | undefined> | undefined,
  rebuildHint: string,
): Promise<VectorStore> {
  const vectorFile = statePath(state, 'vectors');
  const rowBytes = state.dimension * 4;
  const size = await stat(vectorFile).then(
    (info) => info.size,
    () => 0,
  );
  if (size < rows * rowBytes) {
    throw new IndexError(
      `${vectorFile} holds ${Math.floor(size / rowBytes)} vectors, fewer than the ${rows} of the index: it is truncated. ${rebuildHint}`,
      { path: vectorFile },
    );
  }
  // The index may hold more rows than the manifest (a crash between index and manifest).
  const early = await preloaded;
  const store = early && early.size <= rows ? early : new VectorStore(state.dimension);
  try {
    await readVectorFile(vectorFile, store, rows);
  } catch (error) {
    throw new IndexError(`cannot read ${vectorFile}: ${(error as Error).message}. ${rebuildHint}`, {
      path: vectorFile,
      cause: error,
    });
  }
  return store;
}

/**
 * Converts a version-1 buffer (one vector per record): each row takes the vector of the
 * record that created it, the index is built anew, and the files are rewritten.
 */
async function convertLegacy(
  state: BufferState,
  manifest: Manifest,
  preloaded: Promise<VectorStore | undefined> | undefined,
): Promise<void> {
  const recordRows = Math.min(manifest.indexedCount, state.contents.slots.length);
  const old = await readVectors(
    state,
    recordRows,
    preloaded,
    `Open the buffer with { rebuild: true } to rebuild it from ${FILES.records}.`,
  );
  const { rows } = state.contents;
  const vectors = new Float32Array(state.dimension);
  let converted = 0;
  while (converted < rows.size && rows.origin(converted) < recordRows) {
    vectors.set(old.row(rows.origin(converted)));
    state.contents.vectors.append(vectors, 1);
    converted += 1;
  }
  await embedRows(state, converted, rows.size, false);
  await rebuildIndex(state);
  await tuneIfStale(state);
  await openRecordLog(state);
  await rewriteFiles(state);
}
