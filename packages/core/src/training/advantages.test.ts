import { describe, expect, it } from 'vitest';
import {
  broadcastToSteps,
  discountedReturns,
  drGrpoAdvantages,
  gaeAdvantages,
  groupNormalizedAdvantages,
  grpoAdvantages,
  weighEpisodesAlike,
  whiten,
} from './advantages.js';

describe('GRPO advantages', () => {
  it('normalises by the group mean and sample std', () => {
    // mean 0.5, sample std sqrt((4 * 0.25) / 3) = 0.5773502691896258
    const advantages = grpoAdvantages([1, 0, 0, 1], ['a', 'a', 'a', 'a']);
    const expected = 0.5 / (0.5773502691896258 + 1e-6);
    expect(advantages[0]).toBeCloseTo(expected, 12);
    expect(advantages[1]).toBeCloseTo(-expected, 12);
    expect(advantages[2]).toBeCloseTo(-expected, 12);
    expect(advantages[3]).toBeCloseTo(expected, 12);
  });

  it('keeps groups apart; a group of one gets 0', () => {
    // a: mean 0.5, std sqrt(0.5); b: alone; c: mean 6, std sqrt(2)
    const advantages = grpoAdvantages([1, 0, 3, 5, 7], ['a', 'a', 'b', 'c', 'c'], 0);
    expect(advantages[0]).toBeCloseTo(0.5 / Math.SQRT1_2, 12);
    expect(advantages[1]).toBeCloseTo(-0.5 / Math.SQRT1_2, 12);
    expect(advantages[2]).toBe(0);
    expect(advantages[3]).toBeCloseTo(-1 / Math.SQRT2, 12);
    expect(advantages[4]).toBeCloseTo(1 / Math.SQRT2, 12);
  });

  it('gives 0 to every member of a group with equal rewards', () => {
    expect(grpoAdvantages([2, 2, 2], [7, 7, 7])).toEqual([0, 0, 0]);
    expect(drGrpoAdvantages([2, 2, 2], [7, 7, 7])).toEqual([0, 0, 0]);
  });

  it('Dr.GRPO only subtracts the group mean', () => {
    expect(drGrpoAdvantages([1, 0, 3, 5, 7], ['a', 'a', 'b', 'c', 'c'])).toEqual([
      0.5, -0.5, 0, -1, 1,
    ]);
    expect(groupNormalizedAdvantages([4], ['x'], { normalizeByStd: false })).toEqual([0]);
  });

  it('rejects mismatched lengths', () => {
    expect(() => grpoAdvantages([1, 2], ['a'])).toThrow(/differ in length/);
  });

  it('broadcasts episode advantages to every step', () => {
    expect(broadcastToSteps([0.5, -1], [2, 3])).toEqual([0.5, 0.5, -1, -1, -1]);
    expect(broadcastToSteps([0.5, 2], [0, 1])).toEqual([2]);
  });
});

describe('returns and GAE', () => {
  it('discounts returns backwards', () => {
    expect(discountedReturns([0, 0, 1], 0.5)).toEqual([0.25, 0.5, 1]);
    expect(discountedReturns([1, 0], 0.5, 4)).toEqual([2, 2]);
  });

  it('matches hand-computed GAE on one terminated episode', () => {
    // t=2: delta = 1 - 0.7 = 0.3; t=1: delta = 0.9*0.7 - 0.6 = 0.03, A = 0.03 + 0.72*0.3 = 0.246;
    // t=0: delta = 0.9*0.6 - 0.5 = 0.04, A = 0.04 + 0.72*0.246 = 0.21712
    const { advantages, returns } = gaeAdvantages({
      rewards: [0, 0, 1],
      values: [0.5, 0.6, 0.7],
      dones: [false, false, true],
      gamma: 0.9,
      lambda: 0.8,
      lastValue: 100, // ignored: the last step is done
    });
    expect(advantages[0]).toBeCloseTo(0.21712, 12);
    expect(advantages[1]).toBeCloseTo(0.246, 12);
    expect(advantages[2]).toBeCloseTo(0.3, 12);
    expect(returns[0]).toBeCloseTo(0.71712, 12);
    expect(returns[1]).toBeCloseTo(0.846, 12);
    expect(returns[2]).toBeCloseTo(1, 12);
  });

  it('stops bootstrapping at done and bootstraps a cut-off episode from lastValue', () => {
    // Episode 2 (cut off, V(s_T) = 0.4): t=3: 0.9*0.4 - 0.3 = 0.06; t=2: 0.9*0.3 - 0.2 = 0.07,
    // A = 0.07 + 0.72*0.06 = 0.1132. Episode 1: t=1 done: 1 - 0.6 = 0.4 (no V(s) of episode 2,
    // no A of episode 2); t=0: 0.9*0.6 - 0.5 = 0.04, A = 0.04 + 0.72*0.4 = 0.328.
    const { advantages } = gaeAdvantages({
      rewards: [0, 1, 0, 0],
      values: [0.5, 0.6, 0.2, 0.3],
      dones: [false, true, false, false],
      lastValue: 0.4,
      gamma: 0.9,
      lambda: 0.8,
    });
    expect(advantages[0]).toBeCloseTo(0.328, 12);
    expect(advantages[1]).toBeCloseTo(0.4, 12);
    expect(advantages[2]).toBeCloseTo(0.1132, 12);
    expect(advantages[3]).toBeCloseTo(0.06, 12);
  });

  it('with lambda 1 and zero values, GAE is the discounted return', () => {
    const { advantages } = gaeAdvantages({
      rewards: [0, 0, 1],
      values: [0, 0, 0],
      dones: [false, false, true],
      gamma: 0.5,
      lambda: 1,
    });
    expect(advantages).toEqual(discountedReturns([0, 0, 1], 0.5));
  });

  it('whitens to mean 0 and std 1; equal values map to 0', () => {
    const white = whiten([1, 3]);
    expect(white[0]).toBeCloseTo(-1, 6);
    expect(white[1]).toBeCloseTo(1, 6);
    expect(whiten([5, 5])).toEqual([0, 0]);
  });
});

describe('weighEpisodesAlike', () => {
  it('gives every episode the same total weight, at the batch scale', () => {
    // Mean length 20: +1 over 10 steps -> +2 a step (20 in all); -1 over 30 -> -2/3 (-20).
    const weighted = weighEpisodesAlike([1, -1], [10, 30]);
    expect(weighted[0]).toBeCloseTo(2, 12);
    expect(weighted[1]).toBeCloseTo(-2 / 3, 12);
    expect(weighted[0]! * 10 + weighted[1]! * 30).toBeCloseTo(0, 12);
    expect(weighEpisodesAlike([], [])).toEqual([]);
    expect(() => weighEpisodesAlike([1], [])).toThrow(/differ in length/);
  });
});
