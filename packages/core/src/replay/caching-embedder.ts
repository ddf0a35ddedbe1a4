/**
 * An embedder with a bounded memo of its embeddings by text, for the replay buffer's query
 * side: a query's state is often one seen before (the same place, `Nothing happens.`), and
 * so is its action.
 */
import type { EmbeddingModel } from '../models/embedding-model.js';

/** `embedder` remembering up to `capacity` texts' embeddings (the memo is emptied when full). */
export function cachingEmbedder(embedder: EmbeddingModel, capacity: number): EmbeddingModel {
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
