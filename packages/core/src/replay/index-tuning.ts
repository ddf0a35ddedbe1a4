/**
 * Recall tuning of an HNSW index, in the spirit of faiss' own `ParameterSpace` /
 * `AutoTuneCriterion`: pick the cheapest operating point that meets a criterion, measured
 * on real queries against exact search. Here the criterion is a recall@k target, the
 * queries are a sample of the buffer's own rows (each left out of its own answer), and the
 * operating points are search depths (efSearch), tried from shallow to deep; latency grows
 * about linearly with the depth, so the first depth that reaches the target is the fastest.
 *
 * Recall is tie-aware: a returned row whose score reaches the k-th exact score counts, so
 * that equally similar rows are interchangeable.
 */
import { z } from 'zod';
import { SeededRandom } from '../random/seeded-random.js';
import type { FaissVectorIndex } from './faiss-index.js';
import { TopK, type VectorStore } from './vector-store.js';

/** Search depths tried, shallow to deep. */
export const EF_SEARCH_LADDER = [
  16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
] as const;

/** A recall measurement of an index at one search depth, as the manifest records it. */
export const RecallMeasurementSchema = z.object({
  /** The recall@k asked for. */
  targetRecall: z.number().gt(0).max(1),
  /** The recall@k measured at `efSearch` (tie-aware, leave-one-out). */
  recall: z.number().min(0).max(1),
  /** Whether `recall` reaches `targetRecall`. */
  reached: z.boolean(),
  /** The search depth chosen: the shallowest that reached the target (else the deepest tried). */
  efSearch: z.number().int().positive(),
  /** The graph degree the index was built with. */
  m: z.number().int().positive(),
  k: z.number().int().positive(),
  /** Queries measured (rows of the buffer, each left out of its own answer). */
  queries: z.number().int().nonnegative(),
  /** Live rows of the index when measured; a buffer grown to twice as many is measured again. */
  rows: z.number().int().nonnegative(),
  /** Median top-k latency of the measured queries at `efSearch`, in milliseconds. */
  medianMs: z.number().nonnegative(),
  /** Seconds the measurement took (mostly the exact search it compares with). */
  seconds: z.number().nonnegative(),
  measuredAt: z.string(),
});
/** A recall measurement of an index (see {@link RecallMeasurementSchema}). */
export type RecallMeasurement = z.infer<typeof RecallMeasurementSchema>;

/** What {@link tuneSearchDepth} measures. */
export interface RecallTuningInput {
  index: FaissVectorIndex;
  /** The index's rows, in label order. */
  vectors: VectorStore;
  /** Whether a row is live (dead rows are neither queries nor answers). */
  isLive: (row: number) => boolean;
  /** Live rows. */
  liveRows: number;
  targetRecall: number;
  /** The graph degree the index was built with (recorded). */
  m: number;
  /** Neighbours per query. Default 8 (what the experience model retrieves). */
  k?: number;
  /** Query rows sampled. Default 100. */
  queries?: number;
  /** Seed of the query sample. Default 1. */
  seed?: number;
  /** Deepest search depth tried. Default 2048. */
  maxEfSearch?: number;
}

/**
 * Measures recall@k of `index` at increasing search depths and leaves it at the shallowest
 * that reaches the target (else the deepest tried). Synchronous CPU work: the exact search
 * it compares with scans `queries * liveRows` vectors.
 */
export function tuneSearchDepth(input: RecallTuningInput): RecallMeasurement {
  const started = performance.now();
  const k = input.k ?? 8;
  const { index, vectors } = input;
  const queryRows = sampleLiveRows(input, input.queries ?? 100, input.seed ?? 1);
  const thresholds = exactThresholds(vectors, queryRows, k, input.isLive);
  const measured = (efSearch: number) => {
    index.setDepths({ efSearch });
    return measureRecall(index, vectors, queryRows, thresholds, k, input.isLive);
  };
  const depths = EF_SEARCH_LADDER.filter(
    (depth) => depth >= k && depth <= (input.maxEfSearch ?? 2048),
  );
  let efSearch = depths[0] ?? k;
  let result = { recall: 1, medianMs: 0 };
  for (const depth of depths) {
    efSearch = depth;
    result = measured(depth);
    if (result.recall >= input.targetRecall) break;
  }
  return {
    targetRecall: input.targetRecall,
    recall: Number(result.recall.toFixed(4)),
    reached: result.recall >= input.targetRecall,
    efSearch,
    m: input.m,
    k,
    queries: queryRows.length,
    rows: input.liveRows,
    medianMs: Number(result.medianMs.toFixed(4)),
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
    measuredAt: new Date().toISOString(),
  };
}

/** Up to `count` distinct live rows, drawn uniformly with a seeded generator. */
function sampleLiveRows(input: RecallTuningInput, count: number, seed: number): number[] {
  const total = input.vectors.size;
  const wanted = Math.min(count, input.liveRows);
  const random = new SeededRandom(seed);
  const chosen = new Set<number>();
  for (let tries = 0; chosen.size < wanted && tries < wanted * 50; tries += 1) {
    const row = random.int(total);
    if (input.isLive(row)) chosen.add(row);
  }
  return [...chosen];
}

/**
 * Per query row, the k-th best exact score among the other live rows: one pass over the
 * rows, every query scored against each (a blocked brute-force scan).
 */
function exactThresholds(
  vectors: VectorStore,
  queryRows: readonly number[],
  k: number,
  isLive: (row: number) => boolean,
): number[] {
  const queries = queryRows.map((row) => vectors.row(row).slice());
  const best = queryRows.map(() => new TopK(k));
  for (let row = 0; row < vectors.size; row += 1) {
    if (!isLive(row)) continue;
    for (let query = 0; query < queries.length; query += 1) {
      if (row === queryRows[query]) continue;
      const top = best[query]!;
      const score = vectors.dot(queries[query]!, row);
      if (score > top.threshold) top.offer(row, score);
    }
  }
  return best.map((top) => top.scores[top.scores.length - 1] ?? Number.NEGATIVE_INFINITY);
}

/** Tie-aware leave-one-out recall@k of the index as it is set now, and its median latency. */
function measureRecall(
  index: FaissVectorIndex,
  vectors: VectorStore,
  queryRows: readonly number[],
  thresholds: readonly number[],
  k: number,
  isLive: (row: number) => boolean,
): { recall: number; medianMs: number } {
  let hits = 0;
  const times: number[] = [];
  queryRows.forEach((row, query) => {
    const vector = vectors.row(row);
    const begin = performance.now();
    const { labels, scores } = index.search(vector, k + 1);
    times.push(performance.now() - begin);
    let taken = 0;
    for (let position = 0; position < labels.length && taken < k; position += 1) {
      const label = labels[position]!;
      if (label === row || label < 0 || !isLive(label)) continue;
      taken += 1;
      if (scores[position]! >= thresholds[query]! - 1e-5) hits += 1;
    }
  });
  times.sort((a, b) => a - b);
  return {
    recall: queryRows.length === 0 ? 1 : hits / (queryRows.length * k),
    medianMs: times[Math.floor(times.length / 2)] ?? 0,
  };
}
