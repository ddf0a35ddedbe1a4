import { describe, expect, it } from 'vitest';
import { IndexError } from '../errors.js';
import { loadFaiss } from './faiss-index.js';
import { hnswDepthsOffset, readHnswDepths, writeHnswDepths } from './hnsw-parameters.js';

describe('HNSW depths in a serialised faiss index', () => {
  it("reads faiss' defaults, rewrites them, and faiss keeps the new values through a round trip", async () => {
    const faiss = await loadFaiss();
    const metric = faiss.MetricType.METRIC_INNER_PRODUCT;
    const serialised = faiss.Index.fromFactory(8, 'HNSW16,Flat', metric).toBuffer();
    expect(readHnswDepths(serialised)).toEqual({ efConstruction: 40, efSearch: 16 });
    // Header 37 bytes (with the metric); for M = 16 faiss keeps 8 level probabilities (doubles) and 9
    // cumulative neighbour counts (ints); no levels, one offset, no neighbours; then the
    // entry point and max level (ints).
    expect(hnswDepthsOffset(serialised)).toBe(37 + (8 + 64) + (8 + 36) + 8 + (8 + 8) + 8 + 8);
    writeHnswDepths(serialised, { efConstruction: 100, efSearch: 64 });
    const index = faiss.Index.fromBuffer(serialised);
    index.add([1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    expect(index.search([0, 1, 0, 0, 0, 0, 0, 0], 1).labels).toEqual([1]);
    expect(readHnswDepths(index.toBuffer())).toEqual({ efConstruction: 100, efSearch: 64 });
  });

  it('refuses buffers that are not an HNSW index and out-of-range depths', async () => {
    const faiss = await loadFaiss();
    const flat = faiss.Index.fromFactory(8, 'Flat', faiss.MetricType.METRIC_INNER_PRODUCT);
    expect(() => readHnswDepths(flat.toBuffer())).toThrow(IndexError);
    const hnsw = faiss.Index.fromFactory(8, 'HNSW16,Flat').toBuffer();
    expect(() => writeHnswDepths(hnsw, { efConstruction: 0, efSearch: 16 })).toThrow(RangeError);
  });
});
