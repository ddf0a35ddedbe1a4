/**
 * `ReplayBuffer`: DreamGym's memory of transitions. Offline real transitions seed it,
 * synthetic and real ones are appended while training, and the experience model retrieves
 * the top-k stored transitions most similar to (s_t, a_t) by cosine of phi(s, a).
 *
 * On disk (a directory, one writer at a time):
 * - `records.jsonl`  append-only log: `{op:'add', transition, count?}` / `{op:'count', id,
 *                    count}` / `{op:'evict', id}`, one write per entry; committed as soon
 *                    as `add` resolves.
 * - `vectors.f32`    phi vectors, float32 row-major in slot order (written by `flush`).
 * - `index.faiss`    the faiss index over the same rows (written by `flush`).
 * - `manifest.json`  embedder id, dimension, index type, counts; replaced atomically.
 * - `buffer.lock`    pid of the writing process.
 * Records added after the last flush (e.g. before a crash) are embedded again on open;
 * everything flushed is reloaded without re-embedding.
 */
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError, IndexError } from '../errors.js';
import { formatFieldPath, JsonlWriter, parseRecord, writeJsonl } from '../mdp/jsonl.js';
import { type ExperienceSource, type Transition, TransitionSchema } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { BufferLock } from './buffer-lock.js';
import { FaissVectorIndex, loadFaiss, type VectorIndexConfig } from './faiss-index.js';
import { DEFAULT_PHI_WEIGHTS, embedPhi, type PhiInput, type PhiWeights } from './phi.js';
import {
  dropTornTail,
  type LoggedRecord,
  loggedTransition,
  ReplayLogEntrySchema,
  type ReplayLogVisitor,
  readReplayLog,
} from './replay-log.js';
import type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from './retriever.js';
import { SlotChains } from './slot-chains.js';
import { exactTopK, RankedTopK, VectorStore } from './vector-store.js';

/** Which vector index to use: exact flat inner product, or an HNSW graph for large buffers. */
export const ReplayIndexOptionsSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('flat') }),
  z.object({
    type: z.literal('hnsw'),
    /** Links per node (faiss `HNSW<m>,Flat`). */
    m: z.number().int().min(4).max(128).default(32),
    /** Candidates kept while inserting: build quality vs build time. */
    efConstruction: z.number().int().min(8).max(4096).default(40),
    /** Candidates kept while searching: recall vs latency (faiss' own default, 16, loses recall at k = 8). */
    efSearch: z.number().int().min(8).max(4096).default(128),
  }),
]);
/** Index options as accepted (defaults not yet applied). */
export type ReplayIndexOptions = z.input<typeof ReplayIndexOptionsSchema>;

const PhiWeightsSchema = z.object({
  state: z.number().nonnegative().finite().default(DEFAULT_PHI_WEIGHTS.state),
  action: z.number().nonnegative().finite().default(DEFAULT_PHI_WEIGHTS.action),
  instruction: z.number().nonnegative().finite().default(DEFAULT_PHI_WEIGHTS.instruction),
});

const isEmbeddingModel = (value: unknown): value is EmbeddingModel =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as EmbeddingModel).id === 'string' &&
  Number.isInteger((value as EmbeddingModel).dimension) &&
  typeof (value as EmbeddingModel).embed === 'function';

/** Options of {@link ReplayBuffer.create} and {@link ReplayBuffer.open}. */
export const ReplayBufferOptionsSchema = z.object({
  /** Embeds phi(s, a); a saved buffer only opens with an embedder of the same `id`. */
  embedder: z.custom<EmbeddingModel>(isEmbeddingModel, {
    message: 'expected an EmbeddingModel ({ id, dimension, embed })',
  }),
  /** Vector index for a new buffer (default flat). An existing buffer keeps its own unless rebuilt. */
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
  /** Receives warnings (torn last record, stale lock); default `process.emitWarning`. */
  onWarning: z.custom<(message: string) => void>((value) => typeof value === 'function').optional(),
});
/** Options of a replay buffer as accepted (defaults not yet applied). */
export type ReplayBufferOptions = z.input<typeof ReplayBufferOptionsSchema>;

/** Extra options of {@link ReplayBuffer.open}. */
export interface ReplayBufferOpenOptions extends ReplayBufferOptions {
  /**
   * Re-embed every stored record with this embedder into a new index (default false):
   * repairs a corrupt or truncated index, and changes embedder, phi weights or index type.
   */
  rebuild?: boolean;
  /** Open without taking the lock; `add`, `flush` and `rebuild` then throw. */
  readOnly?: boolean;
}

const ManifestSchema = z.object({
  format: z.literal('dreamgym-replay-buffer'),
  version: z.literal(1),
  embedderId: z.string().min(1),
  dimension: z.number().int().positive(),
  index: ReplayIndexOptionsSchema,
  phiWeights: PhiWeightsSchema,
  /** Rows in `index.faiss` and `vectors.f32` at the last flush. */
  indexedCount: z.number().int().nonnegative(),
  /** Live (not evicted) transitions at the last flush. */
  liveCount: z.number().int().nonnegative(),
  updatedAt: z.string(),
});
type Manifest = z.infer<typeof ManifestSchema>;

/** What {@link ReplayBuffer.add} did. */
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

/** Counts reported by {@link ReplayBuffer.stats}. */
export interface ReplayBufferStats {
  /** Live transitions. */
  size: number;
  /** Occurrences of the live transitions: `size` plus the exact duplicates counted on them. */
  occurrences: number;
  /** Rows in the vector index, evicted ones included until the next compaction. */
  indexedRows: number;
  capacity: number | undefined;
  bySource: Record<ExperienceSource, number>;
  byDomain: Record<string, number>;
  tasks: number;
  embedderId: string;
  dimension: number;
  index: VectorIndexConfig;
  /** Directory of a persistent buffer. */
  directory: string | undefined;
  /** Rows added since the last flush (their records are durable, their vectors not yet). */
  unflushedRows: number;
  /** Duplicates suppressed since this buffer object was opened. */
  duplicatesSuppressed: number;
}

const FILES = {
  records: 'records.jsonl',
  vectors: 'vectors.f32',
  index: 'index.faiss',
  manifest: 'manifest.json',
  lock: 'buffer.lock',
} as const;

const SOURCE_NAMES: Record<ExperienceSource, ExperienceSource> = {
  offline: 'offline',
  synthetic: 'synthetic',
  real: 'real',
};

/** Rows embedded per call when catching up or rebuilding, to bound memory. */
const EMBED_BATCH = 8192;

/**
 * 53-bit hash of what makes two transitions exact duplicates (domain, state, action, next
 * state, and the instruction when `withInstruction`): a cheap Map key; equal hashes are
 * confirmed with {@link sameContent}.
 */
export function contentHash(transition: Transition, withInstruction = false): number {
  let first = 0xdeadbeef;
  let second = 0x41c6ce57;
  const texts = [
    transition.domain,
    transition.state.text,
    transition.action,
    transition.nextState.text,
  ];
  if (withInstruction) texts.push(transition.instruction);
  for (const text of texts) {
    for (let index = 0; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      first = Math.imul(first ^ code, 2654435761);
      second = Math.imul(second ^ code, 1597334677);
    }
    // A separator, so that ("ab", "c") and ("a", "bc") differ.
    first = Math.imul(first ^ 0x1f, 2654435761);
    second = Math.imul(second ^ 0x1f, 1597334677);
  }
  first =
    Math.imul(first ^ (first >>> 16), 2246822507) ^ Math.imul(second ^ (second >>> 13), 3266489909);
  second =
    Math.imul(second ^ (second >>> 16), 2246822507) ^ Math.imul(first ^ (first >>> 13), 3266489909);
  return 4294967296 * (2097151 & second) + (first >>> 0);
}

/** 30-bit hash of a text (a small integer, stored unboxed in a plain array). */
function textHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1)
    hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  return (hash >>> 2) & 0x3fffffff;
}

/** {@link contentHash} cut to 30 bits, the key of {@link SlotChains}. */
function contentKey(transition: Transition, withInstruction: boolean): number {
  return contentHash(transition, withInstruction) % 1073741824;
}

/**
 * 30-bit hash of what phi(s, a) embeds for a transition (state, action, and the instruction
 * when it is weighted): transitions with equal keys are phi twins, up to hash collisions.
 */
function phiKey(transition: Transition, weights: PhiWeights): number {
  let hash = textHash(transition.state.text);
  hash = Math.imul(hash ^ 0x1f, 16777619) ^ textHash(transition.action);
  if (weights.instruction > 0)
    hash = Math.imul(hash ^ 0x1e, 16777619) ^ textHash(transition.instruction);
  return (Math.imul(hash ^ (hash >>> 15), 2246822507) >>> 2) & 0x3fffffff;
}

/**
 * True when two transitions are exact duplicates: same domain, state, action and next
 * state, and the same instruction when `withInstruction`.
 */
function sameContent(a: Transition, b: Transition, withInstruction: boolean): boolean {
  return (
    a.domain === b.domain &&
    a.action === b.action &&
    a.state.text === b.state.text &&
    a.nextState.text === b.nextState.text &&
    (!withInstruction || a.instruction === b.instruction)
  );
}

/** Search candidates, best first: slots and their scores. */
interface Candidates {
  slots: number[];
  scores: number[];
}

function phiInput(transition: Transition): PhiInput {
  return {
    stateText: transition.state.text,
    action: transition.action,
    instruction: transition.instruction,
  };
}

function increment(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next === 0) counts.delete(key);
  else counts.set(key, next);
}

function parseOptions<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = formatFieldPath(issue.path);
  throw new ConfigError(`${what} option \`${field}\`: ${issue.message}`, {
    field,
    cause: result.error,
  });
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
  private indexConfig: VectorIndexConfig;
  private phiWeights: PhiWeights;
  private readonly capacity: number | undefined;
  private readonly overFetch: number;
  private readonly exactScanBelow: number;
  private readonly compactAt: number;
  private readonly warn: (message: string) => void;

  private index: FaissVectorIndex | undefined;
  private vectors: VectorStore;
  /**
   * Validated transition per slot (= faiss label). Undefined once evicted, and for a record
   * reloaded from the log but not yet served: that one stays as bytes in `logChunks` (see
   * `loggedAt`) until first served, when it is parsed and validated in full. What the
   * index needs of every slot is kept in the flat per-slot arrays below, so that a reload
   * of a million records retains no million objects for the garbage collector to trace.
   */
  private records: (Transition | undefined)[] = [];
  /** {@link textHash} of the id per slot; -1 once evicted (the liveness of a slot). */
  private slotIdHashes: number[] = [];
  /** Domain, source and task per slot (interned strings). */
  private slotDomains: string[] = [];
  private slotSources: string[] = [];
  private slotTasks: string[] = [];
  /** {@link textHash} of the trajectory id per slot (-1: none); matches are confirmed on the record. */
  private slotTrajectories: number[] = [];
  /** {@link contentKey} per slot. */
  private slotContents: number[] = [];
  /** Times the transition of each slot occurred (its exact duplicates counted on it). */
  private slotCounts: number[] = [];
  /** {@link phiKey} per slot. */
  private slotPhis: number[] = [];
  /** Log bytes of reloaded records, and where each reloaded slot's line lies in them. */
  private logChunks: Buffer[] = [];
  /** Per reloaded slot: its line, chunk and byte range (unused once it is served). */
  private loggedLines: number[] = [];
  private loggedChunks: number[] = [];
  private loggedStarts: number[] = [];
  private loggedEnds: number[] = [];
  private readonly interned = new Map<string, string>();
  private readonly slotsById = new SlotChains();
  private readonly slotsByContent = new SlotChains();
  private readonly slotsByPhi = new SlotChains();
  private readonly domainCounts = new Map<string, number>();
  private readonly sourceCounts = new Map<string, number>();
  private readonly taskCounts = new Map<string, number>();
  private live = 0;
  /** Sum of {@link slotCounts} over live slots. */
  private occurrences = 0;
  private evictCursor = 0;
  private duplicatesSuppressed = 0;

  private directory: string | undefined;
  private readOnly = false;
  private lock: BufferLock | undefined;
  private writer: JsonlWriter<typeof ReplayLogEntrySchema> | undefined;
  /** Rows of `vectors.f32` / `index.faiss` on disk. */
  private flushedRows = 0;
  private closed = false;
  /** Serialises mutations: log order must equal slot order. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(options: z.output<typeof ReplayBufferOptionsSchema>) {
    this.embedder = options.embedder;
    this.dimension = options.embedder.dimension;
    this.indexConfig = ReplayIndexOptionsSchema.parse(options.index ?? { type: 'flat' });
    this.phiWeights = PhiWeightsSchema.parse(options.phiWeights ?? {});
    if (this.phiWeights.state + this.phiWeights.action + this.phiWeights.instruction <= 0) {
      throw new ConfigError(
        'ReplayBuffer option `phiWeights`: at least one weight must be positive.',
        {
          field: 'phiWeights',
        },
      );
    }
    this.capacity = options.capacity;
    this.overFetch = options.overFetch;
    this.exactScanBelow = options.exactScanBelow;
    this.compactAt = options.compactAt;
    this.warn =
      options.onWarning ?? ((message) => process.emitWarning(message, 'ReplayBufferWarning'));
    this.vectors = new VectorStore(this.dimension);
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
      buffer.lock = await BufferLock.acquire(join(directory, FILES.lock), buffer.warn);
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
    return join(this.directory!, FILES[name]);
  }

  private async load(
    options: z.output<typeof ReplayBufferOptionsSchema>,
    rebuild: boolean,
  ): Promise<void> {
    const manifest = await this.readManifest(rebuild);
    if (manifest) {
      this.checkCompatible(manifest, options, rebuild);
      // Stored settings stay unless a rebuild is asked to change them.
      if (!rebuild || options.index === undefined) this.indexConfig = manifest.index;
      if (!rebuild || options.phiWeights === undefined) this.phiWeights = manifest.phiWeights;
    } else if (this.readOnly) {
      throw new IndexError(
        `${this.path('manifest')} does not exist: no replay buffer in ${this.directory}.`,
        {
          path: this.directory,
        },
      );
    }

    // The flushed vectors are read (by libuv's threads) while the log is parsed (on this one).
    const preloaded =
      manifest && !rebuild && manifest.indexedCount > 0
        ? this.preloadVectors(manifest.indexedCount)
        : undefined;
    this.logChunks = [];
    const visitor: ReplayLogVisitor = {
      add: (transition, where, count) => {
        const slot = this.registerSlot(transition, false, count);
        this.loggedLines[slot] = where.line;
        this.loggedChunks[slot] = where.chunk;
        this.loggedStarts[slot] = where.start;
        this.loggedEnds[slot] = where.end;
      },
      count: (id, count) => {
        const slot = this.slotOf(id);
        if (slot !== undefined) this.setCount(slot, count);
      },
      evict: (id) => {
        const slot = this.slotOf(id);
        if (slot !== undefined) this.unregisterSlot(slot);
      },
    };
    const log = await readReplayLog(this.path('records'), visitor, { chunks: this.logChunks });
    if (log.tornBytes > 0) {
      this.warn(
        `${this.path('records')}: ignoring a truncated last record (${log.tornBytes} bytes, an append interrupted by a crash); it was never committed.`,
      );
      if (!this.readOnly) await dropTornTail(this.path('records'), log.committedBytes);
    }

    if (rebuild) {
      if (this.readOnly) {
        throw new IndexError(
          'ReplayBuffer.open: { rebuild: true } needs a writable buffer, not { readOnly: true }.',
          {
            path: this.directory,
          },
        );
      }
      // Re-embeds every live record into a new index and rewrites log, vectors and manifest.
      await this.compactNow(true);
      return;
    }
    const indexed =
      manifest && manifest.indexedCount > 0 ? await this.loadVectors(manifest, preloaded) : 0;
    if (this.readOnly && indexed < this.records.length) {
      throw new IndexError(
        `${this.directory}: ${this.records.length - indexed} records were added after the last flush; open the buffer writable once to index them.`,
        { path: this.directory },
      );
    }
    // Records committed after the last flush (a crash, or no close): embed just those.
    await this.indexSlots(indexed, this.records.length);
    if (!this.readOnly) {
      this.writer = await JsonlWriter.open(this.path('records'), ReplayLogEntrySchema);
      if (!manifest || indexed < this.records.length) await this.flushNow();
    }
  }

  private async readManifest(rebuild: boolean): Promise<Manifest | undefined> {
    const file = this.path('manifest');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      return undefined;
    }
    try {
      return ManifestSchema.parse(JSON.parse(text));
    } catch (error) {
      if (rebuild) return undefined;
      throw new IndexError(
        `${file} is unreadable (${(error as Error).message}). Open the buffer with { rebuild: true } to rebuild manifest and index from ${FILES.records}.`,
        { path: file, cause: error },
      );
    }
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
    const differs = (given: unknown, stored: unknown) =>
      given !== undefined && JSON.stringify(given) !== JSON.stringify(stored);
    const givenIndex = options.index && ReplayIndexOptionsSchema.parse(options.index);
    const givenWeights = options.phiWeights && PhiWeightsSchema.parse(options.phiWeights);
    if (differs(givenIndex, manifest.index) || differs(givenWeights, manifest.phiWeights)) {
      throw new ConfigError(
        `The replay buffer in ${this.directory} uses index ${JSON.stringify(manifest.index)} and phi weights ${JSON.stringify(manifest.phiWeights)}; the options ask for others. Leave them out to use the stored ones, or pass { rebuild: true } to rebuild with the new ones.`,
        { field: givenIndex ? 'index' : 'phiWeights' },
      );
    }
  }

  /** The transition of a live slot, validated in full against the schema on first use. */
  private served(slot: number): Transition {
    const record = this.records[slot];
    if (record) return record;
    const where = this.loggedAt(slot);
    const valid = parseRecord(TransitionSchema, loggedTransition(this.logChunks, where), {
      file: this.path('records'),
      line: where.line,
      fieldPrefix: 'transition',
    });
    this.records[slot] = valid;
    return valid;
  }

  private loggedAt(slot: number): LoggedRecord {
    return {
      line: this.loggedLines[slot]!,
      chunk: this.loggedChunks[slot]!,
      start: this.loggedStarts[slot]!,
      end: this.loggedEnds[slot]!,
    };
  }

  /**
   * The transition of a live slot for internal use (duplicate checks, embedding): its
   * indexed fields are valid, the rest is not checked until it is served.
   */
  private peek(slot: number): Transition {
    return this.records[slot] ?? loggedTransition(this.logChunks, this.loggedAt(slot));
  }

  /**
   * Whether phi embeds the instruction: then transitions of different instructions are
   * retrieved by different similarities, so they are not duplicates of each other.
   */
  private get embedsInstruction(): boolean {
    return this.phiWeights.instruction > 0;
  }

  /** The live slot holding the transition with this id, if any. */
  private slotOf(id: string): number | undefined {
    return this.slotsById.find(textHash(id), (slot) => this.peek(slot).id === id);
  }

  /** A live slot whose transition is an exact duplicate of `transition`, if any. */
  private twinOf(transition: Transition, key: number): number | undefined {
    return this.slotsByContent.find(key, (slot) =>
      sameContent(this.peek(slot), transition, this.embedsInstruction),
    );
  }

  private intern(text: string): string {
    const known = this.interned.get(text);
    if (known !== undefined) return known;
    this.interned.set(text, text);
    return text;
  }

  /**
   * The first `rows` rows of `vectors.f32`, or undefined where they cannot be read: then
   * {@link loadVectors} reads the file again and reports what is wrong with it.
   */
  private async preloadVectors(rows: number): Promise<VectorStore | undefined> {
    const store = new VectorStore(this.dimension);
    try {
      const handle = await open(this.path('vectors'), 'r');
      try {
        await store.appendFromFile(handle, 0, rows);
      } finally {
        await handle.close();
      }
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
    const rebuildHint = `Open the buffer with { rebuild: true } to rebuild the index from ${FILES.records} (re-embeds ${this.records.length} records).`;
    const index = await FaissVectorIndex.read(this.path('index'), this.dimension).catch((error) => {
      throw new IndexError(`${(error as Error).message}. ${rebuildHint}`, {
        path: this.path('index'),
        cause: error,
      });
    });
    const rows = index.size;
    if (rows < manifest.indexedCount || rows > this.records.length) {
      throw new IndexError(
        `${this.path('index')} holds ${rows} vectors, but the manifest records ${manifest.indexedCount} and ${FILES.records} ${this.records.length}: the index is truncated or stale. ${rebuildHint}`,
        { path: this.path('index') },
      );
    }
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
    const handle = await open(vectorFile, 'r');
    try {
      await store.appendFromFile(handle, store.size * rowBytes, rows - store.size);
    } catch (error) {
      throw new IndexError(
        `cannot read ${vectorFile}: ${(error as Error).message}. ${rebuildHint}`,
        {
          path: vectorFile,
          cause: error,
        },
      );
    } finally {
      await handle.close();
    }
    this.index = index;
    this.vectors = store;
    this.flushedRows = rows;
    return rows;
  }

  /** The slots in [start, end) that hold a record (not evicted). */
  private liveSlots(start: number, end: number): number[] {
    const live: number[] = [];
    for (let slot = start; slot < end; slot += 1)
      if (this.slotIdHashes[slot] !== -1) live.push(slot);
    return live;
  }

  /** Embeds the records of slots [start, end) and appends their vectors. */
  private async indexSlots(start: number, end: number): Promise<void> {
    for (let from = start; from < end; from += EMBED_BATCH) {
      const to = Math.min(end, from + EMBED_BATCH);
      const liveSlots = this.liveSlots(from, to);
      const embedded = new Float32Array(liveSlots.length * this.dimension);
      await embedPhi(
        this.embedder,
        liveSlots.map((slot) => phiInput(this.peek(slot))),
        this.phiWeights,
        embedded,
      );
      // Evicted rows keep their place (label) as zero vectors until the next compaction.
      const rows = new Float32Array((to - from) * this.dimension);
      for (const [row, slot] of liveSlots.entries()) {
        const part = embedded.subarray(row * this.dimension, (row + 1) * this.dimension);
        rows.set(part, (slot - from) * this.dimension);
      }
      await this.appendVectors(rows, to - from);
    }
  }

  private async appendVectors(rows: Float32Array, count: number): Promise<void> {
    this.index ??= await FaissVectorIndex.create(this.dimension, this.indexConfig);
    this.index.add(rows, count);
    this.vectors.append(rows, count);
  }

  /**
   * Gives `transition` the next slot, with `count` occurrences. `keep` false: the object is
   * not retained (a record reloaded from the log, parsed again when first served).
   */
  private registerSlot(transition: Transition, keep = true, count = 1): number {
    const slot = this.records.length;
    this.slotCounts.push(count);
    this.occurrences += count;
    this.records.push(keep ? transition : undefined);
    const idHash = textHash(transition.id);
    this.slotIdHashes.push(idHash);
    const domain = this.intern(transition.domain);
    // Checked to be one of the three sources on reading; the constant keeps one copy.
    const source = SOURCE_NAMES[transition.source];
    const task = this.intern(transition.taskId);
    this.slotDomains.push(domain);
    this.slotSources.push(source);
    this.slotTasks.push(task);
    this.slotTrajectories.push(
      transition.trajectoryId === undefined ? -1 : textHash(transition.trajectoryId),
    );
    this.slotsById.add(idHash, slot);
    const key = contentKey(transition, this.embedsInstruction);
    this.slotContents.push(key);
    this.slotsByContent.add(key, slot);
    const phi = phiKey(transition, this.phiWeights);
    this.slotPhis.push(phi);
    this.slotsByPhi.add(phi, slot);
    increment(this.domainCounts, domain, 1);
    increment(this.sourceCounts, source, 1);
    increment(this.taskCounts, task, 1);
    this.live += 1;
    return slot;
  }

  private unregisterSlot(slot: number): void {
    const idHash = this.slotIdHashes[slot];
    if (idHash === undefined || idHash === -1) return;
    this.records[slot] = undefined;
    this.slotIdHashes[slot] = -1;
    this.slotsById.remove(idHash, slot);
    this.slotsByContent.remove(this.slotContents[slot]!, slot);
    this.slotsByPhi.remove(this.slotPhis[slot]!, slot);
    increment(this.domainCounts, this.slotDomains[slot]!, -1);
    increment(this.sourceCounts, this.slotSources[slot]!, -1);
    increment(this.taskCounts, this.slotTasks[slot]!, -1);
    this.live -= 1;
    this.occurrences -= this.slotCounts[slot]!;
  }

  /** Sets the occurrence count of a live slot. */
  private setCount(slot: number, count: number): void {
    this.occurrences += count - this.slotCounts[slot]!;
    this.slotCounts[slot] = count;
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
        {
          path: this.directory,
        },
      );
    }
  }

  /**
   * Validates, de-duplicates, embeds (one embedding call for the whole batch), logs and
   * indexes `transitions`, then evicts to stay within capacity. Each record is committed
   * to `records.jsonl` by the time this resolves. An exact duplicate (same domain, state,
   * action and next state as a stored transition, and the same instruction where phi
   * embeds it, under another id) is not stored again but counted: retrieved transitions carry their `count`, so that the experience model
   * can weigh how often each outcome occurred.
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
    const fresh: Transition[] = [];
    /** Occurrences per fresh transition (parallel to `fresh`). */
    const freshCounts: number[] = [];
    const batchById = new Map<string, Transition>();
    /** Position in `fresh` by content hash. */
    const batchByContent = new Map<number, number>();
    /** Stored slots whose transition occurred again in this batch: slot -> new count. */
    const recounted = new Map<number, number>();
    let duplicates = 0;
    let counted = 0;
    transitions.forEach((transition, index) => {
      const sameId = this.slotOf(transition.id);
      const stored = sameId === undefined ? batchById.get(transition.id) : this.peek(sameId);
      if (stored) {
        if (sameContent(stored, transition, this.embedsInstruction)) {
          // The same record added again: no new occurrence.
          duplicates += 1;
          return;
        }
        throw new ConfigError(
          `ReplayBuffer.add: transitions.${index}.id \`${transition.id}\` is already in the buffer with a different state, action or next state. Give each transition a unique id.`,
          { field: `transitions.${index}.id` },
        );
      }
      const hash = contentHash(transition, this.embedsInstruction);
      const twinSlot = this.twinOf(transition, contentKey(transition, this.embedsInstruction));
      if (twinSlot !== undefined) {
        recounted.set(twinSlot, (recounted.get(twinSlot) ?? this.slotCounts[twinSlot]!) + 1);
        duplicates += 1;
        counted += 1;
        return;
      }
      const twin = batchByContent.get(hash);
      if (twin !== undefined && sameContent(fresh[twin]!, transition, this.embedsInstruction)) {
        freshCounts[twin]! += 1;
        duplicates += 1;
        counted += 1;
        return;
      }
      batchById.set(transition.id, transition);
      // On a (rare) hash collision of different content within a batch the first keeps the key.
      if (twin === undefined) batchByContent.set(hash, fresh.length);
      fresh.push(transition);
      freshCounts.push(1);
    });
    this.duplicatesSuppressed += duplicates;
    for (const [slot, count] of recounted) {
      await this.writer?.write({ op: 'count', id: this.peek(slot).id, count });
      this.setCount(slot, count);
    }
    if (fresh.length === 0) return { added: [], duplicates, counted, evicted: 0 };

    // faiss first: a missing addon must fail before anything reaches the log.
    this.index ??= await FaissVectorIndex.create(this.dimension, this.indexConfig);
    const rows = new Float32Array(fresh.length * this.dimension);
    await embedPhi(this.embedder, fresh.map(phiInput), this.phiWeights, rows);
    let committed = 0;
    try {
      for (const [position, transition] of fresh.entries()) {
        const count = freshCounts[position]!;
        await this.writer?.write({ op: 'add', transition, ...(count > 1 ? { count } : {}) });
        committed += 1;
      }
    } finally {
      // Whatever reached the log is part of the buffer, even if a later write failed.
      for (const [position, transition] of fresh.slice(0, committed).entries())
        this.registerSlot(transition, true, freshCounts[position]!);
      if (committed > 0) {
        await this.appendVectors(rows.subarray(0, committed * this.dimension), committed);
      }
    }
    const evicted = await this.evictOverCapacity();
    return { added: fresh.map((transition) => transition.id), duplicates, counted, evicted };
  }

  /** FIFO eviction of synthetic/real transitions while over capacity; offline ones stay. */
  private async evictOverCapacity(): Promise<number> {
    if (this.capacity === undefined) return 0;
    let evicted = 0;
    while (this.live > this.capacity && this.evictCursor < this.records.length) {
      const slot = this.evictCursor;
      this.evictCursor += 1;
      if (this.slotIdHashes[slot] === -1 || this.slotSources[slot] === 'offline') continue;
      await this.writer?.write({ op: 'evict', id: this.peek(slot).id });
      this.unregisterSlot(slot);
      evicted += 1;
    }
    const dead = this.records.length - this.live;
    if (dead > 0 && dead >= this.compactAt * this.records.length) await this.compactNow(false);
    return evicted;
  }

  /**
   * The `k` stored transitions most similar to `query` by cosine of phi(s, a), most similar
   * first, among those passing `filter`. Exact for a flat index; HNSW is approximate.
   */
  async search(
    query: RetrievalQuery,
    k: number,
    filter?: RetrievalFilter,
  ): Promise<ScoredTransition[]> {
    if (this.closed) throw new IndexError('ReplayBuffer.search: the buffer is closed.');
    if (!Number.isInteger(k) || k < 0)
      throw new RangeError(`search: k must be a non-negative integer, got ${k}.`);
    if (k === 0 || this.live === 0) return [];
    const vector = new Float32Array(this.dimension);
    await embedPhi(
      this.embedder,
      [{ stateText: query.state.text, action: query.action, instruction: query.instruction }],
      this.phiWeights,
      vector,
    );
    return this.searchVector(vector, k, filter);
  }

  /**
   * {@link ReplayBuffer.search} with an already-computed phi vector (unit length). Equally
   * similar transitions (the same state and action, hence the same phi) come most frequent
   * first: ties carry no similarity to choose by, and the experience model should see the
   * outcomes that occurred most often.
   */
  searchVector(vector: Float32Array, k: number, filter?: RetrievalFilter): ScoredTransition[] {
    const accept = this.acceptor(filter);
    const slots = this.records.length;
    const bound = this.matchBound(filter);
    if (bound === 0) return [];
    if (!this.index || bound <= this.exactScanBelow) return this.exactSearch(vector, k, accept);
    let fetch = Math.min(slots, Math.ceil(k * this.overFetch * (slots / bound)));
    for (let round = 0; round < 2; round += 1) {
      const { labels, scores } = this.index.search(vector, fetch);
      const found: Candidates = { slots: [], scores: [] };
      for (let position = 0; position < labels.length && found.slots.length < k; position += 1) {
        const slot = labels[position]!;
        if (slot < 0 || !accept(slot)) continue;
        found.slots.push(slot);
        found.scores.push(scores[position]!);
      }
      const complete = fetch >= slots && this.indexConfig.type === 'flat';
      if (found.slots.length >= k || complete) return this.ranked(vector, found, k, accept);
      if (fetch >= slots) break;
      fetch = Math.min(slots, fetch * 8);
    }
    // Too few of the approximate candidates pass the filter: scan exactly.
    return this.exactSearch(vector, k, accept);
  }

  /**
   * Brute-force top-k: a scan of every stored vector (typed arrays, no faiss). Always exact;
   * the reference for an HNSW index's recall, and the baseline in the benchmark.
   */
  searchExactVector(vector: Float32Array, k: number, filter?: RetrievalFilter): ScoredTransition[] {
    return this.exactSearch(vector, k, this.acceptor(filter));
  }

  private exactSearch(
    vector: Float32Array,
    k: number,
    accept: (slot: number) => boolean,
  ): ScoredTransition[] {
    return this.ranked(vector, exactTopK(this.vectors, vector, k, accept), k, accept);
  }

  /**
   * The final top `k` of `found` (best first) and of the phi twins of its members: stored
   * transitions with the same phi inputs, hence the same score, which the index may not
   * have returned (faiss keeps an arbitrary few of many equal scores). Ranked by score, then
   * by occurrence count.
   */
  private ranked(
    vector: Float32Array,
    found: Candidates,
    k: number,
    accept: (slot: number) => boolean,
  ): ScoredTransition[] {
    const best = new RankedTopK(k);
    const members = new Set(found.slots);
    const groups = new Set<number>();
    found.slots.forEach((slot, position) => {
      const score = found.scores[position]!;
      best.offer(slot, score, this.slotCounts[slot]!);
      const key = this.slotPhis[slot]!;
      if (groups.has(key)) return;
      groups.add(key);
      this.slotsByPhi.forEach(key, (twin) => {
        const count = this.slotCounts[twin]!;
        if (members.has(twin) || !best.admits(twin, score, count) || !accept(twin)) return;
        // A phi whose 30-bit key merely collides is no twin: its own score would differ.
        if (Math.abs(this.vectors.dot(vector, twin) - score) > 1e-4) return;
        best.offer(twin, score, count);
      });
    });
    return best.slots.map((slot, position) => ({
      transition: this.served(slot),
      score: clampScore(best.scores[position]!),
      count: this.slotCounts[slot]!,
    }));
  }

  /** Upper bound on the transitions `filter` can match, from per-facet counts. */
  private matchBound(filter: RetrievalFilter | undefined): number {
    let bound = this.live;
    if (!filter) return bound;
    if (filter.domain !== undefined)
      bound = Math.min(bound, this.domainCounts.get(filter.domain) ?? 0);
    if (filter.sources) {
      const total = [...new Set(filter.sources)].reduce(
        (sum, source) => sum + (this.sourceCounts.get(source) ?? 0),
        0,
      );
      bound = Math.min(bound, total);
    }
    if (filter.taskIds) {
      const total = [...new Set(filter.taskIds)].reduce(
        (sum, task) => sum + (this.taskCounts.get(task) ?? 0),
        0,
      );
      bound = Math.min(bound, total);
    }
    return bound;
  }

  private acceptor(filter: RetrievalFilter | undefined): (slot: number) => boolean {
    const { slotIdHashes, slotDomains, slotSources, slotTasks, slotTrajectories } = this;
    const sources = filter?.sources && new Set<string>(filter.sources);
    const tasks = filter?.taskIds && new Set(filter.taskIds);
    const excluded = filter?.excludeTrajectoryIds && new Set(filter.excludeTrajectoryIds);
    const excludedHashes = excluded && new Set([...excluded].map(textHash));
    const domain = filter?.domain;
    return (slot) => {
      if (slotIdHashes[slot] === -1) return false;
      if (domain !== undefined && slotDomains[slot] !== domain) return false;
      if (sources && !sources.has(slotSources[slot]!)) return false;
      if (tasks && !tasks.has(slotTasks[slot]!)) return false;
      if (excludedHashes?.has(slotTrajectories[slot]!)) {
        // The hash matches: confirm on the record (a hash collision must not exclude it).
        const trajectoryId = this.peek(slot).trajectoryId;
        if (trajectoryId !== undefined && excluded!.has(trajectoryId)) return false;
      }
      return true;
    };
  }

  /** Number of live transitions. */
  get size(): number {
    return this.live;
  }

  /** The stored transition with this id, if any. */
  get(id: string): Transition | undefined {
    const slot = this.slotOf(id);
    return slot === undefined ? undefined : this.served(slot);
  }

  /** Every live transition, oldest first. */
  *transitions(): IterableIterator<Transition> {
    for (let slot = 0; slot < this.records.length; slot += 1) {
      if (this.slotIdHashes[slot] !== -1) yield this.served(slot);
    }
  }

  /** Counts by source and domain, index settings and flush state. */
  stats(): ReplayBufferStats {
    const bySource: Record<ExperienceSource, number> = { offline: 0, synthetic: 0, real: 0 };
    for (const [source, count] of this.sourceCounts) bySource[source as ExperienceSource] = count;
    return {
      size: this.live,
      occurrences: this.occurrences,
      indexedRows: this.records.length,
      capacity: this.capacity,
      bySource,
      byDomain: Object.fromEntries(this.domainCounts),
      tasks: this.taskCounts.size,
      embedderId: this.embedder.id,
      dimension: this.dimension,
      index: this.indexConfig,
      directory: this.directory,
      unflushedRows: this.directory ? this.records.length - this.flushedRows : 0,
      duplicatesSuppressed: this.duplicatesSuppressed,
    };
  }

  /**
   * Writes the vectors and faiss index of everything added so far and the manifest, and
   * syncs the record log. Reopening after a flush re-embeds nothing.
   */
  async flush(): Promise<void> {
    this.assertWritable('flush');
    return this.exclusive(() => this.flushNow());
  }

  private async flushNow(): Promise<void> {
    if (!this.directory || this.readOnly) return;
    const rows = this.records.length;
    const vectorFile = this.path('vectors');
    const rowBytes = this.dimension * 4;
    // Drop rows a crashed flush may have appended beyond the last manifest.
    const handle = await open(vectorFile, 'a+');
    try {
      await handle.truncate(this.flushedRows * rowBytes);
      for (const bytes of this.vectors.bytes(this.flushedRows, rows)) await handle.write(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (this.index) await this.index.write(this.path('index'));
    else await rm(this.path('index'), { force: true });
    await this.writer?.sync();
    await this.writeManifest(rows);
    this.flushedRows = rows;
  }

  private async writeManifest(indexedCount: number): Promise<void> {
    const manifest: Manifest = {
      format: 'dreamgym-replay-buffer',
      version: 1,
      embedderId: this.embedder.id,
      dimension: this.dimension,
      index: this.indexConfig,
      phiWeights: this.phiWeights,
      indexedCount,
      liveCount: this.live,
      updatedAt: new Date().toISOString(),
    };
    const file = this.path('manifest');
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(manifest, null, 2)}\n`);
    await rename(temporary, file);
  }

  /**
   * Re-embeds every live transition into a new index (optionally of another type) and
   * rewrites the buffer's files. Repairs what `open` reports as corrupt; also drops
   * evicted rows.
   */
  async rebuild(options: { index?: ReplayIndexOptions } = {}): Promise<void> {
    this.assertWritable('rebuild');
    return this.exclusive(async () => {
      if (options.index)
        this.indexConfig = parseOptions(ReplayIndexOptionsSchema, options.index, 'rebuild');
      await this.compactNow(true);
    });
  }

  /**
   * Drops evicted rows: renumbers live transitions into consecutive slots, rebuilds the
   * index (re-embedding when `reembed`, else from the stored vectors) and rewrites the log.
   */
  private async compactNow(reembed: boolean): Promise<void> {
    const liveSlots = this.liveSlots(0, this.records.length);
    const oldVectors = this.vectors;
    const transitions = liveSlots.map((slot) => this.served(slot));
    const counts = liveSlots.map((slot) => this.slotCounts[slot]!);
    this.records = [];
    this.slotIdHashes = [];
    this.slotDomains = [];
    this.slotSources = [];
    this.slotTasks = [];
    this.slotTrajectories = [];
    this.slotContents = [];
    this.slotCounts = [];
    this.slotPhis = [];
    this.logChunks = [];
    this.loggedLines = [];
    this.loggedChunks = [];
    this.loggedStarts = [];
    this.loggedEnds = [];
    this.slotsById.clear();
    this.slotsByContent.clear();
    this.slotsByPhi.clear();
    this.domainCounts.clear();
    this.sourceCounts.clear();
    this.taskCounts.clear();
    this.live = 0;
    this.occurrences = 0;
    this.evictCursor = 0;
    for (const [position, transition] of transitions.entries())
      this.registerSlot(transition, true, counts[position]!);
    this.vectors = new VectorStore(this.dimension);
    this.index = undefined;
    if (reembed) {
      await this.indexSlots(0, this.records.length);
    } else {
      const rows = new Float32Array(this.dimension * Math.min(EMBED_BATCH, liveSlots.length));
      for (let from = 0; from < liveSlots.length; from += EMBED_BATCH) {
        const batch = liveSlots.slice(from, from + EMBED_BATCH);
        for (const [row, slot] of batch.entries())
          rows.set(oldVectors.row(slot), row * this.dimension);
        await this.appendVectors(rows, batch.length);
      }
    }
    if (!this.directory) return;
    // Log first: a crash before the index is rewritten leaves an index longer than the
    // log, which `open` reports and `rebuild: true` repairs.
    await this.writer?.close();
    await writeJsonl(
      this.path('records'),
      ReplayLogEntrySchema,
      transitions.map((transition, position) => {
        const count = counts[position]!;
        return { op: 'add' as const, transition, ...(count > 1 ? { count } : {}) };
      }),
    );
    this.writer = await JsonlWriter.open(this.path('records'), ReplayLogEntrySchema);
    this.flushedRows = 0;
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
}

function clampScore(score: number): number {
  return Math.max(-1, Math.min(1, score));
}
