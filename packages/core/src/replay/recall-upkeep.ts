/**
 * Recall upkeep of a replay buffer whose HNSW index has a `targetRecall`: when it is due a
 * measurement (none yet, another target or degree, twice the rows measured, or a full
 * sample of served queries to measure on), on which queries (served searches, else rows of
 * a large batch held out of the index, else the index's own rows), and what a measurement
 * changes (the search depth, and the graph degree where no depth reaches the target). The
 * measurement itself is `index-tuning.ts`.
 */

import { appendVectors, indexBeside, rebuildIndexSync, replaceIndex } from './buffer-index.js';
import type { BufferState } from './buffer-state.js';
import type { FaissVectorIndex } from './faiss-index.js';
import {
  type RecallReference,
  type RecallTuningInput,
  recallReference,
  tuneSearchDepth,
} from './index-tuning.js';
import { TUNED_DEGREE_MAX } from './replay-options.js';

/** Live rows from which a `targetRecall` index is measured (smaller graphs are near exact). */
const TUNE_FROM_ROWS = 1000;

/** Whether the buffer's index has a recall target. */
export function hasRecallTarget(state: BufferState): boolean {
  return state.indexSettings.type === 'hnsw' && state.indexSettings.targetRecall !== undefined;
}

/**
 * Whether a `targetRecall` index is due a measurement: none yet, another target or degree,
 * grown to twice the rows measured, or measured on its own rows while a full sample of
 * served queries now exists (measured once on those, then again at each doubling).
 */
export function staleRecall(state: BufferState): boolean {
  const settings = state.indexSettings;
  if (settings.type !== 'hnsw' || settings.targetRecall === undefined || !state.index) return false;
  const live = state.contents.rows.live;
  if (live < TUNE_FROM_ROWS) return false;
  const recall = state.recall;
  return (
    recall === undefined ||
    recall.targetRecall !== settings.targetRecall ||
    recall.m !== settings.m ||
    live >= 2 * recall.rows ||
    (recall.queriesFrom !== 'searches' && state.served.size >= state.recallQueries)
  );
}

/** {@link tune} when the index is due a measurement. */
export async function tuneIfStale(state: BufferState): Promise<void> {
  if (staleRecall(state)) await tune(state);
}

/**
 * A graph of twice the degree is tried when the depth that reaches the target is more than
 * this many times the degree: a search costs about depth x degree distance computations.
 */
const DEGREE_TRIAL_DEPTH = 8;

/**
 * Measures recall and sets the search depth that reaches the target. Where the graph degree
 * is the buffer's to choose: when no depth reaches it, rebuilds the graph with twice the
 * degree (from the stored vectors) and measures again; when only a depth over
 * {@link DEGREE_TRIAL_DEPTH} times the degree does, builds the graph of twice the degree
 * beside it and keeps it if it searches with fewer distance computations (depth x degree; one
 * such step a measurement). Both are decided on counts, never on timings, so a seeded run
 * decides the same every time.
 */
export async function tune(
  state: BufferState,
  heldOut?: { queries: Float32Array[]; pending: number },
): Promise<void> {
  // The exact answers are the stored vectors', whatever the graph: scanned once for every
  // graph this call measures.
  let reference: RecallReference | undefined;
  const measure = async (index: FaissVectorIndex, m: number, canDouble: boolean) => {
    const input = tuningInput(state, index, m, canDouble, heldOut);
    reference ??= await recallReference(input);
    return tuneSearchDepth(input, reference);
  };
  for (;;) {
    const settings = state.indexSettings;
    if (settings.type !== 'hnsw' || settings.targetRecall === undefined || !state.index) return;
    const canDouble = settings.autoDegree === true && settings.m * 2 <= TUNED_DEGREE_MAX;
    const measurement = await measure(state.index, settings.m, canDouble);
    // Recorded at the size the index is about to have.
    state.recall = { ...measurement, rows: state.contents.rows.live };
    state.indexSettings = { ...settings, efSearch: measurement.efSearch };
    if (!canDouble) return;
    if (!measurement.reached) {
      state.indexSettings = { ...state.indexSettings, m: settings.m * 2 };
      rebuildIndexSync(state);
      continue;
    }
    if (measurement.efSearch <= DEGREE_TRIAL_DEPTH * settings.m) return;
    const wider = { ...state.indexSettings, m: settings.m * 2 };
    const candidate = indexBeside(state, wider);
    const trial = await measure(candidate, wider.m, true);
    if (!trial.reached || trial.efSearch * wider.m >= measurement.efSearch * settings.m) {
      candidate.dispose();
      return;
    }
    replaceIndex(state, candidate);
    state.recall = { ...trial, rows: state.contents.rows.live };
    state.indexSettings = { ...wider, efSearch: trial.efSearch };
    return;
  }
}

/** What {@link tuneSearchDepth} measures `index` (the buffer's, or a candidate) on. */
function tuningInput(
  state: BufferState,
  index: FaissVectorIndex,
  m: number,
  canDouble: boolean,
  heldOut: { queries: Float32Array[]; pending: number } | undefined,
): RecallTuningInput {
  const { rows, vectors } = state.contents;
  const { targetRecall } = state.indexSettings as { targetRecall: number };
  const served =
    state.served.size >= state.recallQueries
      ? { served: state.served.vectors(), queriesFrom: 'searches' as const }
      : heldOut
        ? { served: heldOut.queries, queriesFrom: 'new-rows' as const }
        : {};
  return {
    index,
    vectors,
    isLive: (row) => row < vectors.size && rows.isLive(row),
    liveRows: rows.live - (heldOut?.pending ?? 0),
    targetRecall,
    m,
    queries: state.recallQueries,
    threads: state.threads,
    // Past 256 a graph of twice the degree is tried first (when the buffer may choose it).
    maxEfSearch: canDouble ? 256 : 2048,
    ...served,
  };
}

/**
 * Keeps a served query in the sample of a `targetRecall` index. The measurement on a full
 * sample waits for the next `add`: a search never changes the search depth under the
 * searches running beside it, so what concurrent episodes retrieve does not depend on which
 * of them searched first.
 */
export function noteServedQuery(state: BufferState, vector: Float32Array): void {
  state.served.offer(vector);
}

/**
 * Appends the vectors of rows just created. When the buffer is due a recall measurement
 * and has served too few searches to measure on, the last rows of a large batch are held
 * back: measured as queries against the index before they join it, they are fresh queries
 * like the buffer's real ones (a row already in the graph finds itself and its links at
 * once, and overstates recall: at 440k rows, depth 32 reached 0.97 for rows, 0.89 for
 * fresh queries).
 */
export async function appendNewRows(
  state: BufferState,
  rows: Float32Array,
  count: number,
): Promise<void> {
  const held = heldOutRows(state, count);
  if (held === 0) {
    appendVectors(state, rows, count);
    return;
  }
  const width = state.dimension;
  const first = count - held;
  appendVectors(state, rows.subarray(0, first * width), first);
  const queries: Float32Array[] = [];
  for (let row = first; row < count; row += 1)
    queries.push(rows.slice(row * width, (row + 1) * width));
  await tune(state, { queries, pending: held });
  appendVectors(state, rows.subarray(first * width), held);
}

/** How many of `count` new rows to hold out as fresh queries (0: no measurement now). */
function heldOutRows(state: BufferState, count: number): number {
  const settings = state.indexSettings;
  if (settings.type !== 'hnsw' || settings.targetRecall === undefined || !state.index) return 0;
  if (state.served.size >= state.recallQueries) return 0;
  const held = Math.min(state.recallQueries, Math.floor(count / 2));
  const liveAfter = state.contents.rows.live;
  const indexedBefore = state.contents.vectors.size + count - held;
  if (held < 20 || liveAfter < TUNE_FROM_ROWS || indexedBefore < TUNE_FROM_ROWS / 2) return 0;
  const recall = state.recall;
  const due =
    recall === undefined ||
    recall.targetRecall !== settings.targetRecall ||
    recall.m !== settings.m ||
    liveAfter >= 2 * recall.rows;
  return due ? held : 0;
}
