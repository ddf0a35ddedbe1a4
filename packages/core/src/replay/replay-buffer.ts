/**
 * `ReplayBuffer`: DreamGym's memory of transitions. Offline real transitions seed it,
 * synthetic and real ones are appended while training, and the experience model retrieves
 * the top-k stored transitions most similar to (s_t, a_t) by cosine of phi(s, a).
 *
 * This class coordinates (options, the lock, one mutation at a time, the public API); the
 * parts live beside it and share one `BufferState` (`buffer-state.ts`):
 * - `slot-table.ts`         one slot per stored transition: records, filter facets, counts;
 * - `phi-rows.ts`           one vector row per distinct phi input, shared by its transitions;
 * - `buffer-contents.ts`    the two kept in step;
 * - `buffer-loading.ts`     opening: manifest and compatibility checks, log replay, reload,
 *                           version-1 conversion;
 * - `buffer-adding.ts`      de-duplication, storing a batch, eviction past the capacity;
 * - `buffer-index.ts`       the faiss index kept in step with the row vectors;
 * - `recall-upkeep.ts`      when a `targetRecall` index is measured, and on which queries;
 * - `index-tuning.ts`       the recall measurement and the search depth that meets a target;
 * - `buffer-search.ts`      top-k over the index (or an exact scan) and the final ranking;
 * - `buffer-persistence.ts` flush, manifest, and compaction's rewrite of the files;
 * - `buffer-files.ts`       the files on disk and the manifest's schema;
 * - `compaction.ts`         dropping evicted transitions from the contents;
 * - `faiss-index.ts`        the faiss index itself.
 */
import { mkdir } from 'node:fs/promises';
import type { z } from 'zod';
import { ConfigError, IndexError } from '../errors.js';
import { parseRecord } from '../mdp/jsonl.js';
import { type Transition, TransitionSchema } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { parseOptions } from '../parse-options.js';
import { evictOverCapacity, planBatch, storeBatch } from './buffer-adding.js';
import { bufferPath, PhiWeightsSchema } from './buffer-files.js';
import { loadBuffer } from './buffer-loading.js';
import { BufferLock } from './buffer-lock.js';
import { compactBuffer, flushBuffer } from './buffer-persistence.js';
import { type SearchSources, searchBuffer, searchExact } from './buffer-search.js';
import { type BufferState, emptyContents } from './buffer-state.js';
import { cachingEmbedder } from './caching-embedder.js';
import { defaultFaissThreads, loadFaiss } from './faiss-index.js';
import { QuerySample, type RecallMeasurement } from './index-tuning.js';
import { embedPhi } from './phi.js';
import { hasRecallTarget, noteServedQuery, tune, tuneIfStale } from './recall-upkeep.js';
import {
  type ReplayAddResult,
  type ReplayBufferOpenOptions,
  type ReplayBufferOptions,
  ReplayBufferOptionsSchema,
  type ReplayBufferStats,
  type ReplayIndexOptions,
  ReplayIndexOptionsSchema,
  resolveIndex,
  vectorIndexConfig,
} from './replay-options.js';
import type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from './retriever.js';

export {
  type ReplayAddResult,
  type ReplayBufferOpenOptions,
  type ReplayBufferOptions,
  ReplayBufferOptionsSchema,
  type ReplayBufferStats,
  type ReplayIndexOptions,
  ReplayIndexOptionsSchema,
} from './replay-options.js';

/** Query part texts whose embeddings are remembered (the memo is emptied when full). */
const QUERY_PART_CACHE = 4096;

/**
 * A replay buffer of transitions with top-k retrieval by cosine of phi(s, a).
 *
 * @example
 * const buffer = await ReplayBuffer.open('runs/buffer', { embedder: new HashingEmbedder() });
 * await buffer.add(trajectoryToTransitions(trajectory));
 * const demos = await buffer.search({ state, action }, 8, { domain: 'alfworld' });
 * await buffer.close();
 */
export class ReplayBuffer implements TransitionRetriever {
  private readonly state: BufferState;
  private readonly capacity: number | undefined;
  private readonly overFetch: number;
  private readonly exactScanBelow: number;
  private readonly compactAt: number;
  /** Embeddings of recent query parts (states recur within and across episodes). */
  private readonly queryParts: EmbeddingModel;
  private duplicatesSuppressed = 0;

  private lock: BufferLock | undefined;
  private closed = false;
  /** Serialises mutations: log order must equal slot order. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(options: z.output<typeof ReplayBufferOptionsSchema>) {
    const phiWeights = PhiWeightsSchema.parse(options.phiWeights ?? {});
    if (phiWeights.state + phiWeights.action + phiWeights.instruction <= 0) {
      throw new ConfigError(
        'ReplayBuffer option `phiWeights`: at least one weight must be positive.',
        { field: 'phiWeights' },
      );
    }
    const dimension = options.embedder.dimension;
    this.state = {
      embedder: options.embedder,
      dimension,
      threads: options.threads ?? defaultFaissThreads(),
      recallQueries: options.recallQueries,
      served: new QuerySample(options.recallQueries),
      warn: options.onWarning ?? ((message) => process.emitWarning(message, 'ReplayBufferWarning')),
      indexSettings: resolveIndex(options.index),
      phiWeights,
      contents: emptyContents({ directory: undefined, phiWeights, dimension }),
      index: undefined,
      recall: undefined,
      evictCursor: 0,
      directory: undefined,
      readOnly: false,
      writer: undefined,
      logLines: 0,
      flushedRows: 0,
      flushedSlots: 0,
    };
    this.capacity = options.capacity;
    this.overFetch = options.overFetch;
    this.exactScanBelow = options.exactScanBelow;
    this.compactAt = options.compactAt;
    this.queryParts = cachingEmbedder(options.embedder, QUERY_PART_CACHE);
  }

  /** A buffer in memory only (nothing written to disk). */
  static create(options: ReplayBufferOptions): ReplayBuffer {
    return new ReplayBuffer(parseOptions(ReplayBufferOptionsSchema, options, 'ReplayBuffer'));
  }

  /**
   * Opens the buffer stored in `directory`, creating it when empty. Flushed vectors are
   * reloaded, not re-embedded; records added after the last flush are embedded again.
   *
   * @throws IndexError on a mismatched embedder or a corrupt / truncated index (the message
   * says to pass `rebuild: true`); LockedError when another live process writes it;
   * DatasetFormatError on a corrupt committed record.
   */
  static async open(directory: string, options: ReplayBufferOpenOptions): Promise<ReplayBuffer> {
    const parsed = parseOptions(ReplayBufferOptionsSchema, options, 'ReplayBuffer.open');
    // Fails early, with build instructions, where the faiss addon is missing.
    await loadFaiss();
    const buffer = new ReplayBuffer(parsed);
    const { state } = buffer;
    state.directory = directory;
    state.readOnly = options.readOnly === true;
    if (!state.readOnly) {
      await mkdir(directory, { recursive: true });
      buffer.lock = await BufferLock.acquire(bufferPath(directory, 'lock'), state.warn);
    }
    try {
      await loadBuffer(state, parsed, options.rebuild === true);
    } catch (error) {
      await buffer.lock?.release();
      throw error;
    }
    return buffer;
  }

  private get sources(): SearchSources {
    const { contents } = this.state;
    return {
      slots: contents.slots,
      rows: contents.rows,
      vectors: contents.vectors,
      index: this.state.index,
      exactIndex: this.state.indexSettings.type === 'flat',
      overFetch: this.overFetch,
      exactScanBelow: this.exactScanBelow,
    };
  }

  // ---------------------------------------------------------------- adding

  /**
   * Validates, de-duplicates, embeds (one embedding call for the whole batch), logs and
   * indexes `transitions`, then evicts to stay within capacity. Each record is committed
   * to `records.jsonl` by the time this resolves. An exact duplicate (same domain, state,
   * action and next state as a stored transition, and the same instruction where phi
   * embeds it, under another id) is not stored again but counted: retrieved transitions
   * carry their `count`, so that the experience model can weigh how often each outcome
   * occurred. A transition whose state and action are stored already shares their vector
   * (nothing is embedded for it).
   *
   * @throws DatasetFormatError naming `transitions.<i>.<field>` for an invalid transition;
   * ConfigError for an id already stored with different content.
   */
  async add(transitions: readonly Transition[]): Promise<ReplayAddResult> {
    this.assertWritable('add');
    const valid = transitions.map((transition, index) =>
      parseRecord(TransitionSchema, transition, {
        file: 'ReplayBuffer.add',
        fieldPrefix: `transitions.${index}`,
      }),
    );
    return this.exclusive(async () => {
      const plan = planBatch(this.state.contents, valid);
      const { duplicates, counted } = plan;
      this.duplicatesSuppressed += duplicates;
      await storeBatch(this.state, plan);
      if (plan.fresh.length === 0) return { added: [], duplicates, counted, evicted: 0 };
      const evicted = await evictOverCapacity(this.state, this.capacity, this.compactAt);
      await tuneIfStale(this.state);
      return { added: plan.fresh.map((transition) => transition.id), duplicates, counted, evicted };
    });
  }

  // ---------------------------------------------------------------- recall tuning

  /**
   * Measures the recall of an HNSW index with a `targetRecall` now and sets the search depth
   * that reaches it: on the searches it served when it has a sample of them, else on its own
   * rows (which overstate fresh queries' recall). Undefined for an index without a target.
   * A read-only buffer keeps the result in memory. Searches are answered while it measures:
   * the exact scan it compares with lets the event loop run between each 16 queries.
   */
  async measureRecall(): Promise<RecallMeasurement | undefined> {
    if (this.closed) throw new IndexError('ReplayBuffer.measureRecall: the buffer is closed.');
    return this.exclusive(async () => {
      if (!hasRecallTarget(this.state) || !this.state.index) return undefined;
      await tune(this.state);
      return this.state.recall;
    });
  }

  // ---------------------------------------------------------------- searching

  /**
   * The `k` stored transitions most similar to `query` by cosine of phi(s, a), most similar
   * first, among those passing `filter`; equally similar ones (the same state and action)
   * most frequent first. Exact for a flat index; HNSW is approximate (see `stats().recall`).
   */
  async search(
    query: RetrievalQuery,
    k: number,
    filter?: RetrievalFilter,
  ): Promise<ScoredTransition[]> {
    if (this.closed) throw new IndexError('ReplayBuffer.search: the buffer is closed.');
    if (!Number.isInteger(k) || k < 0)
      throw new RangeError(`search: k must be a non-negative integer, got ${k}.`);
    if (k === 0 || this.state.contents.slots.live === 0) return [];
    return this.searchVector(await this.embedQuery(query), k, filter);
  }

  /**
   * phi of a query, as {@link ReplayBuffer.search} embeds it (recent states and actions are
   * remembered, not embedded again).
   */
  async embedQuery(query: RetrievalQuery): Promise<Float32Array> {
    if (this.closed) throw new IndexError('ReplayBuffer.embedQuery: the buffer is closed.');
    const vector = new Float32Array(this.state.dimension);
    await embedPhi(
      this.queryParts,
      [{ stateText: query.state.text, action: query.action, instruction: query.instruction }],
      this.state.phiWeights,
      vector,
    );
    return vector;
  }

  /**
   * {@link ReplayBuffer.search} with an already-computed phi vector (unit length). With a
   * `targetRecall`, the buffer keeps a sample of these queries (the same whatever order they
   * come in) and, once the sample is full, the next `add` measures its recall on them.
   */
  searchVector(vector: Float32Array, k: number, filter?: RetrievalFilter): ScoredTransition[] {
    const found = searchBuffer(this.sources, vector, k, filter);
    if (hasRecallTarget(this.state) && k > 0) noteServedQuery(this.state, vector);
    return found;
  }

  /**
   * Brute-force top-k: a scan of every stored vector (typed arrays, no faiss). Always exact;
   * the reference for an HNSW index's recall, and the baseline in the benchmark.
   */
  searchExactVector(vector: Float32Array, k: number, filter?: RetrievalFilter): ScoredTransition[] {
    return searchExact(this.sources, vector, k, filter);
  }

  // ---------------------------------------------------------------- reading

  /** Number of live transitions. */
  get size(): number {
    return this.state.contents.slots.live;
  }

  /** The stored transition with this id, if any. */
  get(id: string): Transition | undefined {
    const { slots } = this.state.contents;
    const slot = slots.slotOf(id);
    return slot === undefined ? undefined : slots.served(slot);
  }

  /** Every live transition, oldest first. */
  *transitions(): IterableIterator<Transition> {
    const { slots } = this.state.contents;
    for (let slot = 0; slot < slots.length; slot += 1) {
      if (slots.isLive(slot)) yield slots.served(slot);
    }
  }

  /** Counts by source and domain, index settings and measured recall, flush state. */
  stats(): ReplayBufferStats {
    const { state } = this;
    const { slots, rows } = state.contents;
    return {
      size: slots.live,
      occurrences: slots.occurrences,
      indexedRows: rows.size,
      liveRows: rows.live,
      capacity: this.capacity,
      bySource: slots.bySource(),
      byDomain: slots.byDomain(),
      tasks: slots.taskCount,
      embedderId: state.embedder.id,
      dimension: state.dimension,
      index: vectorIndexConfig(state.indexSettings),
      recall: state.recall,
      directory: state.directory,
      unflushedRows: state.directory ? slots.length - state.flushedSlots : 0,
      duplicatesSuppressed: this.duplicatesSuppressed,
    };
  }

  // ---------------------------------------------------------------- writing files

  /**
   * Writes the vectors, rows and faiss index of everything added so far and the manifest,
   * and syncs the record log. Reopening after a flush re-embeds nothing.
   */
  async flush(): Promise<void> {
    this.assertWritable('flush');
    return this.exclusive(() => flushBuffer(this.state));
  }

  /**
   * Re-embeds every live transition into a new index (optionally of another type) and
   * rewrites the buffer's files. Repairs what `open` reports as corrupt; also drops
   * evicted rows.
   */
  async rebuild(options: { index?: ReplayIndexOptions } = {}): Promise<void> {
    this.assertWritable('rebuild');
    return this.exclusive(async () => {
      if (options.index) {
        parseOptions(ReplayIndexOptionsSchema, options.index, 'rebuild');
        this.state.indexSettings = resolveIndex(options.index);
        this.state.recall = undefined;
      }
      await compactBuffer(this.state, true);
    });
  }

  /** Flushes (when writable) and releases the lock. Further calls throw. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.exclusive(async () => {
      if (!this.state.readOnly) await flushBuffer(this.state);
      await this.state.writer?.close();
      this.state.writer = undefined;
    });
    this.closed = true;
    await this.lock?.release();
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private assertWritable(operation: string): void {
    if (this.closed) throw new IndexError(`ReplayBuffer.${operation}: the buffer is closed.`);
    if (this.state.readOnly) {
      throw new IndexError(
        `ReplayBuffer.${operation}: the buffer was opened with { readOnly: true }.`,
        { path: this.state.directory },
      );
    }
  }
}
