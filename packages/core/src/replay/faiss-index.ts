/**
 * The replay buffer's vector index on faiss (`faiss-node`), loaded lazily: importing
 * `@dreamgym/core` never loads the native addon, only the first buffer that needs vectors.
 */
import { rename, rm } from 'node:fs/promises';
import type * as Faiss from 'faiss-node';
import { IndexError } from '../errors.js';
import { type HnswDepths, writeHnswDepths } from './hnsw-parameters.js';

type FaissModule = typeof Faiss;

/** Which faiss index holds the vectors. Inner product on unit vectors = cosine. */
export type VectorIndexConfig =
  | { type: 'flat' }
  | ({ type: 'hnsw' /** Graph degree (links per node). */; m: number } & HnswDepths);

/** Exactly how to make `faiss-node` loadable where its install script was not run. */
export const FAISS_BUILD_HELP =
  "The faiss-node native addon is not built. npm does not run faiss-node's install script in this repository (allowScripts); build it with `bash scripts/setup.sh` (root; it installs Debian's libfaiss-dev and compiles the addon against it, or uses the prebuilt where GitHub is reachable), then check with `node -e \"require('faiss-node')\"`. Outside this repository: `npm rebuild faiss-node` on a machine that can reach GitHub.";

let loading: Promise<FaissModule> | undefined;

/**
 * Loads `faiss-node` once. Unless `OMP_NUM_THREADS` is set, faiss runs single-threaded:
 * one query at a time is what the buffer asks, and an OpenMP team spinning up per query
 * is several times slower on a few shared cores than one thread.
 *
 * @throws IndexError with build instructions when the addon is missing or does not load.
 */
export function loadFaiss(): Promise<FaissModule> {
  loading ??= (async () => {
    process.env.OMP_NUM_THREADS ??= '1';
    try {
      const module = (await import('faiss-node')) as FaissModule & { default?: FaissModule };
      const faiss = module.default ?? module;
      if (typeof faiss.Index?.fromFactory !== 'function') {
        throw new Error('faiss-node loaded without Index.fromFactory');
      }
      return faiss;
    } catch (error) {
      loading = undefined;
      throw new IndexError(`${FAISS_BUILD_HELP} (load error: ${(error as Error).message})`, {
        cause: error,
      });
    }
  })();
  return loading;
}

/** Rows per call into the addon: it takes plain arrays, so vectors are copied in slices. */
const ADD_BATCH_ROWS = 2048;

/** A faiss index over unit vectors, searched by inner product (cosine). */
export class FaissVectorIndex {
  private constructor(
    private readonly index: Faiss.Index,
    readonly dimension: number,
  ) {}

  /** A new empty index of `config` for vectors of `dimension` floats. */
  static async create(dimension: number, config: VectorIndexConfig): Promise<FaissVectorIndex> {
    const faiss = await loadFaiss();
    const metric = faiss.MetricType.METRIC_INNER_PRODUCT;
    if (config.type === 'flat') {
      return new FaissVectorIndex(faiss.Index.fromFactory(dimension, 'Flat', metric), dimension);
    }
    const empty = faiss.Index.fromFactory(dimension, `HNSW${config.m},Flat`, metric).toBuffer();
    writeHnswDepths(empty, { efConstruction: config.efConstruction, efSearch: config.efSearch });
    return new FaissVectorIndex(faiss.Index.fromBuffer(empty), dimension);
  }

  /**
   * Reads an index file written by {@link FaissVectorIndex.write}.
   *
   * @throws IndexError when the file is missing, unreadable or truncated, or of another dimension.
   */
  static async read(file: string, dimension: number): Promise<FaissVectorIndex> {
    const faiss = await loadFaiss();
    let index: Faiss.Index;
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
    return new FaissVectorIndex(index, dimension);
  }

  /** Number of vectors in the index (their labels are 0 .. size - 1, in insertion order). */
  get size(): number {
    return this.index.ntotal();
  }

  /** Appends `count` rows of `vectors` (row-major, `count * dimension` floats). */
  add(vectors: Float32Array, count: number): void {
    const width = this.dimension;
    for (let start = 0; start < count; start += ADD_BATCH_ROWS) {
      const end = Math.min(count, start + ADD_BATCH_ROWS);
      this.index.add(Array.from(vectors.subarray(start * width, end * width)));
    }
  }

  /** The `k` (at most `size`) nearest labels by inner product, best first; -1 pads missing ones. */
  search(query: Float32Array, k: number): { labels: number[]; scores: number[] } {
    const limit = Math.min(k, this.size);
    if (limit <= 0) return { labels: [], scores: [] };
    const result = this.index.search(Array.from(query), limit);
    return { labels: result.labels, scores: result.distances };
  }

  /** Writes the index to `file` atomically (a temporary file renamed over it). */
  async write(file: string): Promise<void> {
    const temporary = `${file}.${process.pid}.tmp`;
    try {
      this.index.write(temporary);
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw new IndexError(`cannot write the faiss index ${file}: ${(error as Error).message}`, {
        path: file,
        cause: error,
      });
    }
  }
}
