/**
 * HNSW build and search depths in a serialised faiss `IndexHNSWFlat`.
 *
 * faiss-node exposes no setter for `efConstruction` / `efSearch` (faiss' defaults are 40
 * and 16; 16 loses recall at k = 8). Both are stored in the index file, so the buffer
 * creates an empty index, rewrites them in its (tiny) serialised form and reads it back;
 * the values then travel with every saved index. The layout is faiss' `write_index`
 * format, unchanged since faiss 1.5: fourcc `IHNf`, the index header, then the HNSW
 * struct (five length-prefixed vectors, entry point, max level, efConstruction,
 * efSearch, upper beam), then the flat storage.
 */
import { IndexError } from '../errors.js';

/** The depths of an HNSW graph search. */
export interface HnswDepths {
  /** Candidates kept while inserting a vector (build quality vs build time). */
  efConstruction: number;
  /** Candidates kept while searching (recall vs latency); at least k. */
  efSearch: number;
}

/** Byte offset of `efConstruction` in a serialised `IndexHNSWFlat` (efSearch follows it). */
export function hnswDepthsOffset(buffer: Uint8Array): number {
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const fail = (why: string): never => {
    throw new IndexError(
      `Unrecognised faiss HNSW index layout (${why}); cannot set efConstruction/efSearch. Use the flat index type, or report the faiss-node version.`,
    );
  };
  if (buffer.byteLength < 64) fail('buffer too short');
  const fourcc = String.fromCharCode(buffer[0]!, buffer[1]!, buffer[2]!, buffer[3]!);
  if (fourcc !== 'IHNf') fail(`fourcc ${JSON.stringify(fourcc)} instead of "IHNf"`);
  // Header: fourcc, d (int32), ntotal (int64), two dummy int64, is_trained (1 byte), metric (int32).
  let offset = 4 + 4 + 8 + 8 + 8 + 1;
  const metric = view.getInt32(offset, true);
  offset += 4;
  // Metrics other than inner product (0) and L2 (1) store a float argument.
  if (metric > 1) offset += 4;
  // assign_probas (double), cum_nneighbor_per_level (int32), levels (int32), offsets (uint64), neighbors (int32).
  for (const elementBytes of [8, 4, 4, 8, 4]) {
    if (offset + 8 > buffer.byteLength) fail('truncated vector length');
    const count = Number(view.getBigUint64(offset, true));
    offset += 8 + count * elementBytes;
  }
  // entry_point and max_level (int32 each), then efConstruction and efSearch.
  offset += 8;
  if (offset + 8 > buffer.byteLength) fail('truncated HNSW parameters');
  return offset;
}

/** Reads efConstruction and efSearch from a serialised `IndexHNSWFlat`. */
export function readHnswDepths(buffer: Uint8Array): HnswDepths {
  const offset = hnswDepthsOffset(buffer);
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return {
    efConstruction: view.getInt32(offset, true),
    efSearch: view.getInt32(offset + 4, true),
  };
}

/** Overwrites efConstruction and efSearch in a serialised `IndexHNSWFlat`, in place. */
export function writeHnswDepths(buffer: Uint8Array, depths: HnswDepths): void {
  for (const [name, value] of Object.entries(depths)) {
    if (!Number.isInteger(value) || value < 1 || value > 1_000_000) {
      throw new RangeError(`HNSW ${name} must be an integer in [1, 1000000], got ${value}.`);
    }
  }
  const offset = hnswDepthsOffset(buffer);
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  view.setInt32(offset, depths.efConstruction, true);
  view.setInt32(offset + 4, depths.efSearch, true);
}
