/**
 * Recall tuning of an HNSW index, in the spirit of faiss' own `ParameterSpace` /
 * `AutoTuneCriterion`: pick the cheapest operating point that meets a criterion, measured
 * on queries against exact search. Here the criterion is a recall@k target and the
 * operating points are search depths (efSearch), tried from shallow to deep; latency grows
 * about linearly with the depth, so the first depth that reaches the target is the fastest.
 *
 * The queries are a sample of the buffer's own rows (each left out of its own answer) until
 * the buffer has served searches, then a sample of the queries it served: those are what
 * the recall has to hold for, and they are harder. A synthetic environment asks about
 * states and actions the data never paired (at 30k transitions, depth 16 reached 0.99 on
 * the buffer's own rows and 0.81 on a synthetic episode's queries).
 *
 * Recall is tie-aware: a returned row whose score reaches the k-th exact score counts, so
 * that equally similar rows are interchangeable.
 */
import { z } from 'zod';
import { SeededRandom } from '../random/seeded-random.js';
import { APPROXIMATE_ROUNDS, fetchPastDeadRows, widenFetch } from './buffer-search.js';
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
  /** Queries measured. */
  queries: z.number().int().nonnegative(),
  /**
   * Where they came from: `searches` the buffer served; `new-rows` of a batch being added,
   * measured before they joined the index (fresh queries); or `rows` of the index, each left
   * out of its own answer (a row in the graph finds itself and its links at once, so this
   * overstates the recall of fresh queries; the last resort).
   */
  queriesFrom: z.enum(['rows', 'new-rows', 'searches']).default('rows'),
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
  /** Query vectors (served searches, or rows not in the index yet); used instead of rows when given. */
  served?: readonly Float32Array[];
  /** Where `served` came from (recorded). Default `searches`. */
  queriesFrom?: 'searches' | 'new-rows';
  /** OpenMP threads of the exact search. Default 1. */
  threads?: number;
}

/** A 52-bit hash of a vector's bytes (two 26-bit multiplicative lanes), for ordering a sample. */
function vectorHash(vector: Float32Array): number {
  const words = new Uint32Array(vector.buffer, vector.byteOffset, vector.length);
  let low = 0x811c9dc5;
  let high = 0x01000193;
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    low = Math.imul(low ^ word, 0x9e3779b1);
    high = Math.imul(high ^ (word >>> 7) ^ low, 0x85ebca77);
  }
  return (high >>> 6) * 0x4000000 + (low >>> 6);
}

/** Orders two kept queries by hash, then by their bytes (a total order on distinct vectors). */
function compareKept(
  a: { hash: number; vector: Float32Array },
  b: { hash: number; vector: Float32Array },
): number {
  if (a.hash !== b.hash) return a.hash - b.hash;
  for (let index = 0; index < a.vector.length; index += 1) {
    const difference = a.vector[index]! - b.vector[index]!;
    if (difference !== 0) return difference;
  }
  return a.vector.length - b.vector.length;
}

/**
 * A uniform sample of the distinct query vectors a buffer served, for measuring recall on
 * what is really asked: the `capacity` queries whose hashes are smallest (a bottom-k
 * sample). Unlike a reservoir it depends only on which queries were served, not on their
 * order, so concurrent episodes that search in a different order each run leave the same
 * sample, and a seeded run measures, tunes and retrieves the same way every time.
 */
export class QuerySample {
  /** Kept queries, in increasing (hash, bytes) order. */
  private readonly kept: Array<{ hash: number; vector: Float32Array }> = [];
  private offered = 0;

  constructor(readonly capacity: number) {}

  /** Queries kept. */
  get size(): number {
    return this.kept.length;
  }

  /** Queries offered since the sample was last emptied. */
  get seen(): number {
    return this.offered;
  }

  /** Offers a served query (kept as a copy when it is among the smallest hashes so far). */
  offer(vector: Float32Array): void {
    this.offered += 1;
    const entry = { hash: vectorHash(vector), vector };
    const full = this.kept.length >= this.capacity;
    if (full && compareKept(entry, this.kept[this.kept.length - 1]!) >= 0) return;
    let low = 0;
    let high = this.kept.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareKept(this.kept[middle]!, entry) < 0) low = middle + 1;
      else high = middle;
    }
    const at = this.kept[low];
    if (at && compareKept(at, entry) === 0) return; // already kept
    this.kept.splice(low, 0, { hash: entry.hash, vector: vector.slice() });
    if (this.kept.length > this.capacity) this.kept.pop();
  }

  /** The kept queries, in a fixed order (by hash). */
  vectors(): readonly Float32Array[] {
    return this.kept.map((entry) => entry.vector);
  }
}

/**
 * The queries of a recall measurement and the exact answers it compares with: the k-th best
 * exact score of each. The exact search scans `queries * liveRows` vectors (seconds at large
 * sizes) and lets the event loop run between each few queries, so a server's sessions keep
 * being answered. It depends on the stored vectors only, not on the graph: one reference
 * serves every graph measured on the same rows.
 */
export interface RecallReference {
  queries: readonly Float32Array[];
  /** Each query's own row, left out of its answer (-1: a served query, nothing to leave out). */
  own: readonly number[];
  thresholds: readonly number[];
  /** Where the queries came from (see {@link RecallMeasurement}). */
  queriesFrom: RecallMeasurement['queriesFrom'];
}

/** The {@link RecallReference} of `input` (its `index` is only used for the exact scan). */
export async function recallReference(input: RecallTuningInput): Promise<RecallReference> {
  const fromSearches = input.served !== undefined && input.served.length > 0;
  const own = fromSearches
    ? input.served!.map(() => -1)
    : sampleLiveRows(input, input.queries ?? 100, input.seed ?? 1);
  const queries = fromSearches ? input.served! : own.map((row) => input.vectors.row(row).slice());
  const thresholds = await exactThresholds(input, queries, own, input.k ?? 8);
  const queriesFrom = fromSearches ? (input.queriesFrom ?? 'searches') : 'rows';
  return { queries, own, thresholds, queriesFrom };
}

/**
 * Measures recall@k of `index` at increasing search depths and leaves it at the shallowest
 * that reaches the target (else the deepest tried), against `reference` (computed from `input`
 * when not given). The depth ladder runs without a break, so no search beside it ever runs at
 * a depth being tried.
 */
export async function tuneSearchDepth(
  input: RecallTuningInput,
  reference?: RecallReference,
): Promise<RecallMeasurement> {
  const started = performance.now();
  const k = input.k ?? 8;
  const { index } = input;
  const { queries, own, thresholds, queriesFrom } = reference ?? (await recallReference(input));
  const measured = (efSearch: number) => {
    index.setDepths({ efSearch });
    return measureRecall(index, queries, own, thresholds, k, input);
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
    queries: queries.length,
    queriesFrom,
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

/** Queries per exact scan of every row; the event loop runs between scans. */
const QUERIES_PER_SCAN = 16;

/** Rows the JavaScript scan reads between two turns of the event loop. */
const ROWS_PER_TURN = 4096;

/** Lets the event loop run (timers, sockets) before going on. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Per query, the k-th best exact score among the live rows other than its own: an exact
 * scan in faiss where the addon has one (dead rows and the own row filtered out of a few
 * more than k), else in JavaScript.
 */
async function exactThresholds(
  input: RecallTuningInput,
  queries: readonly Float32Array[],
  own: readonly number[],
  k: number,
): Promise<number[]> {
  const { vectors, isLive } = input;
  const thresholds: number[] = queries.map(() => Number.NaN);
  const dead = vectors.size - input.liveRows;
  const fetch = Math.min(vectors.size, k + 1 + (dead > 0 ? 16 : 0));
  const missing: number[] = [];
  for (let first = 0; first < queries.length; first += QUERIES_PER_SCAN) {
    const count = Math.min(QUERIES_PER_SCAN, queries.length - first);
    const stacked = new Float32Array(count * vectors.dimension);
    for (let offset = 0; offset < count; offset += 1) {
      stacked.set(queries[first + offset]!, offset * vectors.dimension);
    }
    const exact =
      fetch > 0 ? input.index.searchExact(stacked, fetch, input.threads ?? 1) : undefined;
    for (let offset = 0; offset < count; offset += 1) {
      const query = first + offset;
      if (!exact) {
        missing.push(query);
        continue;
      }
      let taken = 0;
      for (let position = offset * fetch; position < (offset + 1) * fetch; position += 1) {
        const label = exact.labels[position]!;
        if (label < 0 || label === own[query] || !isLive(label)) continue;
        taken += 1;
        if (taken === k) {
          thresholds[query] = exact.scores[position]!;
          break;
        }
      }
      if (taken < k && taken < input.liveRows - (own[query]! >= 0 ? 1 : 0)) missing.push(query);
      else if (taken < k) thresholds[query] = Number.NEGATIVE_INFINITY;
    }
    if (exact) await nextTurn();
  }
  if (missing.length > 0) {
    // A blocked brute-force scan: each row loaded once, scored against every query.
    const best = missing.map(() => new TopK(k));
    for (let row = 0; row < vectors.size; row += 1) {
      if (row % ROWS_PER_TURN === ROWS_PER_TURN - 1) await nextTurn();
      if (!isLive(row)) continue;
      for (const [position, query] of missing.entries()) {
        if (row === own[query]) continue;
        const top = best[position]!;
        const score = vectors.dot(queries[query]!, row);
        if (score > top.threshold) top.offer(row, score);
      }
    }
    for (const [position, query] of missing.entries()) {
      const top = best[position]!;
      thresholds[query] = top.scores[top.scores.length - 1] ?? Number.NEGATIVE_INFINITY;
    }
  }
  return thresholds;
}

/**
 * Tie-aware recall@k of what the buffer's searches return with the index as it is set now
 * (own rows left out), and the median latency of the index searches. Each query asks for as
 * many rows as the searches do (past the dead rows), plus its own row; where fewer than k live
 * rows come back it asks again as they do (`widenFetch`), and where they would then scan
 * exactly it counts the exact answer. In a capped buffer the evicted rows crowd the written-
 * back ones the queries are about (on ALFWorld served with a cap, 8.6 of each query's first
 * 17 rows were dead): measured on the first round alone, no depth reached the target there,
 * while the searches' answers had recall 0.96 at depth 16.
 */
function measureRecall(
  index: FaissVectorIndex,
  queries: readonly Float32Array[],
  own: readonly number[],
  thresholds: readonly number[],
  k: number,
  input: RecallTuningInput,
): { recall: number; medianMs: number } {
  const { isLive } = input;
  const total = index.size;
  const first = Math.min(total, fetchPastDeadRows(k, input.vectors.size - input.liveRows) + 1);
  let hits = 0;
  const times: number[] = [];
  queries.forEach((vector, query) => {
    const begin = performance.now();
    let fetch = first;
    let found: number[] = [];
    for (let round = 0; round < APPROXIMATE_ROUNDS; round += 1) {
      const { labels, scores } = index.search(vector, fetch);
      found = [];
      for (let position = 0; position < labels.length && found.length < k; position += 1) {
        const label = labels[position]!;
        if (label === own[query] || label < 0 || !isLive(label)) continue;
        found.push(scores[position]!);
      }
      if (found.length >= k || fetch >= total) break;
      fetch = widenFetch(fetch, total);
    }
    times.push(performance.now() - begin);
    if (found.length < k) {
      // The search scans exactly now (an HNSW index's rounds are approximate): exact answer.
      hits += Math.min(k, input.liveRows - (own[query]! >= 0 ? 1 : 0));
      return;
    }
    for (const score of found) if (score >= thresholds[query]! - 1e-5) hits += 1;
  });
  times.sort((a, b) => a - b);
  return {
    recall: queries.length === 0 ? 1 : hits / (queries.length * k),
    medianMs: times[Math.floor(times.length / 2)] ?? 0,
  };
}
