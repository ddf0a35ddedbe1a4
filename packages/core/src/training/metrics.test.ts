import { describe, expect, it } from 'vitest';
import { IterationMetricsSchema } from './metrics.js';

describe('IterationMetricsSchema', () => {
  it('names the bad field', () => {
    const result = IterationMetricsSchema.safeParse({ iteration: 1, phase: 'dream' });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.path).toEqual(['phase']);
  });
});
