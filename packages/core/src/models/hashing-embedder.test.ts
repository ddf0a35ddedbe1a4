import { describe, expect, it } from 'vitest';
import { ConfigError, InvalidArgumentError } from '../errors.js';
import { HashingEmbedder, mix32 } from './hashing-embedder.js';

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let index = 0; index < a.length; index += 1) sum += a[index]! * b[index]!;
  return sum;
}

function nonZero(vector: Float32Array): number[] {
  return [...vector].filter((value) => value !== 0);
}

describe('HashingEmbedder', () => {
  it('names its algorithm and every option in its id', () => {
    expect(new HashingEmbedder().id).toBe('hashing-v1:dim=512:word=1:bigram=1:trigram=0.5:seed=0');
    expect(new HashingEmbedder({ dimension: 64, seed: 7 }).id).toBe(
      'hashing-v1:dim=64:word=1:bigram=1:trigram=0.5:seed=7',
    );
  });

  it('rejects a bad option with a ConfigError naming the field', () => {
    expect(() => new HashingEmbedder({ dimension: 3 })).toThrow(ConfigError);
    expect(() => new HashingEmbedder({ dimension: 3 })).toThrow(/`dimension`/);
  });

  it('hashes one word to one signed bucket of weight 1 after normalisation', async () => {
    const embedder = new HashingEmbedder({ dimension: 4096, bigramWeight: 0, trigramWeight: 0 });
    const [vector] = await embedder.embed(['apple']);
    expect(nonZero(vector!).map(Math.abs)).toEqual([1]);
  });

  it('weights words and bigrams as configured (hand-computed: 3 unit features -> 1/sqrt(3))', async () => {
    const embedder = new HashingEmbedder({ dimension: 65_536, trigramWeight: 0 });
    // "go", "to" and the bigram "go to": three features of weight 1 in distinct buckets.
    const [vector] = await embedder.embed(['Go to']);
    const values = nonZero(vector!).map(Math.abs);
    expect(values).toHaveLength(3);
    for (const value of values) expect(value).toBeCloseTo(1 / Math.sqrt(3), 6);
    // "ab" alone with trigrams " ab" and "ab " at 0.5 next to the word at 1: 1 / sqrt(1.5).
    const trigrams = new HashingEmbedder({ dimension: 65_536, bigramWeight: 0 });
    const [ab] = await trigrams.embed(['ab']);
    const sorted = nonZero(ab!)
      .map(Math.abs)
      .sort((a, b) => a - b);
    expect(sorted).toHaveLength(3);
    expect(sorted[0]).toBeCloseTo(0.5 / Math.sqrt(1.5), 6);
    expect(sorted[2]).toBeCloseTo(1 / Math.sqrt(1.5), 6);
  });

  it('returns unit vectors of the configured dimension, deterministically, ignoring case and punctuation', async () => {
    const embedder = new HashingEmbedder({ dimension: 128 });
    const texts = ['On the countertop 1, you see a apple 1.', '', '!!!', 'Ünïcode wörds'];
    const first = await embedder.embed(texts);
    const second = await new HashingEmbedder({ dimension: 128 }).embed(texts);
    for (const [index, vector] of first.entries()) {
      expect(vector).toHaveLength(128);
      expect(dot(vector, vector)).toBeCloseTo(1, 5);
      expect([...vector]).toEqual([...second[index]!]);
    }
    const [upper, lower] = await embedder.embed(['GO TO Shelf 1!', 'go to shelf 1']);
    expect([...upper!]).toEqual([...lower!]);
  });

  it('scores related texts above unrelated ones, and a different seed gives unrelated vectors', async () => {
    const embedder = new HashingEmbedder();
    const [take1, take2, open] = await embedder.embed([
      'take apple 1 from countertop 1',
      'take apple 2 from countertop 3',
      'open fridge 1',
    ]);
    expect(dot(take1!, take2!)).toBeGreaterThan(0.5);
    expect(dot(take1!, open!)).toBeLessThan(0.2);
    const [reseeded] = await new HashingEmbedder({ seed: 1 }).embed([
      'take apple 1 from countertop 1',
    ]);
    expect(Math.abs(dot(take1!, reseeded!))).toBeLessThan(0.3);
  });

  it('embedInto writes into a caller-owned buffer and checks its length', () => {
    const embedder = new HashingEmbedder({ dimension: 32 });
    const target = new Float32Array(32).fill(9);
    embedder.embedInto('go to shelf 1', target);
    expect([...target]).toEqual([...embedder.embedOne('go to shelf 1')]);
    expect(() => embedder.embedInto('x', new Float32Array(8))).toThrow(InvalidArgumentError);
  });

  it('mix32 matches the murmur3 finaliser on known values', () => {
    expect(mix32(0)).toBe(0);
    expect(mix32(1)).toBe(0x514e28b7);
  });
});
