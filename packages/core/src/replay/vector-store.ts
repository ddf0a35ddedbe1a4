/**
 * Vectors kept beside the faiss index, in fixed-size Float32Array chunks (growth never
 * copies, and no single allocation approaches typed-array limits). They serve the exact
 * scan over a filtered subset, compaction after evictions, and the `vectors.f32` file.
 */
import type { FileHandle } from 'node:fs/promises';

const CHUNK_ROWS = 16_384;
/**
 * Most bytes of one allocation when many rows arrive at once (a reload). Each allocation of
 * outside-heap memory may trigger a full garbage collection, so a reload of a gigabyte of
 * vectors allocates a few slabs, not one 16 MiB chunk at a time.
 */
const SLAB_BYTES = 2 ** 30;

/** Row-major float32 vectors, addressed by slot. */
export class VectorStore {
  private readonly chunks: Float32Array[] = [];
  private rows = 0;

  constructor(readonly dimension: number) {}

  /** Number of rows stored. */
  get size(): number {
    return this.rows;
  }

  /** Appends `count` rows from `vectors` (row-major). */
  append(vectors: Float32Array, count: number): void {
    const width = this.dimension;
    for (let row = 0; row < count; row += 1) {
      const slot = this.rows;
      const chunkIndex = Math.floor(slot / CHUNK_ROWS);
      if (chunkIndex === this.chunks.length) this.chunks.push(new Float32Array(CHUNK_ROWS * width));
      const offset = (slot % CHUNK_ROWS) * width;
      this.chunks[chunkIndex]!.set(vectors.subarray(row * width, (row + 1) * width), offset);
      this.rows += 1;
    }
  }

  /**
   * Appends `count` rows read from `handle` at byte `position`, straight into chunk memory.
   *
   * @throws RangeError when the file ends early.
   */
  async appendFromFile(handle: FileHandle, position: number, count: number): Promise<void> {
    const width = this.dimension;
    this.reserve(this.rows + count);
    let remaining = count;
    let at = position;
    while (remaining > 0) {
      const chunkIndex = Math.floor(this.rows / CHUNK_ROWS);
      if (chunkIndex === this.chunks.length) this.chunks.push(new Float32Array(CHUNK_ROWS * width));
      const chunk = this.chunks[chunkIndex]!;
      const rows = Math.min(remaining, CHUNK_ROWS - (this.rows % CHUNK_ROWS));
      const target = new Uint8Array(
        chunk.buffer,
        (this.rows % CHUNK_ROWS) * width * 4,
        rows * width * 4,
      );
      let filled = 0;
      while (filled < target.byteLength) {
        const { bytesRead } = await handle.read(
          target,
          filled,
          target.byteLength - filled,
          at + filled,
        );
        if (bytesRead === 0)
          throw new RangeError(`vector file ended ${target.byteLength - filled} bytes early`);
        filled += bytesRead;
      }
      this.rows += rows;
      remaining -= rows;
      at += target.byteLength;
    }
  }

  /** Allocates the chunks for `rows` rows in all, several chunks per slab. */
  private reserve(rows: number): void {
    const chunkBytes = CHUNK_ROWS * this.dimension * 4;
    const needed = Math.ceil(rows / CHUNK_ROWS);
    while (this.chunks.length < needed) {
      const count = Math.min(
        needed - this.chunks.length,
        Math.max(1, Math.floor(SLAB_BYTES / chunkBytes)),
      );
      const slab = new ArrayBuffer(count * chunkBytes);
      for (let index = 0; index < count; index += 1) {
        this.chunks.push(new Float32Array(slab, index * chunkBytes, CHUNK_ROWS * this.dimension));
      }
    }
  }

  /** The vector of `slot` (a view, not a copy). */
  row(slot: number): Float32Array {
    const width = this.dimension;
    const offset = (slot % CHUNK_ROWS) * width;
    return this.chunks[Math.floor(slot / CHUNK_ROWS)]!.subarray(offset, offset + width);
  }

  /** Inner product of `query` with the vector of `slot`. */
  dot(query: Float32Array, slot: number): number {
    const width = this.dimension;
    const chunk = this.chunks[Math.floor(slot / CHUNK_ROWS)]!;
    const offset = (slot % CHUNK_ROWS) * width;
    // Four running sums: independent additions the CPU can overlap.
    let first = 0;
    let second = 0;
    let third = 0;
    let fourth = 0;
    let index = 0;
    for (; index + 3 < width; index += 4) {
      const at = offset + index;
      first += query[index]! * chunk[at]!;
      second += query[index + 1]! * chunk[at + 1]!;
      third += query[index + 2]! * chunk[at + 2]!;
      fourth += query[index + 3]! * chunk[at + 3]!;
    }
    for (; index < width; index += 1) first += query[index]! * chunk[offset + index]!;
    return first + second + third + fourth;
  }

  /** Rows [start, end) as contiguous byte views, chunk by chunk (for writing to a file). */
  *bytes(start: number, end: number): Generator<Uint8Array> {
    const width = this.dimension;
    let slot = start;
    while (slot < end) {
      const chunkIndex = Math.floor(slot / CHUNK_ROWS);
      const chunkEnd = Math.min(end, (chunkIndex + 1) * CHUNK_ROWS);
      const chunk = this.chunks[chunkIndex]!;
      const from = (slot % CHUNK_ROWS) * width;
      const to = from + (chunkEnd - slot) * width;
      yield new Uint8Array(chunk.buffer, chunk.byteOffset + from * 4, (to - from) * 4);
      slot = chunkEnd;
    }
  }

  /** Rows [start, end) copied into one contiguous array (for adding to faiss). */
  slice(start: number, end: number): Float32Array {
    const out = new Float32Array((end - start) * this.dimension);
    let offset = 0;
    for (const bytes of this.bytes(start, end)) {
      out.set(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4), offset);
      offset += bytes.byteLength / 4;
    }
    return out;
  }
}

/** Keeps the `k` best (highest score) candidates seen so far, best first. */
export class TopK {
  readonly slots: number[] = [];
  readonly scores: number[] = [];

  constructor(readonly k: number) {}

  /** Lowest score still kept once full; candidates at or below it are skipped. */
  get threshold(): number {
    return this.slots.length < this.k ? Number.NEGATIVE_INFINITY : this.scores[this.k - 1]!;
  }

  offer(slot: number, score: number): void {
    if (this.k <= 0 || score <= this.threshold) return;
    let position = this.slots.length < this.k ? this.slots.length : this.k - 1;
    while (position > 0 && this.scores[position - 1]! < score) {
      if (position < this.k) {
        this.slots[position] = this.slots[position - 1]!;
        this.scores[position] = this.scores[position - 1]!;
      }
      position -= 1;
    }
    this.slots[position] = slot;
    this.scores[position] = score;
  }
}

/**
 * Keeps the `k` best candidates by score, then by count (more first), then by slot (older
 * first): the final ranking of a search, where equal scores are common (transitions with
 * the same state and action) and the more frequent outcome should be seen first.
 */
export class RankedTopK {
  readonly slots: number[] = [];
  readonly scores: number[] = [];
  readonly counts: number[] = [];

  constructor(readonly k: number) {}

  /** Whether (`slot`, `score`, `count`) would enter the kept `k` now. */
  admits(slot: number, score: number, count: number): boolean {
    if (this.k <= 0) return false;
    if (this.slots.length < this.k) return true;
    return this.before(slot, score, count, this.k - 1);
  }

  offer(slot: number, score: number, count: number): void {
    if (!this.admits(slot, score, count)) return;
    let position = this.slots.length < this.k ? this.slots.length : this.k - 1;
    while (position > 0 && this.before(slot, score, count, position - 1)) {
      if (position < this.k) {
        this.slots[position] = this.slots[position - 1]!;
        this.scores[position] = this.scores[position - 1]!;
        this.counts[position] = this.counts[position - 1]!;
      }
      position -= 1;
    }
    this.slots[position] = slot;
    this.scores[position] = score;
    this.counts[position] = count;
  }

  /** Whether the candidate ranks before the one kept at `position`. */
  private before(slot: number, score: number, count: number, position: number): boolean {
    const other = this.scores[position]!;
    if (score !== other) return score > other;
    const otherCount = this.counts[position]!;
    if (count !== otherCount) return count > otherCount;
    return slot < this.slots[position]!;
  }
}

/**
 * Exact top-k by inner product over every row that `accept` admits: the brute-force
 * typed-array scan (also the benchmark's baseline).
 */
export function exactTopK(
  store: VectorStore,
  query: Float32Array,
  k: number,
  accept: (slot: number) => boolean = () => true,
): TopK {
  const best = new TopK(k);
  for (let slot = 0; slot < store.size; slot += 1) {
    if (!accept(slot)) continue;
    best.offer(slot, store.dot(query, slot));
  }
  return best;
}
