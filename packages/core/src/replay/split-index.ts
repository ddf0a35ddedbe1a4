/**
 * The replay buffer's vector index in two faiss indexes over consecutive rows: the settled
 * part holds rows [0, settledSize), the fresh part the rows after them. A buffer with a
 * capacity keeps its evictable rows (those of write-backs) in the fresh part, so that the
 * compaction after evictions rebuilds only the fresh part: the settled rows (offline ones,
 * never evicted) keep their numbers and their graph. Rebuilding everything stalled a capped
 * `dreamgym serve` for 7-10 s at 31k offline rows (an HNSW build of every row); the fresh
 * part holds about as many rows as the capacity leaves to write-backs. A buffer without a
 * capacity never evicts and keeps every row settled (one index, as before).
 */
import { rm } from 'node:fs/promises';
import type { FaissVectorIndex, VectorIndexConfig } from './faiss-index.js';

/** A search's answer: labels (rows) and scores, best first; -1 pads missing ones. */
export interface IndexHits {
  labels: ArrayLike<number>;
  scores: ArrayLike<number>;
}

/** The two parts of the index (see the module comment). */
export class SplitIndex {
  /**
   * @param config The settings a fresh part is made with (the settled part's).
   */
  constructor(
    private config: VectorIndexConfig,
    readonly settled: FaissVectorIndex,
    private fresh: FaissVectorIndex | undefined = undefined,
  ) {}

  /** Rows in both parts (the rows are 0 .. size - 1, settled ones first). */
  get size(): number {
    return this.settled.size + this.freshSize;
  }

  /** Rows in the settled part. */
  get settledSize(): number {
    return this.settled.size;
  }

  /** Rows in the fresh part. */
  get freshSize(): number {
    return this.fresh?.size ?? 0;
  }

  /**
   * Appends `count` rows of `vectors` to the settled part (only while the fresh part is
   * empty: the settled rows come first) or to the fresh part.
   */
  add(vectors: Float32Array, count: number, threads: number, toFresh: boolean): void {
    if (toFresh || this.freshSize > 0) {
      this.fresh ??= this.settled.empty(this.config);
      this.fresh.add(vectors, count, threads);
    } else {
      this.settled.add(vectors, count, threads);
    }
  }

  /** The index without its fresh part, for rebuilding it (same settings). */
  withoutFresh(): SplitIndex {
    return new SplitIndex(this.config, this.settled);
  }

  /** The `k` nearest rows by inner product over both parts, best first. */
  search(query: Float32Array, k: number): IndexHits {
    const settled = this.settled.search(query, k);
    if (!this.fresh || this.fresh.size === 0) return settled;
    return mergeHits(settled, this.fresh.search(query, k), this.settled.size, 0, 0, k);
  }

  /**
   * Exact top `k` of each query (row-major) over both parts, `queries * k` labels and scores;
   * undefined with a stock faiss-node (see {@link FaissVectorIndex.searchExact}).
   */
  searchExact(
    queries: Float32Array,
    k: number,
    threads = 1,
  ): { labels: Float64Array; scores: Float32Array } | undefined {
    const settled = this.settled.searchExact(queries, k, threads);
    if (!settled || !this.fresh || this.fresh.size === 0) return settled;
    const fresh = this.fresh.searchExact(queries, k, threads);
    if (!fresh) return undefined;
    const count = queries.length / this.settled.dimension;
    const labels = new Float64Array(count * k);
    const scores = new Float32Array(count * k);
    for (let query = 0; query < count; query += 1) {
      const merged = mergeHits(settled, fresh, this.settled.size, query * k, query * k, k);
      labels.set(merged.labels, query * k);
      scores.set(merged.scores, query * k);
    }
    return { labels, scores };
  }

  /** The HNSW graph degree and depths (undefined for a flat index). */
  hnswParameters(): ReturnType<FaissVectorIndex['hnswParameters']> {
    return this.settled.hnswParameters();
  }

  /** Sets both parts' HNSW build and search depths (ignored by a flat index). */
  setDepths(depths: { efConstruction?: number; efSearch?: number }): void {
    this.settled.setDepths(depths);
    this.fresh?.setDepths(depths);
    if (this.config.type === 'hnsw') this.config = { ...this.config, ...depths };
  }

  /** Writes the settled part to `settledFile`, the fresh part to `freshFile` (or removes it). */
  async write(settledFile: string, freshFile: string): Promise<void> {
    await this.settled.write(settledFile);
    if (this.fresh && this.fresh.size > 0) await this.fresh.write(freshFile);
    else await rm(freshFile, { force: true });
  }
}

/**
 * The best `k` of two hit lists (each best first), `second`'s labels offset by `offset`;
 * `firstAt` and `secondAt` are where this query's `k` hits start in each.
 */
function mergeHits(
  first: IndexHits,
  second: IndexHits,
  offset: number,
  firstAt: number,
  secondAt: number,
  k: number,
): { labels: number[]; scores: number[] } {
  const labels: number[] = [];
  const scores: number[] = [];
  let a = firstAt;
  let b = secondAt;
  const firstEnd = Math.min(first.labels.length, firstAt + k);
  const secondEnd = Math.min(second.labels.length, secondAt + k);
  while (labels.length < k) {
    const takeFirst = a < firstEnd && first.labels[a]! >= 0;
    const takeSecond = b < secondEnd && second.labels[b]! >= 0;
    if (!takeFirst && !takeSecond) break;
    if (takeFirst && (!takeSecond || first.scores[a]! >= second.scores[b]!)) {
      labels.push(first.labels[a]!);
      scores.push(first.scores[a]!);
      a += 1;
    } else {
      labels.push(second.labels[b]! + offset);
      scores.push(second.scores[b]!);
      b += 1;
    }
  }
  return { labels, scores };
}
