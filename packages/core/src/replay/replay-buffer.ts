/**
 * `ReplayBuffer`: DreamGym's memory of transitions. Offline real transitions seed it,
 * synthetic and real ones are appended while training, and the experience model retrieves
 * the top-k stored transitions most similar to (s_t, a_t) by cosine of phi(s, a).
 *
 * This class orchestrates; the parts live beside it:
 * - `slot-table.ts`      one slot per stored transition: records, filter facets, counts;
 * - `phi-rows.ts`        one vector row per distinct phi input, shared by its transitions;
 * - `buffer-contents.ts` the two kept in step;
 * - `buffer-search.ts`   top-k over the index (or an exact scan) and the final ranking;
 * - `index-tuning.ts`    recall measurement and the search depth that meets a target;
 * - `buffer-files.ts`    the files on disk and the manifest;
 * - `compaction.ts`      dropping evicted transitions, and rebuilds;
 * - `faiss-index.ts`     the faiss index itself.
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import type { z } from 'zod';
import { ConfigError, IndexError } from '../errors.js';
import { JsonlWriter, parseRecord, writeJsonl } from '../mdp/jsonl.js';
import { type Transition, TransitionSchema } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { BufferContents } from './buffer-contents.js';
import {
  appendAfter,
  bufferPath,
  FILES,
  type Manifest,
  PhiWeightsSchema,
  readInt32File,
  readManifestFile,
  readVectorFile,
  type StoredIndex,
  writeManifestFile,
} from './buffer-files.js';
import { BufferLock } from './buffer-lock.js';
import { type SearchSources, searchBuffer, searchExact } from './buffer-search.js';
import { compactContents } from './compaction.js';
import { defaultFaissThreads, FaissVectorIndex, loadFaiss } from './faiss-index.js';
import { QuerySample, type RecallMeasurement, tuneSearchDepth } from './index-tuning.js';
import { embedPhi, type PhiInput, type PhiWeights } from './phi.js';
import { dropTornTail, ReplayLogEntrySchema, readReplayLog } from './replay-log.js';
import {
  parseOptions,
  type ReplayAddResult,
  type ReplayBufferOpenOptions,
  type ReplayBufferOptions,
  ReplayBufferOptionsSchema,
  type ReplayBufferStats,
  type ReplayIndexOptions,
  ReplayIndexOptionsSchema,
  resolveIndex,
  TUNED_DEGREE_MAX,
  vectorIndexConfig,
} from './replay-options.js';
import type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from './retriever.js';
import { sameContent } from './transition-keys.js';
import { VectorStore } from './vector-store.js';

export {
  type ReplayAddResult,
  type ReplayBufferOpenOptions,
  type ReplayBufferOptions,
  ReplayBufferOptionsSchema,
  type ReplayBufferStats,
  type ReplayIndexOptions,
  ReplayIndexOptionsSchema,
} from './replay-options.js';

/** Rows embedded per call when catching up or rebuilding, to bound memory. */
const EMBED_BATCH = 8192;
/** Live rows from which a `targetRecall` index is measured (smaller graphs are near exact). */
const TUNE_FROM_ROWS = 1000;
/** Rows in one call into faiss from which a batch insert uses several threads. */
const THREADED_ADD_ROWS = 256;
/** Query part texts whose embeddings are remembered (the memo is emptied when full). */
const QUERY_PART_CACHE = 4096;

/**
 * `embedder` with a bounded memo of its embeddings by text: a query's state is often one
 * seen before (the same place, `Nothing happens.`), and so is its action.
 */
function cachingEmbedder(embedder: EmbeddingModel, capacity: number): EmbeddingModel {
  const memo = new Map<string, Float32Array>();
  return {
    get id() {
      return embedder.id;
    },
    get dimension() {
      return embedder.dimension;
    },
    async embed(texts: readonly string[]): Promise<Float32Array[]> {
      // The answer comes from this call's own map: clearing the memo (when it is full, or in
      // a concurrent call) never loses a vector this call already found.
      const vectors = new Map<string, Float32Array>();
      for (const text of texts) {
        const cached = memo.get(text);
        if (cached) vectors.set(text, cached);
      }
      const missing = [...new Set(texts.filter((text) => !vectors.has(text)))];
      if (missing.length > 0) {
        const embedded = await embedder.embed(missing);
        if (memo.size + missing.length > capacity) memo.clear();
        missing.forEach((text, position) => {
          vectors.set(text, embedded[position]!);
          memo.set(text, embedded[position]!);
        });
      }
      return texts.map((text) => vectors.get(text)!);
    },
  };
}

function phiInput(transition: Transition): PhiInput {
  return {
    stateText: transition.state.text,
    action: transition.action,
    instruction: transition.instruction,
  };
}

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
  private readonly embedder: EmbeddingModel;
  private readonly dimension: number;
  private indexSettings: StoredIndex;
  private phiWeights: PhiWeights;
  private readonly capacity: number | undefined;
  private readonly overFetch: number;
  private readonly exactScanBelow: number;
  private readonly compactAt: number;
  private readonly threads: number;
  private readonly recallQueries: number;
  private readonly warn: (message: string) => void;

  private contents: BufferContents;
  private index: FaissVectorIndex | undefined;
  private recall: RecallMeasurement | undefined;
  /** A sample of the queries served, for measuring recall on what is really asked. */
  private readonly served: QuerySample;
  /** Embeddings of recent query parts (states recur within and across episodes). */
  private readonly queryParts: EmbeddingModel;
  private evictCursor = 0;
  private duplicatesSuppressed = 0;

  private directory: string | undefined;
  private readOnly = false;
  private lock: BufferLock | undefined;
  private writer: JsonlWriter<typeof ReplayLogEntrySchema> | undefined;
  /** Rows of `vectors.f32` / `index.faiss`, and slots of `rows.i32`, on disk. */
  private flushedRows = 0;
  private flushedSlots = 0;
  private closed = false;
  /** Serialises mutations: log order must equal slot order. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(options: z.output<typeof ReplayBufferOptionsSchema>) {
    this.embedder = options.embedder;
    this.dimension = options.embedder.dimension;
    this.indexSettings = resolveIndex(options.index);
    this.phiWeights = PhiWeightsSchema.parse(options.phiWeights ?? {});
    if (this.phiWeights.state + this.phiWeights.action + this.phiWeights.instruction <= 0) {
      throw new ConfigError(
        'ReplayBuffer option `phiWeights`: at least one weight must be positive.',
        { field: 'phiWeights' },
      );
    }
    this.capacity = options.capacity;
    this.overFetch = options.overFetch;
    this.exactScanBelow = options.exactScanBelow;
    this.compactAt = options.compactAt;
    this.threads = options.threads ?? defaultFaissThreads();
    this.recallQueries = options.recallQueries;
    this.served = new QuerySample(options.recallQueries);
    this.queryParts = cachingEmbedder(options.embedder, QUERY_PART_CACHE);
    this.warn =
      options.onWarning ?? ((message) => process.emitWarning(message, 'ReplayBufferWarning'));
    this.contents = this.emptyContents();
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
    buffer.directory = directory;
    buffer.readOnly = options.readOnly === true;
    if (!buffer.readOnly) {
      await mkdir(directory, { recursive: true });
      buffer.lock = await BufferLock.acquire(bufferPath(directory, 'lock'), buffer.warn);
    }
    try {
      await buffer.load(parsed, options.rebuild === true);
    } catch (error) {
      await buffer.lock?.release();
      throw error;
    }
    return buffer;
  }

  private path(name: keyof typeof FILES): string {
    return bufferPath(this.directory!, name);
  }

  private emptyContents(): BufferContents {
    return new BufferContents(
      this.directory ? this.path('records') : FILES.records,
      this.phiWeights.instruction > 0,
      this.dimension,
    );
  }

  private get sources(): SearchSources {
    return {
      slots: this.contents.slots,
      rows: this.contents.rows,
      vectors: this.contents.vectors,
      index: this.index,
      exactIndex: this.indexSettings.type === 'flat',
      overFetch: this.overFetch,
      exactScanBelow: this.exactScanBelow,
    };
  }

  // ---------------------------------------------------------------- opening

  private async load(
    options: z.output<typeof ReplayBufferOptionsSchema>,
    rebuild: boolean,
  ): Promise<void> {
    const manifest = await this.readManifest(rebuild);
    if (manifest) {
      this.checkCompatible(manifest, options, rebuild);
      // Stored settings stay unless a rebuild is asked to change them; a new search depth
      // or recall target applies at once.
      if (!rebuild || options.index === undefined)
        this.indexSettings = this.adoptStoredIndex(manifest.index, options.index);
      if (!rebuild || options.phiWeights === undefined) this.phiWeights = manifest.phiWeights;
      if (manifest.recall && !rebuild) this.recall = manifest.recall;
    } else if (this.readOnly) {
      throw new IndexError(
        `${this.path('manifest')} does not exist: no replay buffer in ${this.directory}.`,
        { path: this.directory },
      );
    }
    this.contents = this.emptyContents();
    const usable = manifest && !rebuild && manifest.indexedCount > 0;
    // Version 1 kept one vector per record: its vectors become the rows' vectors below.
    const legacy = usable && manifest.version === 1;
    const mapped =
      usable && !legacy ? await this.readRowsFile(manifest.slotCount ?? 0) : new Int32Array(0);
    // The flushed vectors are read (by libuv's threads) while the log is parsed (on this one).
    const preloaded = usable ? this.preloadVectors(manifest.indexedCount) : undefined;
    const { slots } = this.contents;
    const contents = this.contents;
    const log = await readReplayLog(
      this.path('records'),
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
      { chunks: slots.logChunks },
    ).catch((error: unknown) => {
      if (error instanceof RangeError) {
        throw new IndexError(
          `${this.path('rows')} does not match ${FILES.records} (${error.message}). Open the buffer with { rebuild: true } to rebuild rows, vectors and index from ${FILES.records}.`,
          { path: this.path('rows'), cause: error },
        );
      }
      throw error;
    });
    if (log.tornBytes > 0) {
      this.warn(
        `${this.path('records')}: ignoring a truncated last record (${log.tornBytes} bytes, an append interrupted by a crash); it was never committed.`,
      );
      if (!this.readOnly) await dropTornTail(this.path('records'), log.committedBytes);
    }

    if (rebuild || legacy) {
      if (this.readOnly) {
        throw new IndexError(
          rebuild
            ? 'ReplayBuffer.open: { rebuild: true } needs a writable buffer, not { readOnly: true }.'
            : `${this.directory} was written by an earlier version of the replay buffer (one vector per record); open it writable once to convert it (its vectors are kept, nothing is re-embedded).`,
          { path: this.directory },
        );
      }
      if (rebuild) await this.compactNow(true);
      else await this.convertLegacy(manifest!, preloaded);
      return;
    }
    const indexed = usable ? await this.loadVectors(manifest, preloaded) : 0;
    if (this.readOnly && indexed < this.contents.rows.size) {
      throw new IndexError(
        `${this.directory}: records were added after the last flush; open the buffer writable once to index them.`,
        { path: this.directory },
      );
    }
    // Rows of records committed after the last flush (a crash, or no close): embed just those.
    const caughtUp = indexed < this.contents.rows.size;
    await this.embedRows(indexed, this.contents.rows.size);
    this.flushedSlots = Math.min(mapped.length, this.contents.slots.length);
    if (this.staleRecall()) this.tune();
    if (!this.readOnly) {
      this.writer = await JsonlWriter.open(this.path('records'), ReplayLogEntrySchema);
      if (!manifest || caughtUp || mapped.length < this.contents.slots.length)
        await this.flushNow();
    }
  }

  private async readManifest(rebuild: boolean): Promise<Manifest | undefined> {
    const file = this.path('manifest');
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
  private adoptStoredIndex(
    stored: StoredIndex,
    given: ReplayIndexOptions | undefined,
  ): StoredIndex {
    if (stored.type !== 'hnsw' || given?.type !== 'hnsw') return stored;
    const next = { ...stored };
    if (given.efSearch !== undefined) next.efSearch = given.efSearch;
    // The graph degree stays the stored one: chosen by the buffer only where it was from the start.
    if (given.targetRecall !== undefined) next.targetRecall = given.targetRecall;
    return next;
  }

  private checkCompatible(
    manifest: Manifest,
    options: z.output<typeof ReplayBufferOptionsSchema>,
    rebuild: boolean,
  ): void {
    if (rebuild) return;
    if (manifest.embedderId !== this.embedder.id || manifest.dimension !== this.dimension) {
      throw new IndexError(
        `The replay buffer in ${this.directory} was embedded with \`${manifest.embedderId}\` (dimension ${manifest.dimension}), but the embedder given is \`${this.embedder.id}\` (dimension ${this.dimension}). Open it with the embedder it was built with, or pass { rebuild: true } to re-embed its records with this one.`,
        { path: this.path('manifest') },
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
            (given.efConstruction !== undefined &&
              given.efConstruction !== stored.efConstruction))));
    const givenWeights = options.phiWeights && PhiWeightsSchema.parse(options.phiWeights);
    const weightsDiffer =
      givenWeights !== undefined &&
      JSON.stringify(givenWeights) !== JSON.stringify(manifest.phiWeights);
    if (indexDiffers || weightsDiffer) {
      throw new ConfigError(
        `The replay buffer in ${this.directory} uses index ${JSON.stringify(stored)} and phi weights ${JSON.stringify(manifest.phiWeights)}; the options ask for others. Leave them out to use the stored ones, or pass { rebuild: true } to rebuild with the new ones.`,
        { field: indexDiffers ? 'index' : 'phiWeights' },
      );
    }
  }

  /** `rows.i32`'s first `count` values, or none where the file cannot be read. */
  private async readRowsFile(count: number): Promise<Int32Array> {
    if (count === 0) return new Int32Array(0);
    try {
      return await readInt32File(this.path('rows'), count);
    } catch (error) {
      throw new IndexError(
        `cannot read ${this.path('rows')}: ${(error as Error).message}. Open the buffer with { rebuild: true } to rebuild rows, vectors and index from ${FILES.records}.`,
        { path: this.path('rows'), cause: error },
      );
    }
  }

  /**
   * The first `rows` rows of `vectors.f32`, or undefined where they cannot be read: then
   * {@link loadVectors} reads the file again and reports what is wrong with it.
   */
  private async preloadVectors(rows: number): Promise<VectorStore | undefined> {
    const store = new VectorStore(this.dimension);
    try {
      await readVectorFile(this.path('vectors'), store, rows);
      return store;
    } catch {
      return undefined;
    }
  }

  /** Reads `index.faiss` and `vectors.f32` (rest of `preloaded`); returns the rows they hold. */
  private async loadVectors(
    manifest: Manifest,
    preloaded: Promise<VectorStore | undefined> | undefined,
  ): Promise<number> {
    const rebuildHint = `Open the buffer with { rebuild: true } to rebuild the index from ${FILES.records} (re-embeds ${this.contents.slots.live} records).`;
    const index = await FaissVectorIndex.read(this.path('index'), this.dimension).catch((error) => {
      throw new IndexError(`${(error as Error).message}. ${rebuildHint}`, {
        path: this.path('index'),
        cause: error,
      });
    });
    const rows = index.size;
    if (rows < manifest.indexedCount || rows > this.contents.rows.size) {
      throw new IndexError(
        `${this.path('index')} holds ${rows} vectors, but the manifest records ${manifest.indexedCount} and ${FILES.records} gives ${this.contents.rows.size} rows: the index is truncated or stale. ${rebuildHint}`,
        { path: this.path('index') },
      );
    }
    const store = await this.readVectors(rows, preloaded, rebuildHint);
    this.index = index;
    this.contents.vectors = store;
    if (this.indexSettings.type === 'hnsw')
      index.setDepths({ efSearch: this.indexSettings.efSearch });
    this.flushedRows = rows;
    return rows;
  }

  /** The first `rows` rows of `vectors.f32` (continuing `preloaded`), checked for length. */
  private async readVectors(
    rows: number,
    preloaded: Promise<VectorStore | undefined> | undefined,
    rebuildHint: string,
  ): Promise<VectorStore> {
    const vectorFile = this.path('vectors');
    const rowBytes = this.dimension * 4;
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
    const store = early && early.size <= rows ? early : new VectorStore(this.dimension);
    try {
      await readVectorFile(vectorFile, store, rows);
    } catch (error) {
      throw new IndexError(
        `cannot read ${vectorFile}: ${(error as Error).message}. ${rebuildHint}`,
        { path: vectorFile, cause: error },
      );
    }
    return store;
  }

  /**
   * Converts a version-1 buffer (one vector per record): each row takes the vector of the
   * record that created it, the index is built anew, and the files are rewritten.
   */
  private async convertLegacy(
    manifest: Manifest,
    preloaded: Promise<VectorStore | undefined> | undefined,
  ): Promise<void> {
    const recordRows = Math.min(manifest.indexedCount, this.contents.slots.length);
    const old = await this.readVectors(
      recordRows,
      preloaded,
      `Open the buffer with { rebuild: true } to rebuild it from ${FILES.records}.`,
    );
    const { rows } = this.contents;
    const width = this.dimension;
    const vectors = new Float32Array(width);
    let converted = 0;
    while (converted < rows.size && rows.origin(converted) < recordRows) {
      vectors.set(old.row(rows.origin(converted)));
      this.contents.vectors.append(vectors, 1);
      converted += 1;
    }
    await this.embedRows(converted, rows.size, false);
    await this.rebuildIndex();
    this.writer = await JsonlWriter.open(this.path('records'), ReplayLogEntrySchema);
    await this.rewriteFiles();
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
    return this.exclusive(() => this.addNow(valid));
  }

  private async addNow(transitions: readonly Transition[]): Promise<ReplayAddResult> {
    const { slots } = this.contents;
    const { withInstruction } = this.contents;
    const fresh: Transition[] = [];
    /** Occurrences per fresh transition (parallel to `fresh`). */
    const freshCounts: number[] = [];
    /** Ids of the duplicates counted on each fresh transition. */
    const freshAliases: string[][] = [];
    const batchById = new Map<string, Transition>();
    /** Position in `fresh` by content hash. */
    const batchByContent = new Map<string, number>();
    /** Stored slots whose transition occurred again in this batch: slot -> new count, ids. */
    const recounted = new Map<number, { count: number; ids: string[] }>();
    let duplicates = 0;
    let counted = 0;
    transitions.forEach((transition, index) => {
      // A stored id, or the id of a duplicate already counted: the same occurrence again.
      const sameId = slots.slotOf(transition.id) ?? slots.aliasSlotOf(transition.id);
      const stored = sameId === undefined ? batchById.get(transition.id) : slots.peek(sameId);
      if (stored) {
        if (sameContent(stored, transition, withInstruction)) {
          // The same record added again: no new occurrence.
          duplicates += 1;
          return;
        }
        throw new ConfigError(
          `ReplayBuffer.add: transitions.${index}.id \`${transition.id}\` is already in the buffer with a different state, action or next state. Give each transition a unique id.`,
          { field: `transitions.${index}.id` },
        );
      }
      const twinSlot = slots.twinOf(transition);
      if (twinSlot !== undefined) {
        const entry = recounted.get(twinSlot) ?? { count: slots.count(twinSlot), ids: [] };
        entry.count += 1;
        entry.ids.push(transition.id);
        recounted.set(twinSlot, entry);
        batchById.set(transition.id, transition);
        duplicates += 1;
        counted += 1;
        return;
      }
      const key = contentText(transition, withInstruction);
      const twin = batchByContent.get(key);
      if (twin !== undefined) {
        freshCounts[twin]! += 1;
        freshAliases[twin]!.push(transition.id);
        batchById.set(transition.id, transition);
        duplicates += 1;
        counted += 1;
        return;
      }
      batchById.set(transition.id, transition);
      batchByContent.set(key, fresh.length);
      fresh.push(transition);
      freshCounts.push(1);
      freshAliases.push([]);
    });
    this.duplicatesSuppressed += duplicates;
    for (const [slot, { count, ids }] of recounted) {
      await this.writer?.write({ op: 'count', id: slots.peek(slot).id, count, ids });
      slots.setCount(slot, count);
      for (const id of ids) slots.addAlias(slot, id);
    }
    if (fresh.length === 0) return { added: [], duplicates, counted, evicted: 0 };

    // faiss first: a missing addon must fail before anything reaches the log.
    this.index ??= await FaissVectorIndex.create(
      this.dimension,
      vectorIndexConfig(this.indexSettings),
    );
    // Only transitions of a state and action not stored yet need a vector: one per new phi.
    const newPhi = new Map<string, number>();
    const toEmbed: Transition[] = [];
    for (const transition of fresh) {
      if (this.contents.findRow(transition) !== undefined) continue;
      const key = phiText(transition, withInstruction);
      if (newPhi.has(key)) continue;
      newPhi.set(key, toEmbed.length);
      toEmbed.push(transition);
    }
    const embedded = new Float32Array(toEmbed.length * this.dimension);
    await embedPhi(this.embedder, toEmbed.map(phiInput), this.phiWeights, embedded);
    let committed = 0;
    try {
      for (const [position, transition] of fresh.entries()) {
        const count = freshCounts[position]!;
        const ids = freshAliases[position]!;
        await this.writer?.write({
          op: 'add',
          transition,
          ...(count > 1 ? { count } : {}),
          ...(ids.length > 0 ? { ids } : {}),
        });
        committed += 1;
      }
    } finally {
      // Whatever reached the log is part of the buffer, even if a later write failed.
      const rows = new Float32Array(toEmbed.length * this.dimension);
      let created = 0;
      for (const [position, transition] of fresh.slice(0, committed).entries()) {
        const registered = this.contents.register(transition, { count: freshCounts[position]! });
        for (const id of freshAliases[position]!) slots.addAlias(registered.slot, id);
        if (!registered.created) continue;
        const source = newPhi.get(phiText(transition, withInstruction))!;
        rows.set(
          embedded.subarray(source * this.dimension, (source + 1) * this.dimension),
          created * this.dimension,
        );
        created += 1;
      }
      if (created > 0) this.appendNewRows(rows.subarray(0, created * this.dimension), created);
    }
    const evicted = await this.evictOverCapacity();
    if (this.staleRecall()) this.tune();
    return { added: fresh.map((transition) => transition.id), duplicates, counted, evicted };
  }

  /** FIFO eviction of synthetic/real transitions while over capacity; offline ones stay. */
  private async evictOverCapacity(): Promise<number> {
    if (this.capacity === undefined) return 0;
    const { slots } = this.contents;
    let evicted = 0;
    while (slots.live > this.capacity && this.evictCursor < slots.length) {
      const slot = this.evictCursor;
      this.evictCursor += 1;
      if (!slots.isLive(slot) || slots.source(slot) === 'offline') continue;
      await this.writer?.write({ op: 'evict', id: slots.peek(slot).id });
      this.contents.unregister(slot);
      evicted += 1;
    }
    const dead = slots.length - slots.live;
    if (dead > 0 && dead >= this.compactAt * slots.length) await this.compactNow(false);
    return evicted;
  }

  /**
   * Appends the vectors of rows just created. When the buffer is due a recall measurement
   * and has served too few searches to measure on, the last rows of a large batch are held
   * back: measured as queries against the index before they join it, they are fresh queries
   * like the buffer's real ones (a row already in the graph finds itself and its links at
   * once, and overstates recall: at 440k rows, depth 32 reached 0.97 for rows, 0.89 for
   * fresh queries).
   */
  private appendNewRows(rows: Float32Array, count: number): void {
    const held = this.heldOutRows(count);
    if (held === 0) {
      this.appendVectors(rows, count);
      return;
    }
    const width = this.dimension;
    const first = count - held;
    this.appendVectors(rows.subarray(0, first * width), first);
    const queries: Float32Array[] = [];
    for (let row = first; row < count; row += 1)
      queries.push(rows.slice(row * width, (row + 1) * width));
    this.tune({ queries, pending: held });
    this.appendVectors(rows.subarray(first * width), held);
  }

  /** How many of `count` new rows to hold out as fresh queries (0: no measurement now). */
  private heldOutRows(count: number): number {
    const settings = this.indexSettings;
    if (settings.type !== 'hnsw' || settings.targetRecall === undefined || !this.index) return 0;
    if (this.served.size >= this.recallQueries) return 0;
    const held = Math.min(this.recallQueries, Math.floor(count / 2));
    const liveAfter = this.contents.rows.live;
    const indexedBefore = this.contents.vectors.size + count - held;
    if (held < 20 || liveAfter < TUNE_FROM_ROWS || indexedBefore < TUNE_FROM_ROWS / 2) return 0;
    const recall = this.recall;
    const due =
      recall === undefined ||
      recall.targetRecall !== settings.targetRecall ||
      recall.m !== settings.m ||
      liveAfter >= 2 * recall.rows;
    return due ? held : 0;
  }

  /** Appends row vectors to the store and the index (several threads for a large batch). */
  private appendVectors(rows: Float32Array, count: number): void {
    this.contents.vectors.append(rows, count);
    this.index!.add(rows, count, count >= THREADED_ADD_ROWS ? this.threads : 1);
  }

  /**
   * Embeds the rows [start, end) from the phi inputs of the records that created them and
   * appends them (to the index too, unless `toIndex` is false).
   */
  private async embedRows(start: number, end: number, toIndex = true): Promise<void> {
    const { rows, slots } = this.contents;
    if (toIndex && end > start)
      this.index ??= await FaissVectorIndex.create(
        this.dimension,
        vectorIndexConfig(this.indexSettings),
      );
    for (let from = start; from < end; from += EMBED_BATCH) {
      const to = Math.min(end, from + EMBED_BATCH);
      const inputs: PhiInput[] = [];
      for (let row = from; row < to; row += 1) inputs.push(phiInput(slots.peek(rows.origin(row))));
      const embedded = new Float32Array(inputs.length * this.dimension);
      await embedPhi(this.embedder, inputs, this.phiWeights, embedded);
      if (toIndex) this.appendVectors(embedded, inputs.length);
      else this.contents.vectors.append(embedded, inputs.length);
    }
  }

  // ---------------------------------------------------------------- recall tuning

  /** Whether the index has a recall target. */
  private get tuned(): boolean {
    return this.indexSettings.type === 'hnsw' && this.indexSettings.targetRecall !== undefined;
  }

  /**
   * Whether a `targetRecall` index is due a measurement: none yet, another target or degree,
   * grown to twice the rows measured, or measured on its own rows while a full sample of
   * served queries now exists (measured once on those, then again at each doubling).
   */
  private staleRecall(): boolean {
    const settings = this.indexSettings;
    if (settings.type !== 'hnsw' || settings.targetRecall === undefined || !this.index)
      return false;
    const live = this.contents.rows.live;
    if (live < TUNE_FROM_ROWS) return false;
    const recall = this.recall;
    return (
      recall === undefined ||
      recall.targetRecall !== settings.targetRecall ||
      recall.m !== settings.m ||
      live >= 2 * recall.rows ||
      (recall.queriesFrom !== 'searches' && this.served.size >= this.recallQueries)
    );
  }

  /**
   * Measures recall and sets the search depth that reaches the target; where no depth does
   * and the graph degree is the buffer's to choose, rebuilds the graph with twice the degree
   * (from the stored vectors) and measures again.
   */
  private tune(heldOut?: { queries: Float32Array[]; pending: number }): void {
    for (;;) {
      const settings = this.indexSettings;
      if (settings.type !== 'hnsw' || settings.targetRecall === undefined || !this.index) return;
      const { rows, vectors } = this.contents;
      const served =
        this.served.size >= this.recallQueries
          ? { served: this.served.vectors(), queriesFrom: 'searches' as const }
          : heldOut
            ? { served: heldOut.queries, queriesFrom: 'new-rows' as const }
            : {};
      const measurement = tuneSearchDepth({
        index: this.index,
        vectors,
        isLive: (row) => row < vectors.size && rows.isLive(row),
        liveRows: rows.live - (heldOut?.pending ?? 0),
        targetRecall: settings.targetRecall,
        m: settings.m,
        queries: this.recallQueries,
        threads: this.threads,
        maxEfSearch: settings.autoDegree && settings.m * 2 <= TUNED_DEGREE_MAX ? 256 : 2048,
        ...served,
      });
      // Recorded at the size the index is about to have.
      this.recall = { ...measurement, rows: rows.live };
      this.indexSettings = { ...settings, efSearch: measurement.efSearch };
      if (measurement.reached || !settings.autoDegree || settings.m * 2 > TUNED_DEGREE_MAX) return;
      this.indexSettings = { ...this.indexSettings, m: settings.m * 2 };
      this.rebuildIndexSync();
    }
  }

  /**
   * Measures the recall of an HNSW index with a `targetRecall` now and sets the search depth
   * that reaches it: on the searches it served when it has a sample of them, else on its own
   * rows (which overstate fresh queries' recall). Undefined for an index without a target.
   * A read-only buffer keeps the result in memory.
   */
  measureRecall(): RecallMeasurement | undefined {
    if (this.closed) throw new IndexError('ReplayBuffer.measureRecall: the buffer is closed.');
    if (!this.tuned || !this.index) return undefined;
    this.tune();
    return this.recall;
  }

  /** A new index of the current settings over the stored row vectors (nothing re-embedded). */
  private async rebuildIndex(): Promise<void> {
    await FaissVectorIndex.create(this.dimension, vectorIndexConfig(this.indexSettings)).then(
      (index) => {
        this.index = index;
        this.fillIndex();
      },
    );
    if (this.staleRecall()) this.tune();
  }

  private rebuildIndexSync(): void {
    // Same module instance as the current index: faiss is loaded.
    this.index = this.index!.empty(vectorIndexConfig(this.indexSettings));
    this.fillIndex();
  }

  /** Adds every stored row vector to the (empty) index. */
  private fillIndex(): void {
    const { vectors } = this.contents;
    const batch = 65_536;
    for (let from = 0; from < vectors.size; from += batch) {
      const to = Math.min(vectors.size, from + batch);
      this.index!.add(vectors.slice(from, to), to - from, this.threads);
    }
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
    if (k === 0 || this.contents.slots.live === 0) return [];
    return this.searchVector(await this.embedQuery(query), k, filter);
  }

  /**
   * phi of a query, as {@link ReplayBuffer.search} embeds it (recent states and actions are
   * remembered, not embedded again).
   */
  async embedQuery(query: RetrievalQuery): Promise<Float32Array> {
    if (this.closed) throw new IndexError('ReplayBuffer.embedQuery: the buffer is closed.');
    const vector = new Float32Array(this.dimension);
    await embedPhi(
      this.queryParts,
      [{ stateText: query.state.text, action: query.action, instruction: query.instruction }],
      this.phiWeights,
      vector,
    );
    return vector;
  }

  /**
   * {@link ReplayBuffer.search} with an already-computed phi vector (unit length). With a
   * `targetRecall`, the buffer keeps a sample of these queries and, once the sample is
   * full, measures its recall on them (the search that fills it waits for that).
   */
  searchVector(vector: Float32Array, k: number, filter?: RetrievalFilter): ScoredTransition[] {
    const found = searchBuffer(this.sources, vector, k, filter);
    if (this.tuned && k > 0) {
      this.served.offer(vector);
      if (this.served.size === this.recallQueries && this.staleRecall()) this.tune();
    }
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
    return this.contents.slots.live;
  }

  /** The stored transition with this id, if any. */
  get(id: string): Transition | undefined {
    const slot = this.contents.slots.slotOf(id);
    return slot === undefined ? undefined : this.contents.slots.served(slot);
  }

  /** Every live transition, oldest first. */
  *transitions(): IterableIterator<Transition> {
    const { slots } = this.contents;
    for (let slot = 0; slot < slots.length; slot += 1) {
      if (slots.isLive(slot)) yield slots.served(slot);
    }
  }

  /** Counts by source and domain, index settings and measured recall, flush state. */
  stats(): ReplayBufferStats {
    const { slots, rows } = this.contents;
    return {
      size: slots.live,
      occurrences: slots.occurrences,
      indexedRows: rows.size,
      liveRows: rows.live,
      capacity: this.capacity,
      bySource: slots.bySource(),
      byDomain: slots.byDomain(),
      tasks: slots.taskCount,
      embedderId: this.embedder.id,
      dimension: this.dimension,
      index: vectorIndexConfig(this.indexSettings),
      recall: this.recall,
      directory: this.directory,
      unflushedRows: this.directory ? slots.length - this.flushedSlots : 0,
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
    return this.exclusive(() => this.flushNow());
  }

  private async flushNow(): Promise<void> {
    if (!this.directory || this.readOnly) return;
    const { rows, slots, vectors } = this.contents;
    const rowCount = rows.size;
    const slotCount = slots.length;
    await appendAfter(
      this.path('vectors'),
      this.flushedRows * this.dimension * 4,
      vectors.bytes(this.flushedRows, rowCount),
    );
    const slotRows = rows.slotRows(this.flushedSlots, slotCount);
    await appendAfter(this.path('rows'), this.flushedSlots * 4, [
      new Uint8Array(slotRows.buffer, slotRows.byteOffset, slotRows.byteLength),
    ]);
    if (this.index) await this.index.write(this.path('index'));
    else await rm(this.path('index'), { force: true });
    await this.writer?.sync();
    await this.writeManifest(rowCount, slotCount);
    this.flushedRows = rowCount;
    this.flushedSlots = slotCount;
  }

  private async writeManifest(indexedCount: number, slotCount: number): Promise<void> {
    await writeManifestFile(this.path('manifest'), {
      format: 'dreamgym-replay-buffer',
      version: 2,
      embedderId: this.embedder.id,
      dimension: this.dimension,
      index: this.indexSettings,
      phiWeights: this.phiWeights,
      indexedCount,
      slotCount,
      liveCount: this.contents.slots.live,
      ...(this.recall ? { recall: this.recall } : {}),
      updatedAt: new Date().toISOString(),
    });
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
        this.indexSettings = resolveIndex(options.index);
        this.recall = undefined;
      }
      await this.compactNow(true);
    });
  }

  /**
   * Drops evicted slots and unused rows (see `compaction.ts`), rebuilds the index
   * (re-embedding when `reembed`, else from the stored vectors) and rewrites the files.
   */
  private async compactNow(reembed: boolean): Promise<void> {
    const compacted = compactContents(this.contents, {
      logFile: this.directory ? this.path('records') : FILES.records,
      withInstruction: this.phiWeights.instruction > 0,
      dimension: this.dimension,
      reembed,
    });
    this.contents = compacted.contents;
    this.evictCursor = 0;
    this.index = undefined;
    if (reembed) await this.embedRows(0, this.contents.rows.size, false);
    if (this.contents.vectors.size > 0) await this.rebuildIndex();
    if (!this.directory) return;
    // Log first: a crash before the index is rewritten leaves an index longer than the
    // log, which `open` reports and `rebuild: true` repairs.
    await this.writer?.close();
    await writeJsonl(
      this.path('records'),
      ReplayLogEntrySchema,
      compacted.transitions.map((transition, position) => {
        const count = compacted.counts[position]!;
        const ids = compacted.aliases[position]!;
        return {
          op: 'add' as const,
          transition,
          ...(count > 1 ? { count } : {}),
          ...(ids.length > 0 ? { ids } : {}),
        };
      }),
    );
    this.writer = await JsonlWriter.open(this.path('records'), ReplayLogEntrySchema);
    await this.rewriteFiles();
  }

  /** Writes vectors, rows, index and manifest from scratch. */
  private async rewriteFiles(): Promise<void> {
    this.flushedRows = 0;
    this.flushedSlots = 0;
    await this.flushNow();
  }

  /** Flushes (when writable) and releases the lock. Further calls throw. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.exclusive(async () => {
      if (!this.readOnly) await this.flushNow();
      await this.writer?.close();
      this.writer = undefined;
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
    if (this.readOnly) {
      throw new IndexError(
        `ReplayBuffer.${operation}: the buffer was opened with { readOnly: true }.`,
        { path: this.directory },
      );
    }
  }
}

/** The texts that make two transitions exact duplicates, as one Map key. */
function contentText(transition: Transition, withInstruction: boolean): string {
  return [
    transition.domain,
    transition.state.text,
    transition.action,
    transition.nextState.text,
    withInstruction ? transition.instruction : '',
  ].join('\u0000');
}

/** The phi inputs of a transition, as one Map key. */
function phiText(transition: Transition, withInstruction: boolean): string {
  return [
    transition.state.text,
    transition.action,
    withInstruction ? transition.instruction : '',
  ].join('\u0000');
}
