/**
 * Options, results and statistics of `ReplayBuffer`: the zod schemas users' options are
 * checked against, and how index options resolve to the settings a manifest records.
 */
import { z } from 'zod';
import type { ExperienceSource } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { PhiWeightsSchema, type StoredIndex } from './buffer-files.js';
import type { VectorIndexConfig } from './faiss-index.js';
import type { RecallMeasurement } from './index-tuning.js';

/**
 * Which vector index to use: exact flat inner product, or an HNSW graph for large buffers.
 * With `targetRecall`, the buffer picks the HNSW search depth (and, unless `m` is given,
 * the graph degree) that reaches that recall@8, measured on its own vectors against exact
 * search, again each time it grows past twice the size last measured.
 */
export const ReplayIndexOptionsSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('flat') }),
  z.object({
    type: z.literal('hnsw'),
    /**
     * Links per node (faiss `HNSW<m>,Flat`). Default 32; with `targetRecall`, 16 to start,
     * doubled (the graph rebuilt from the stored vectors) while the target is out of reach.
     */
    m: z.number().int().min(4).max(128).optional(),
    /** Candidates kept while inserting: build quality vs build time. Default 40. */
    efConstruction: z.number().int().min(8).max(4096).optional(),
    /**
     * Candidates kept while searching: recall vs latency. Default 128 (faiss' own default,
     * 16, loses recall at k = 8); with `targetRecall`, chosen by measurement.
     */
    efSearch: z.number().int().min(8).max(4096).optional(),
    /** Recall@8 to reach, e.g. 0.95: efSearch (and m) are then tuned by measurement. */
    targetRecall: z.number().gt(0).max(1).optional(),
  }),
]);
/** Index options as accepted (defaults not yet applied). */
export type ReplayIndexOptions = z.input<typeof ReplayIndexOptionsSchema>;

/** Graph degree a tuned index starts from, and the most it is raised to. */
export const TUNED_DEGREE_START = 16;
export const TUNED_DEGREE_MAX = 64;

/** The settings `options` ask for, every parameter resolved. */
export function resolveIndex(options: ReplayIndexOptions | undefined): StoredIndex {
  const parsed = ReplayIndexOptionsSchema.parse(options ?? { type: 'flat' });
  if (parsed.type === 'flat') return { type: 'flat' };
  const tuned = parsed.targetRecall !== undefined;
  return {
    type: 'hnsw',
    m: parsed.m ?? (tuned ? TUNED_DEGREE_START : 32),
    efConstruction: parsed.efConstruction ?? 40,
    efSearch: parsed.efSearch ?? 128,
    ...(tuned ? { targetRecall: parsed.targetRecall, autoDegree: parsed.m === undefined } : {}),
  };
}

/** The faiss configuration of stored settings. */
export function vectorIndexConfig(index: StoredIndex): VectorIndexConfig {
  if (index.type === 'flat') return { type: 'flat' };
  return {
    type: 'hnsw',
    m: index.m,
    efConstruction: index.efConstruction,
    efSearch: index.efSearch,
    ...(index.targetRecall === undefined ? {} : { targetRecall: index.targetRecall }),
  };
}

const isEmbeddingModel = (value: unknown): value is EmbeddingModel =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as EmbeddingModel).id === 'string' &&
  Number.isInteger((value as EmbeddingModel).dimension) &&
  typeof (value as EmbeddingModel).embed === 'function';

/** Options of `ReplayBuffer.create` and `ReplayBuffer.open`. */
export const ReplayBufferOptionsSchema = z.object({
  /** Embeds phi(s, a); a saved buffer only opens with an embedder of the same `id`. */
  embedder: z.custom<EmbeddingModel>(isEmbeddingModel, {
    message: 'expected an EmbeddingModel ({ id, dimension, embed })',
  }),
  /**
   * Vector index for a new buffer (default flat). An existing buffer keeps its own unless
   * rebuilt; a new `efSearch` or `targetRecall` applies without a rebuild.
   */
  index: ReplayIndexOptionsSchema.optional(),
  /**
   * Most transitions kept. Beyond it the oldest synthetic/real transitions are evicted
   * first-in first-out; offline (seed) transitions are never evicted, so a buffer of only
   * offline data may exceed it. Unbounded when absent.
   */
  capacity: z.number().int().positive().optional(),
  /** Weights of state, action and instruction in phi(s, a) (see `phi.ts`); default 1, 1, 0. */
  phiWeights: PhiWeightsSchema.partial().optional(),
  /** A filtered search first asks faiss for `k * overFetch` (scaled by the filter's selectivity). */
  overFetch: z.number().int().min(1).max(1024).default(4),
  /** When a filter can match at most this many transitions, scan them exactly instead. */
  exactScanBelow: z.number().int().nonnegative().default(4096),
  /** Compact (drop evicted rows from index and files) once this share of slots is evicted. */
  compactAt: z.number().gt(0).max(1).default(0.25),
  /**
   * OpenMP threads faiss uses for batch work: inserting a batch into an HNSW graph,
   * rebuilding one, and the exact scans of a recall measurement. A search always runs on one
   * (one query at a time is what the buffer asks). Default `DREAMGYM_FAISS_THREADS`, else 1:
   * a graph built on several threads depends on their timing, so its searches (and a seeded
   * run that retrieves through it) differ from run to run; more threads build large buffers
   * faster. Needs the faiss-node addon the set-up compiles; a stock one runs on
   * `OMP_NUM_THREADS`.
   */
  threads: z.number().int().min(1).max(1024).optional(),
  /**
   * Queries sampled per recall measurement of a `targetRecall` index. Default 400: on 100 the
   * tuned depth is noise (ALFWorld's served queries, 8 samples: efSearch 64 to 192, half of
   * them below the target on the others); on 400, 96 in 7 of 8 and 128 once. A measurement's
   * exact scan costs queries x rows.
   */
  recallQueries: z.number().int().min(10).max(100_000).default(400),
  /** Receives warnings (torn last record, stale lock); default `process.emitWarning`. */
  onWarning: z.custom<(message: string) => void>((value) => typeof value === 'function').optional(),
});
/** Options of a replay buffer as accepted (defaults not yet applied). */
export type ReplayBufferOptions = z.input<typeof ReplayBufferOptionsSchema>;

/** Extra options of `ReplayBuffer.open`. */
export interface ReplayBufferOpenOptions extends ReplayBufferOptions {
  /**
   * Re-embed every stored record with this embedder into a new index (default false):
   * repairs a corrupt or truncated index, and changes embedder, phi weights or index type.
   */
  rebuild?: boolean;
  /** Open without taking the lock; `add`, `flush` and `rebuild` then throw. */
  readOnly?: boolean;
}

/** What `ReplayBuffer.add` did. */
export interface ReplayAddResult {
  /** Ids of the transitions stored, in order. */
  added: string[];
  /**
   * Transitions not stored as records of their own: exact duplicates (same domain, state,
   * action and next state, and the same instruction where phi embeds it, under another id)
   * and transitions already stored under their id.
   */
  duplicates: number;
  /**
   * Of the duplicates, those counted as another occurrence of a stored (or just added)
   * transition: the ones under a new id. A transition added again under its own id is the
   * same record, not a new occurrence, and is not counted.
   */
  counted: number;
  /** Transitions evicted to stay within capacity. */
  evicted: number;
}

/** Counts reported by `ReplayBuffer.stats`. */
export interface ReplayBufferStats {
  /** Live transitions. */
  size: number;
  /** Occurrences of the live transitions: `size` plus the exact duplicates counted on them. */
  occurrences: number;
  /**
   * Rows in the vector index: one per distinct phi input (state and action), so transitions
   * that differ only in what followed share one; rows no live transition uses stay until
   * the next compaction.
   */
  indexedRows: number;
  /** Rows a live transition uses. */
  liveRows: number;
  capacity: number | undefined;
  bySource: Record<ExperienceSource, number>;
  byDomain: Record<string, number>;
  tasks: number;
  embedderId: string;
  dimension: number;
  index: VectorIndexConfig;
  /** The last recall measurement of an index with a `targetRecall` (undefined otherwise). */
  recall: RecallMeasurement | undefined;
  /** Directory of a persistent buffer. */
  directory: string | undefined;
  /** Records added since the last flush (durable in the log; their rows and vectors not yet). */
  unflushedRows: number;
  /** Duplicates suppressed since this buffer object was opened. */
  duplicatesSuppressed: number;
}
