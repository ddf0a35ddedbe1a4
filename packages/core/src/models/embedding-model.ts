/**
 * `EmbeddingModel`: maps texts to unit-length vectors. The replay buffer embeds
 * `phi(s, a)` with it and retrieves by cosine (inner product of unit vectors).
 */
export interface EmbeddingModel {
  /**
   * Identifies the embedding function exactly (model, dimension, settings), e.g.
   * `hashing-v1:dim=512`. A saved replay buffer refuses to load with a different id.
   */
  readonly id: string;
  /** Vector length. */
  readonly dimension: number;
  /** Embeds each text into an L2-normalised vector of `dimension` floats. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}
