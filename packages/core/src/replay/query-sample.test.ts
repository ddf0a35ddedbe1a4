import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../random/seeded-random.js';
import { QuerySample } from './index-tuning.js';

function vectors(count: number, seed: number): Float32Array[] {
  const random = new SeededRandom(seed);
  return Array.from({ length: count }, () =>
    Float32Array.from({ length: 16 }, () => random.float() * 2 - 1),
  );
}

const kept = (sample: QuerySample) => sample.vectors().map((vector) => [...vector].join(','));

describe('QuerySample', () => {
  it('keeps the same queries whatever order they are offered in (concurrent searches reorder them)', () => {
    const queries = vectors(500, 3);
    const inOrder = new QuerySample(40);
    for (const query of queries) inOrder.offer(query);
    const shuffled = new QuerySample(40);
    for (const query of new SeededRandom(9).shuffle([...queries])) shuffled.offer(query);
    expect(inOrder.size).toBe(40);
    expect(inOrder.seen).toBe(500);
    expect(kept(shuffled)).toEqual(kept(inOrder));
  });

  it('counts a repeated query once and keeps copies, not the caller’s arrays', () => {
    const [first, second] = vectors(2, 4) as [Float32Array, Float32Array];
    const sample = new QuerySample(5);
    for (let repeat = 0; repeat < 10; repeat += 1) sample.offer(first);
    sample.offer(second);
    expect(sample.size).toBe(2);
    first.fill(0);
    expect(sample.vectors().some((vector) => vector.every((value) => value === 0))).toBe(false);
  });

  it('samples spread over the offered queries, not the first ones', () => {
    const queries = vectors(1000, 5);
    const sample = new QuerySample(100);
    for (const query of queries) sample.offer(query);
    const positions = sample
      .vectors()
      .map((vector) => queries.findIndex((query) => query[0] === vector[0]));
    expect(positions.filter((position) => position >= 500).length).toBeGreaterThan(30);
  });
});
