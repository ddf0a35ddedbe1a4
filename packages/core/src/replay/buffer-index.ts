/**
 * A replay buffer's faiss index kept in step with its row vectors: created on first need,
 * rows appended to both (several faiss threads for a large batch), rows embedded from the
 * phi inputs of the records that created them, and the index rebuilt from the stored
 * vectors (nothing re-embedded).
 */
import type { Transition } from '../mdp/schemas.js';
import type { StoredIndex } from './buffer-files.js';
import type { BufferState } from './buffer-state.js';
import { FaissVectorIndex } from './faiss-index.js';
import { embedPhi, type PhiInput } from './phi.js';
import { vectorIndexConfig } from './replay-options.js';

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
function newIndex(state: BufferState): Promise<FaissVectorIndex> {
  return FaissVectorIndex.create(state.dimension, vectorIndexConfig(state.indexSettings));
}

/** Creates the buffer's (empty) index unless it has one. */
export async function ensureIndex(state: BufferState): Promise<void> {
  state.index ??= await newIndex(state);
}

/** Appends row vectors to the store and the index (several threads for a large batch). */
export function appendVectors(state: BufferState, rows: Float32Array, count: number): void {
  state.contents.vectors.append(rows, count);
  state.index!.add(rows, count, count >= THREADED_ADD_ROWS ? state.threads : 1);
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
  replaceIndex(state, await newIndex(state));
  fillIndex(state);
}

/** {@link rebuildIndex} without waiting: the buffer has an index, so faiss is loaded. */
export function rebuildIndexSync(state: BufferState): void {
  replaceIndex(state, state.index!.empty(vectorIndexConfig(state.indexSettings)));
  fillIndex(state);
}

/**
 * A new index of `settings` over the stored row vectors, built beside the buffer's own (which
 * stays in use): a candidate to measure before choosing it.
 */
export function indexBeside(state: BufferState, settings: StoredIndex): FaissVectorIndex {
  const index = state.index!.empty(vectorIndexConfig(settings));
  addStoredVectors(index, state);
  return index;
}

/**
 * Sets the buffer's index and frees the one it replaces at once: a graph's memory is outside
 * V8's heap, so waiting for V8 to finalize it let a capped buffer's RSS climb with every
 * compaction.
 */
export function replaceIndex(state: BufferState, next: FaissVectorIndex | undefined): void {
  const previous = state.index;
  state.index = next;
  if (previous !== next) previous?.dispose();
}

/** Adds every stored row vector to the buffer's (empty) index. */
function fillIndex(state: BufferState): void {
  addStoredVectors(state.index!, state);
}

/** Adds every stored row vector of `state` to the (empty) `index`. */
function addStoredVectors(index: FaissVectorIndex, state: BufferState): void {
  const { vectors } = state.contents;
  const batch = 65_536;
  for (let from = 0; from < vectors.size; from += batch) {
    const to = Math.min(vectors.size, from + batch);
    index.add(vectors.slice(from, to), to - from, state.threads);
  }
}
