import { describe, expect, it } from 'vitest';
import { formatTick, niceTicks } from './svg-chart.js';

describe('svg chart ticks', () => {
  it('labels thousands so that neighbouring ticks never read the same', () => {
    const labels = niceTicks(31_000, 33_200).map(formatTick);
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels).toContain('31.5k');
    expect(formatTick(120_000)).toBe('120k');
    expect(formatTick(0.25)).toBe('0.25');
    expect(formatTick(3)).toBe('3');
  });
});
