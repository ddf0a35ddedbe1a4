import { describe, expect, it } from 'vitest';
import { wilsonInterval95 } from './evaluation-metrics.js';

describe('wilsonInterval95', () => {
  it('matches hand-computed intervals', () => {
    const [low, high] = wilsonInterval95(5, 10);
    expect(low).toBeCloseTo(0.2366, 4);
    expect(high).toBeCloseTo(0.7634, 4);
    const [zeroLow, zeroHigh] = wilsonInterval95(0, 10);
    expect(zeroLow).toBe(0);
    expect(zeroHigh).toBeCloseTo(0.2775, 4);
    const [allLow, allHigh] = wilsonInterval95(134, 134);
    expect(allLow).toBeCloseTo(134 / (134 + 1.959963984540054 ** 2), 10);
    expect(allHigh).toBe(1);
  });

  it('is the whole range without trials', () => {
    expect(wilsonInterval95(0, 0)).toEqual([0, 1]);
  });
});
