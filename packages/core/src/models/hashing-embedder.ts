/**
 * `HashingEmbedder`: the embedded default {@link EmbeddingModel}. No weights, no server:
 * word unigrams, word bigrams and character trigrams are hashed into a fixed number of
 * signed buckets (the "hashing trick"), then the vector is L2-normalised, so the inner
 * product of two embeddings is their cosine similarity. Deterministic across runs,
 * machines and processes, which is what lets a saved replay buffer be reloaded without
 * re-embedding.
 */
import { z } from 'zod';
import { InvalidArgumentError } from '../errors.js';
import { parseOptions } from '../parse-options.js';
import type { EmbeddingModel } from './embedding-model.js';
import { normalizeInPlace } from './openai-compatible-embedding-model.js';

/** Options of {@link HashingEmbedder}; every field changes the embedding and its `id`. */
export const HashingEmbedderOptionsSchema = z.object({
  /** Vector length (number of hash buckets). Larger means fewer collisions, more memory. */
  dimension: z.number().int().min(8).max(65_536).default(512),
  /** Weight of each word (letters and digits, lower-cased). */
  wordWeight: z.number().nonnegative().finite().default(1),
  /** Weight of each pair of adjacent words: keeps some word order ("put apple" vs "apple put"). */
  bigramWeight: z.number().nonnegative().finite().default(1),
  /** Weight of each character trigram of a word padded with spaces: robust to inflections and numbering. */
  trigramWeight: z.number().nonnegative().finite().default(0.5),
  /** Hash seed: two embedders with different seeds produce unrelated vectors. */
  seed: z.number().int().nonnegative().max(0xffffffff).default(0),
});
/** Options of {@link HashingEmbedder} as accepted (defaults not yet applied). */
export type HashingEmbedderOptions = z.input<typeof HashingEmbedderOptionsSchema>;

const WORD_KIND = 0x2f8a1d3b;
const BIGRAM_KIND = 0x51c7e9a5;
const TRIGRAM_KIND = 0x6b43a9b5;
const EMPTY_KIND = 0x1b873593;
const SPACE = 32;

/** murmur3's 32-bit finaliser: spreads every input bit over the whole word. */
export function mix32(value: number): number {
  let hash = value >>> 0;
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b) >>> 0;
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35) >>> 0;
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** One FNV-1a step: the running hash of a character sequence extended by `code`. */
function fnvStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, 0x01000193) >>> 0;
}

/** True for characters that belong to words: ASCII letters and digits, and any non-ASCII character. */
function isWordCode(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    code > 127
  );
}

/**
 * Adds `weight` times a signed unit to the bucket that `hash` selects: the bucket from the
 * low bits, the sign from the top bit, so that collisions cancel out on average.
 */
function addFeature(vector: Float32Array, hash: number, weight: number): void {
  const mixed = mix32(hash);
  const bucket = (mixed & 0x7fffffff) % vector.length;
  vector[bucket]! += mixed >>> 31 === 0 ? weight : -weight;
}

/**
 * Feature-hashing text embedder (see the module comment). The id names the algorithm
 * version and every option, e.g. `hashing-v1:dim=512:word=1:bigram=1:trigram=0.5:seed=0`.
 *
 * @example
 * const embedder = new HashingEmbedder({ dimension: 256 });
 * const [a, b] = await embedder.embed(['take apple 1 from countertop 1', 'take apple 2 from table 1']);
 */
export class HashingEmbedder implements EmbeddingModel {
  readonly id: string;
  readonly dimension: number;
  private readonly options: z.output<typeof HashingEmbedderOptionsSchema>;

  constructor(options: HashingEmbedderOptions = {}) {
    const parsed = parseOptions(HashingEmbedderOptionsSchema, options, 'HashingEmbedder');
    this.options = parsed;
    this.dimension = parsed.dimension;
    const { dimension, wordWeight, bigramWeight, trigramWeight, seed } = parsed;
    this.id = `hashing-v1:dim=${dimension}:word=${wordWeight}:bigram=${bigramWeight}:trigram=${trigramWeight}:seed=${seed}`;
  }

  /** Embeds each text; see {@link HashingEmbedder.embedInto} for the allocation-free form. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  /** Embeds one text synchronously into a new unit vector. */
  embedOne(text: string): Float32Array {
    const vector = new Float32Array(this.dimension);
    this.embedInto(text, vector);
    return vector;
  }

  /**
   * Writes the unit embedding of `text` into `target` (length `dimension`, overwritten),
   * allocating nothing but a lower-cased copy of non-ASCII text.
   */
  embedInto(text: string, target: Float32Array): void {
    if (target.length !== this.dimension) {
      throw new InvalidArgumentError(
        `embedInto: target has ${target.length} floats, expected ${this.dimension}.`,
        { argument: 'target' },
      );
    }
    target.fill(0);
    const { wordWeight, bigramWeight, trigramWeight, seed } = this.options;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the range test is the point
    const source = /[^\u0000-\u007f]/.test(text) ? text.toLowerCase() : text;
    const wordSeed = (0x811c9dc5 ^ seed ^ WORD_KIND) >>> 0;
    let features = 0;
    let previousWord = 0;
    let hasPrevious = false;
    let index = 0;
    const length = source.length;
    while (index < length) {
      let code = source.charCodeAt(index);
      if (!isWordCode(code)) {
        index += 1;
        continue;
      }
      // One word: its hash, and its padded character trigrams (" w", "wo", ..., "d ").
      let wordHash = wordSeed;
      let before2 = SPACE;
      let before1 = SPACE;
      while (index < length && isWordCode(code)) {
        if (code >= 65 && code <= 90) code += 32;
        wordHash = fnvStep(wordHash, code);
        if (trigramWeight > 0 && before1 !== SPACE) {
          addFeature(target, trigram(before2, before1, code, seed), trigramWeight);
          features += 1;
        }
        before2 = before1;
        before1 = code;
        index += 1;
        code = index < length ? source.charCodeAt(index) : SPACE;
      }
      if (trigramWeight > 0) {
        // The closing trigram ("d " padded, or " a " for a one-letter word).
        addFeature(target, trigram(before2, before1, SPACE, seed), trigramWeight);
        features += 1;
      }
      if (wordWeight > 0) {
        addFeature(target, wordHash, wordWeight);
        features += 1;
      }
      if (bigramWeight > 0 && hasPrevious) {
        addFeature(target, (mix32(previousWord ^ BIGRAM_KIND) ^ wordHash) >>> 0, bigramWeight);
        features += 1;
      }
      previousWord = wordHash;
      hasPrevious = true;
    }
    if (features === 0 || !target.some((value) => value !== 0)) {
      // Text without words (or whose features all cancelled) still needs a direction.
      target.fill(0);
      addFeature(target, (seed ^ EMPTY_KIND) >>> 0, 1);
    }
    normalizeInPlace(target);
  }
}

/** Hash of the character trigram (a, b, c) within the embedder's seed. */
function trigram(first: number, second: number, third: number, seed: number): number {
  let hash = (0x811c9dc5 ^ seed ^ TRIGRAM_KIND) >>> 0;
  hash = fnvStep(hash, first);
  hash = fnvStep(hash, second);
  return fnvStep(hash, third);
}
