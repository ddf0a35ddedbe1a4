/**
 * The replay buffer's vector index on faiss (`faiss-node`), loaded lazily: importing
 * `@dreamgym/core` never loads the native addon, only the first buffer that needs vectors.
 *
 * The set-up (`@dreamgym/cli`'s `setup/faiss-node.sh`) compiles faiss-node with a few additions
 * (`dreamgymBinding` on the module): vectors cross as Float32Arrays instead of element by
 * element, HNSW parameters are read and set in place, and the OpenMP team is chosen per
 * call. With a stock faiss-node (its GitHub prebuilt) everything still works, only slower:
 * vectors are copied into plain arrays, and efSearch is changed in a serialised copy.
 */
import { IndexError } from '../errors.js';
import { replaceFileAtomic } from '../files/atomic-write.js';
import { readHnswDepths, writeHnswDepths } from './hnsw-parameters.js';

/** Which faiss index holds the vectors. Inner product on unit vectors = cosine. */
export type VectorIndexConfig =
  | { type: 'flat' }
  | {
      type: 'hnsw';
      /** Graph degree (links per node). */
      m: number;
      /** Candidates kept while inserting (build quality vs build time). */
      efConstruction: number;
      /** Candidates kept while searching (recall vs latency); at least k. */
      efSearch: number;
      /** Recall@k the search depth is tuned to reach (see `index-tuning.ts`). */
      targetRecall?: number | undefined;
    };

/** What the set-up's additions give an index object. */
interface ExtendedIndex {
  addFloat32(vectors: Float32Array): void;
  searchFloat32(
    queries: Float32Array,
    k: number,
  ): { distances: Float32Array; labels: Float64Array };
  /** Added in binding version 2. */
  searchExactFloat32?(
    queries: Float32Array,
    k: number,
  ): { distances: Float32Array; labels: Float64Array };
  setParameter(name: string, value: number): void;
  getParameter(name: string): number | undefined;
  /** Added in binding version 4. */
  dispose?(): void;
}

/**
 * The parts of `faiss-node`'s `Index` the buffer uses. They are typed here, not imported from
 * `faiss-node`, so that `@dreamgym/core`'s public types never import the optional addon: a
 * project without it type-checks.
 */
interface FaissIndex {
  ntotal(): number;
  getDimension(): number;
  add(vectors: number[]): void;
  search(query: number[], k: number): { distances: number[]; labels: number[] };
  write(file: string): void;
  /** The serialised index (a Node `Buffer`, typed as the `Uint8Array` it is: no Node types in core's declarations). */
  toBuffer(): Uint8Array;
}

/** The module with the additions, and the static thread setters. */
interface FaissModule {
  dreamgymBinding?: number;
  MetricType: { METRIC_INNER_PRODUCT: number };
  Index: {
    fromFactory(dimension: number, description: string, metric?: number): FaissIndex;
    read(file: string): FaissIndex;
    /** Reads an index back from what `toBuffer` returned (that same object). */
    fromBuffer(buffer: Uint8Array): FaissIndex;
    setThreads?: (threads: number) => void;
    getThreads?: () => number;
  };
}

/**
 * One line: why the addon is missing and the command that sets it up from the installed
 * packages (`dreamgym doctor --fix` installs faiss-node without its install script, which
 * downloads from GitHub, and compiles it against Debian's libfaiss-dev; in a DreamGym checkout
 * it runs the repository's own set-up step).
 */
export const FAISS_BUILD_HELP =
  "The faiss-node native addon (the replay buffer's vector index, an optional dependency of @dreamgym/core) is not installed or not built: npm leaves it out where its install script cannot download from GitHub. Set it up with `npx @dreamgym/cli doctor --fix --only faiss` in your project (it compiles the addon against Debian's libfaiss-dev).";

/** Whether a serialised faiss index is an HNSW one (its fourcc is `IHNf`). */
function isHnswIndex(serialised: Uint8Array): boolean {
  return String.fromCharCode(...serialised.subarray(0, 4)) === 'IHNf';
}

let loading: Promise<FaissModule> | undefined;

/**
 * Loads `faiss-node` once. OpenMP waits passively (`OMP_WAIT_POLICY=PASSIVE` unless set):
 * a team spinning while it waits steals the cores a shared machine's other work needs.
 * Searches run on one thread (one query at a time is what the buffer asks, and a team per
 * query is slower); batch inserts and the recall measurements use
 * {@link defaultFaissThreads} unless a buffer's `threads` option says otherwise.
 *
 * @throws IndexError with build instructions when the addon is missing or does not load.
 */
export function loadFaiss(): Promise<FaissModule> {
  loading ??= (async () => {
    process.env.OMP_WAIT_POLICY ??= 'PASSIVE';
    // The stock binding cannot choose threads per call: one thread for everything.
    process.env.OMP_NUM_THREADS ??= '1';
    try {
      const module = (await import('faiss-node')) as unknown as FaissModule & {
        default?: FaissModule;
      };
      const faiss = module.default ?? module;
      if (typeof faiss.Index?.fromFactory !== 'function') {
        throw new Error('faiss-node loaded without Index.fromFactory');
      }
      faiss.Index.setThreads?.(1);
      return faiss;
    } catch (error) {
      loading = undefined;
      throw new IndexError(
        `${FAISS_BUILD_HELP} (load error: ${String((error as Error).message).split('\n')[0]})`,
        {
          cause: error,
        },
      );
    }
  })();
  return loading;
}

/**
 * faiss threads for batch work when a buffer does not say: `DREAMGYM_FAISS_THREADS`, else 1
 * (HNSW graphs built on several threads differ with the threads' timing, and seeded runs
 * must reproduce).
 */
export function defaultFaissThreads(): number {
  const configured = Number(process.env.DREAMGYM_FAISS_THREADS);
  if (Number.isInteger(configured) && configured > 0) return configured;
  return 1;
}

/** Whether the loaded addon has the set-up's additions. */
export async function faissBindingExtended(): Promise<boolean> {
  return (await loadFaiss()).dreamgymBinding !== undefined;
}

/** Rows per call into a stock addon: it takes plain arrays, so vectors are copied in slices. */
const ADD_BATCH_ROWS = 2048;

/** A faiss index over unit vectors, searched by inner product (cosine). */
export class FaissVectorIndex {
  private constructor(
    private index: FaissIndex,
    private readonly faiss: FaissModule,
    readonly dimension: number,
  ) {}

  private get extended(): (FaissIndex & ExtendedIndex) | undefined {
    return this.faiss.dreamgymBinding === undefined
      ? undefined
      : (this.index as FaissIndex & ExtendedIndex);
  }

  /** A new empty index of `config` for vectors of `dimension` floats. */
  static async create(dimension: number, config: VectorIndexConfig): Promise<FaissVectorIndex> {
    return FaissVectorIndex.createWith(await loadFaiss(), dimension, config);
  }

  /** A new empty index of `config`, of the same dimension (faiss is loaded already). */
  empty(config: VectorIndexConfig): FaissVectorIndex {
    return FaissVectorIndex.createWith(this.faiss, this.dimension, config);
  }

  private static createWith(
    faiss: FaissModule,
    dimension: number,
    config: VectorIndexConfig,
  ): FaissVectorIndex {
    const metric = faiss.MetricType.METRIC_INNER_PRODUCT;
    if (config.type === 'flat') {
      return new FaissVectorIndex(
        faiss.Index.fromFactory(dimension, 'Flat', metric),
        faiss,
        dimension,
      );
    }
    const index = new FaissVectorIndex(
      faiss.Index.fromFactory(dimension, `HNSW${config.m},Flat`, metric),
      faiss,
      dimension,
    );
    index.setDepths({ efConstruction: config.efConstruction, efSearch: config.efSearch });
    return index;
  }

  /**
   * Reads an index file written by {@link FaissVectorIndex.write}.
   *
   * @throws IndexError when the file is missing, unreadable or truncated, or of another dimension.
   */
  static async read(file: string, dimension: number): Promise<FaissVectorIndex> {
    const faiss = await loadFaiss();
    let index: FaissIndex;
    try {
      index = faiss.Index.read(file);
    } catch (error) {
      throw new IndexError(`cannot read the faiss index ${file}: ${(error as Error).message}`, {
        path: file,
        cause: error,
      });
    }
    if (index.getDimension() !== dimension) {
      throw new IndexError(
        `the faiss index ${file} holds vectors of dimension ${index.getDimension()}, expected ${dimension}`,
        { path: file },
      );
    }
    return new FaissVectorIndex(index, faiss, dimension);
  }

  /** Number of vectors in the index (their labels are 0 .. size - 1, in insertion order). */
  get size(): number {
    return this.index.ntotal();
  }

  /**
   * Appends `count` rows of `vectors` (row-major, `count * dimension` floats), on `threads`
   * OpenMP threads where the addon lets it choose (an HNSW insert runs in parallel).
   */
  add(vectors: Float32Array, count: number, threads = 1): void {
    const width = this.dimension;
    const extended = this.extended;
    if (extended) {
      this.withThreads(threads, () => extended.addFloat32(vectors.subarray(0, count * width)));
      return;
    }
    for (let start = 0; start < count; start += ADD_BATCH_ROWS) {
      const end = Math.min(count, start + ADD_BATCH_ROWS);
      this.index.add(Array.from(vectors.subarray(start * width, end * width)));
    }
  }

  /** The `k` (at most `size`) nearest labels by inner product, best first; -1 pads missing ones. */
  search(query: Float32Array, k: number): { labels: ArrayLike<number>; scores: ArrayLike<number> } {
    const limit = Math.min(k, this.size);
    if (limit <= 0) return { labels: [], scores: [] };
    const extended = this.extended;
    if (extended) {
      const result = extended.searchFloat32(query, limit);
      return { labels: result.labels, scores: result.distances };
    }
    const result = this.index.search(Array.from(query), limit);
    return { labels: result.labels, scores: result.distances };
  }

  /**
   * Exact top `k` of each of the queries (row-major) over the vectors the index holds, on
   * `threads` OpenMP threads: labels and scores, `queries * k` of each, best first per query.
   * Undefined with a stock faiss-node (the caller scans in JavaScript then).
   */
  searchExact(
    queries: Float32Array,
    k: number,
    threads = 1,
  ): { labels: Float64Array; scores: Float32Array } | undefined {
    const exact = this.extended?.searchExactFloat32?.bind(this.extended);
    if (!exact) return undefined;
    const result = this.withThreads(threads, () => exact(queries, k));
    return { labels: result.labels, scores: result.distances };
  }

  /** The HNSW graph degree and depths of this index (undefined for a flat one). */
  hnswParameters(): { m: number; efConstruction: number; efSearch: number } | undefined {
    const extended = this.extended;
    if (extended) {
      const m = extended.getParameter('M');
      if (m === undefined) return undefined;
      return {
        m,
        efConstruction: extended.getParameter('efConstruction')!,
        efSearch: extended.getParameter('efSearch')!,
      };
    }
    const buffer = this.index.toBuffer();
    if (!isHnswIndex(buffer)) return undefined;
    return { m: Number.NaN, ...readHnswDepths(buffer) };
  }

  /** Sets an HNSW index's build and search depths (ignored by a flat index). */
  setDepths(depths: { efConstruction?: number; efSearch?: number }): void {
    const extended = this.extended;
    if (extended) {
      if (extended.getParameter('M') === undefined) return;
      if (depths.efConstruction !== undefined)
        extended.setParameter('efConstruction', depths.efConstruction);
      if (depths.efSearch !== undefined) extended.setParameter('efSearch', depths.efSearch);
      return;
    }
    // The stock binding has no setter: rewrite the serialised index and read it back.
    const buffer = this.index.toBuffer();
    if (!isHnswIndex(buffer)) return;
    const current = readHnswDepths(buffer);
    writeHnswDepths(buffer, { ...current, ...depths });
    this.index = this.faiss.Index.fromBuffer(buffer);
  }

  /** Runs `work` with `threads` OpenMP threads (where the addon can choose), then one again. */
  private withThreads<T>(threads: number, work: () => T): T {
    const set = this.faiss.Index.setThreads;
    if (!set || threads <= 1) return work();
    set(threads);
    try {
      return work();
    } finally {
      set(1);
    }
  }

  /**
   * Frees the index's native memory now (with the set-up's additions; otherwise when V8
   * finalizes it). Nothing may use the index after.
   */
  dispose(): void {
    this.extended?.dispose?.();
  }

  /** Writes the index to `file` atomically (a temporary file renamed over it). */
  async write(file: string): Promise<void> {
    try {
      await replaceFileAtomic(file, async (temporary) => this.index.write(temporary));
    } catch (error) {
      throw new IndexError(`cannot write the faiss index ${file}: ${(error as Error).message}`, {
        path: file,
        cause: error,
      });
    }
  }
}
