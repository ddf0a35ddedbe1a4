/**
 * A replay buffer's faiss index kept in step with its row vectors: created on first need,
 * rows appended to both (several faiss threads for a large batch; a capped buffer's
 * evictable rows to the index's fresh part, see `split-index.ts`), rows embedded from the
 * phi inputs of the records that created them, and the index rebuilt from the stored
 * vectors (nothing re-embedded): all of it, or only its fresh part after a compaction.
 */
import type { Transition } from '../mdp/schemas.js';
import type { BufferState } from './buffer-state.js';
import { FaissVectorIndex } from './faiss-index.js';
import { embedPhi, type PhiInput } from './phi.js';
import { vectorIndexConfig } from './replay-options.js';
import { SplitIndex } from './split-index.js';

/** Rows embedded per call when catching up or rebuilding, to bound memory. */
const EMBED_BATCH = 8192;
/** Rows in one call into faiss from which a batch insert uses several threads. */
const THREADED_ADD_ROWS = 256;

/** The phi inputs of a transition. */
export function phiInput(transition: Transition): PhiInput {
  return {
    stateText: transition.state.text,
    action: transition.action,
    instruction: transition.instruction,
  };
}

/** An empty index of the buffer's current settings. */
async function newIndex(state: BufferState): Promise<SplitIndex> {
  const config = vectorIndexConfig(state.indexSettings);
  return new SplitIndex(config, await FaissVectorIndex.create(state.dimension, config));
}

/** The parts read from the buffer's files, with its current settings. */
export function splitIndexOf(
  state: BufferState,
  settled: FaissVectorIndex,
  fresh: FaissVectorIndex | undefined,
): SplitIndex {
  return new SplitIndex(vectorIndexConfig(state.indexSettings), settled, fresh);
}

/**
 * Whether the rows [start, end) belong in the fresh part: in a capped buffer, unless every
 * one was created by an offline transition (never evicted, so it keeps its row number
 * through compactions).
 */
function evictableRows(state: BufferState, start: number, end: number): boolean {
  if (!state.capped) return false;
  const { rows, slots } = state.contents;
  for (let row = start; row < end; row += 1)
    if (slots.source(rows.origin(row)) !== 'offline') return true;
  return false;
}

/** Rows from `start` on that are settled in a full build: the leading non-evictable ones. */
function settledPrefix(state: BufferState, start: number): number {
  const total = state.contents.vectors.size;
  let end = start;
  while (end < total && !evictableRows(state, end, end + 1)) end += 1;
  return end;
}

/** Creates the buffer's (empty) index unless it has one. */
export async function ensureIndex(state: BufferState): Promise<void> {
  state.index ??= await newIndex(state);
}

/** Appends row vectors to the store and the index (several threads for a large batch). */
export function appendVectors(state: BufferState, rows: Float32Array, count: number): void {
  const start = state.contents.vectors.size;
  state.contents.vectors.append(rows, count);
  const threads = count >= THREADED_ADD_ROWS ? state.threads : 1;
  state.index!.add(rows, count, threads, evictableRows(state, start, start + count));
}

/**
 * Embeds the rows [start, end) from the phi inputs of the records that created them and
 * appends them (to the index too, unless `toIndex` is false).
 */
export async function embedRows(
  state: BufferState,
  start: number,
  end: number,
  toIndex = true,
): Promise<void> {
  const { rows, slots } = state.contents;
  if (toIndex && end > start) await ensureIndex(state);
  for (let from = start; from < end; from += EMBED_BATCH) {
    const to = Math.min(end, from + EMBED_BATCH);
    const inputs: PhiInput[] = [];
    for (let row = from; row < to; row += 1) inputs.push(phiInput(slots.peek(rows.origin(row))));
    const embedded = new Float32Array(inputs.length * state.dimension);
    await embedPhi(state.embedder, inputs, state.phiWeights, embedded);
    if (toIndex) appendVectors(state, embedded, inputs.length);
    else state.contents.vectors.append(embedded, inputs.length);
  }
}

/** A new index of the current settings over the stored row vectors (nothing re-embedded). */
export async function rebuildIndex(state: BufferState): Promise<void> {
  state.index = await newIndex(state);
  fillIndex(state);
}

/** {@link rebuildIndex} without waiting: the buffer has an index, so faiss is loaded. */
export function rebuildIndexSync(state: BufferState): void {
  const config = vectorIndexConfig(state.indexSettings);
  state.index = new SplitIndex(config, state.index!.settled.empty(config));
  fillIndex(state);
}

/**
 * Rebuilds only the fresh part from the stored vectors after it (a compaction that kept
 * every settled row in place).
 */
export function rebuildFreshPart(state: BufferState): void {
  state.index = state.index!.withoutFresh();
  fillIndex(state);
}

/**
 * Adds the stored row vectors after the index's rows: the leading rows no eviction can
 * drop to the settled part (while the fresh part is empty), the rest to the fresh part.
 */
function fillIndex(state: BufferState): void {
  const index = state.index!;
  const settledEnd = index.freshSize > 0 ? index.size : settledPrefix(state, index.size);
  addRows(state, index.size, settledEnd, false);
  addRows(state, settledEnd, state.contents.vectors.size, true);
}

/** Adds the stored vectors of rows [start, end) to one part, in batches. */
function addRows(state: BufferState, start: number, end: number, toFresh: boolean): void {
  const { vectors } = state.contents;
  const batch = 65_536;
  for (let from = start; from < end; from += batch) {
    const to = Math.min(end, from + batch);
    state.index!.add(vectors.slice(from, to), to - from, state.threads, toFresh);
  }
}
