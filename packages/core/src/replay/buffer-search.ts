/**
 * Top-k search of the replay buffer: the vector index (or an exact scan) finds phi rows by
 * cosine, and each row's member transitions passing the filter are ranked by score, then by
 * occurrence count (equally similar transitions, most frequent first), then oldest first.
 */
import type { FaissVectorIndex } from './faiss-index.js';
import type { PhiRows } from './phi-rows.js';
import type { RetrievalFilter, ScoredTransition } from './retriever.js';
import type { SlotTable } from './slot-table.js';
import { exactTopK, RankedTopK, type VectorStore } from './vector-store.js';

/** What a search reads of a buffer. */
export interface SearchSources {
  slots: SlotTable;
  rows: PhiRows;
  /** One vector per row. */
  vectors: VectorStore;
  index: FaissVectorIndex | undefined;
  /** Whether the index is exact (flat): then a complete fetch needs no exact fallback. */
  exactIndex: boolean;
  /** A filtered search first asks the index for `k * overFetch` rows (scaled by selectivity). */
  overFetch: number;
  /** When a filter can match at most this many transitions, scan them exactly instead. */
  exactScanBelow: number;
}

function clampScore(score: number): number {
  return Math.max(-1, Math.min(1, score));
}

function served(sources: SearchSources, best: RankedTopK): ScoredTransition[] {
  return best.slots.map((slot, position) => ({
    transition: sources.slots.served(slot),
    score: clampScore(best.scores[position]!),
    count: best.counts[position]!,
  }));
}

/** Offers the members of `row` passing `accept` to `best`, all with the row's `score`. */
function offerMembers(
  sources: SearchSources,
  best: RankedTopK,
  row: number,
  score: number,
  accept: (slot: number) => boolean,
): void {
  const { slots } = sources;
  sources.rows.forEachMember(row, (slot) => {
    const count = slots.count(slot);
    if (best.admits(slot, score, count) && accept(slot)) best.offer(slot, score, count);
  });
}

/**
 * Rows to ask the index for so that `k` live ones come back when every live row may answer:
 * `k`, plus up to `k` more for the dead rows the index still holds (evicted, not compacted
 * away yet). The recall tuner measures with the same fetch, so the depth it picks is the one
 * these searches need.
 */
export function fetchPastDeadRows(k: number, deadRows: number): number {
  return k + Math.min(k, Math.max(0, deadRows));
}

/** Searches of the index a buffer search makes before it scans exactly. */
export const APPROXIMATE_ROUNDS = 2;

/**
 * The rows the next round asks for when a round found fewer than `k` that answer (dead rows,
 * or a filter, took their places): eight times as many, at most every row.
 */
export function widenFetch(fetch: number, total: number): number {
  return Math.min(total, fetch * 8);
}

/**
 * The `k` stored transitions most similar to the phi `vector` among those passing `filter`,
 * most similar first; equally similar ones most frequent first. Exact for a flat index, as
 * good as the index's recall for HNSW, exact again for a filter that few transitions pass.
 */
export function searchBuffer(
  sources: SearchSources,
  vector: Float32Array,
  k: number,
  filter: RetrievalFilter | undefined,
): ScoredTransition[] {
  const { slots, index } = sources;
  const accept = slots.acceptor(filter);
  const bound = slots.matchBound(filter);
  if (bound === 0 || k <= 0) return [];
  if (!index || bound <= sources.exactScanBelow) return scanSlots(sources, vector, k, accept);
  const total = index.size;
  // Every live transition passes a filter whose bound is all of them (and excludes no
  // trajectory): then k rows hold k transitions, give or take the rows no one uses now.
  const passesAll = bound === slots.live && !filter?.excludeTrajectoryIds?.length;
  let fetch = passesAll
    ? Math.min(total, fetchPastDeadRows(k, sources.rows.size - sources.rows.live))
    : Math.min(total, Math.ceil(k * sources.overFetch * (slots.live / bound)));
  for (let round = 0; round < APPROXIMATE_ROUNDS; round += 1) {
    const { labels, scores } = index.search(vector, fetch);
    const best = new RankedTopK(k);
    for (let position = 0; position < labels.length; position += 1) {
      const row = labels[position]!;
      if (row < 0) continue;
      const score = scores[position]!;
      // Rows come best first: once k members are kept, a lower score adds nothing.
      if (best.slots.length >= k && score < best.scores[k - 1]!) break;
      offerMembers(sources, best, row, score, accept);
    }
    const complete = fetch >= total && sources.exactIndex;
    if (best.slots.length >= k || complete) return served(sources, best);
    if (fetch >= total) break;
    fetch = widenFetch(fetch, total);
  }
  // Too few of the approximate candidates pass the filter: scan exactly.
  return scanSlots(sources, vector, k, accept);
}

/**
 * Exact top-k by a scan: over the rows (each scored once) without a filter, over the
 * slots passing it with one.
 */
export function searchExact(
  sources: SearchSources,
  vector: Float32Array,
  k: number,
  filter: RetrievalFilter | undefined,
): ScoredTransition[] {
  if (k <= 0) return [];
  if (filter) return scanSlots(sources, vector, k, sources.slots.acceptor(filter));
  const { rows } = sources;
  const top = exactTopK(sources.vectors, vector, k, (row) => rows.isLive(row));
  const best = new RankedTopK(k);
  const accept = (slot: number) => sources.slots.isLive(slot);
  for (const [position, row] of top.slots.entries())
    offerMembers(sources, best, row, top.scores[position]!, accept);
  return served(sources, best);
}

/** Exact top-k over the slots `accept` admits, each row's score computed once. */
function scanSlots(
  sources: SearchSources,
  vector: Float32Array,
  k: number,
  accept: (slot: number) => boolean,
): ScoredTransition[] {
  const { slots, rows, vectors } = sources;
  const best = new RankedTopK(k);
  const scored = new Map<number, number>();
  for (let slot = 0; slot < slots.length; slot += 1) {
    if (!accept(slot)) continue;
    const row = rows.rowOf(slot);
    // A row without its vector yet (a batch whose recall is measured before it is indexed).
    if (row >= vectors.size) continue;
    let score = scored.get(row);
    if (score === undefined) {
      score = vectors.dot(vector, row);
      scored.set(row, score);
    }
    best.offer(slot, score, slots.count(slot));
  }
  return served(sources, best);
}
