import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { SeededRandom } from './seeded-random.js';

describe('SeededRandom', () => {
  it('gives the same stream for the same seed and different ones for different seeds', () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    const c = new SeededRandom(43);
    const streamA = Array.from({ length: 20 }, () => a.nextUint32());
    expect(Array.from({ length: 20 }, () => b.nextUint32())).toEqual(streamA);
    expect(Array.from({ length: 20 }, () => c.nextUint32())).not.toEqual(streamA);
  });

  it('resumes exactly from a saved state', () => {
    const random = new SeededRandom(7);
    for (let i = 0; i < 100; i += 1) random.float();
    const state = random.getState();
    const expected = Array.from({ length: 10 }, () => random.float());
    const restored = SeededRandom.fromState(JSON.parse(JSON.stringify(state)));
    expect(Array.from({ length: 10 }, () => restored.float())).toEqual(expected);
  });

  it('draws uniform floats and integers in range with the right mean', () => {
    const random = new SeededRandom(1);
    let sum = 0;
    let min = 1;
    let max = 0;
    const counts = new Array(5).fill(0);
    for (let i = 0; i < 50_000; i += 1) {
      const x = random.float();
      min = Math.min(min, x);
      max = Math.max(max, x);
      sum += x;
      counts[random.int(5)] += 1;
    }
    expect(min).toBeGreaterThanOrEqual(0);
    expect(max).toBeLessThan(1);
    expect(sum / 50_000).toBeCloseTo(0.5, 2);
    for (const count of counts) expect(count / 50_000).toBeCloseTo(0.2, 1);
  });

  it('draws standard normals', () => {
    const random = new SeededRandom(3);
    const samples = Array.from({ length: 50_000 }, () => random.normal());
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    const variance = samples.reduce((a, b) => a + (b - mean) ** 2, 0) / samples.length;
    expect(Math.abs(mean)).toBeLessThan(0.02);
    expect(variance).toBeCloseTo(1, 1);
  });

  it('samples weighted indices in proportion and never a zero weight', () => {
    const random = new SeededRandom(5);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30_000; i += 1) counts[random.weightedIndex([1, 0, 3])]! += 1;
    expect(counts[1]).toBe(0);
    expect(counts[2]! / counts[0]!).toBeCloseTo(3, 0);
    expect(() => random.weightedIndex([0, 0])).toThrow(InvalidArgumentError);
  });

  it('shuffles to a permutation and forks reproducible independent streams', () => {
    const random = new SeededRandom(9);
    const items = Array.from({ length: 50 }, (_, i) => i);
    const shuffled = random.shuffle([...items]);
    expect([...shuffled].sort((a, b) => a - b)).toEqual(items);
    expect(shuffled).not.toEqual(items);
    const state = random.getState();
    const forkA = random.fork('rollouts').nextUint32();
    expect(random.getState()).toEqual(state);
    expect(random.fork('rollouts').nextUint32()).toBe(forkA);
    expect(random.fork('curriculum').nextUint32()).not.toBe(forkA);
  });

  it('rejects bad arguments clearly', () => {
    const random = new SeededRandom(0);
    expect(() => random.int(0)).toThrow(/positive integer/);
    expect(() => random.choice([])).toThrow(/empty/);
    expect(() => new SeededRandom(Number.NaN)).toThrow(/finite/);
    expect(() => random.setState([1, 2, 3] as never)).toThrow(/four/);
  });
});
