import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import {
  clippedSurrogate,
  k3KlDivergence,
  ppoStepLoss,
  resolvePpoLossOptions,
} from './ppo-loss.js';

const clip = { clipLow: 0.2, clipHigh: 0.28, dualClip: undefined };
const at = (ratio: number) => Math.log(ratio);

describe('clipped surrogate', () => {
  it('is -A r inside the clip range, with gradient -A r', () => {
    const term = clippedSurrogate(at(1.1), 0, 2, clip);
    expect(term.loss).toBeCloseTo(-2.2, 12);
    expect(term.dLogprob).toBeCloseTo(-2.2, 12);
    expect(term.clipped).toBe(false);
  });

  it('clips above 1 + clipHigh for positive advantages (no gradient)', () => {
    const term = clippedSurrogate(at(1.5), 0, 2, clip);
    expect(term.loss).toBeCloseTo(-2.56, 12);
    expect(term.dLogprob).toBe(0);
    expect(term.clipped).toBe(true);
  });

  it('clips below 1 - clipLow for negative advantages', () => {
    const term = clippedSurrogate(at(0.5), 0, -1, clip);
    expect(term.loss).toBeCloseTo(0.8, 12);
    expect(term.dLogprob).toBe(0);
    expect(term.clipped).toBe(true);
    const positive = clippedSurrogate(at(0.5), 0, 1, clip);
    expect(positive.loss).toBeCloseTo(-0.5, 12);
    expect(positive.dLogprob).toBeCloseTo(-0.5, 12);
  });

  it('uses separate low and high ranges (clip-higher)', () => {
    expect(clippedSurrogate(at(1.25), 0, 1, clip).clipped).toBe(false);
    const symmetric = clippedSurrogate(at(1.25), 0, 1, { ...clip, clipHigh: 0.2 });
    expect(symmetric.loss).toBeCloseTo(-1.2, 12);
    expect(symmetric.clipped).toBe(true);
  });

  it('dual clip caps the loss of negative advantages at -A c', () => {
    const uncapped = clippedSurrogate(at(4), 0, -1, clip);
    expect(uncapped.loss).toBeCloseTo(4, 12);
    expect(uncapped.dLogprob).toBeCloseTo(4, 12);
    const capped = clippedSurrogate(at(4), 0, -1, { ...clip, dualClip: 3 });
    expect(capped.loss).toBeCloseTo(3, 12);
    expect(capped.dLogprob).toBe(0);
    expect(capped.clipped).toBe(true);
    // Below the cap the dual clip changes nothing; positive advantages are never dual-clipped.
    expect(clippedSurrogate(at(1.5), 0, -1, { ...clip, dualClip: 3 }).loss).toBeCloseTo(1.5, 12);
    expect(clippedSurrogate(at(4), 0, 1, { ...clip, dualClip: 3 }).loss).toBeCloseTo(-1.28, 12);
  });
});

describe('k3 KL and the full step loss', () => {
  it('k3 = exp(ref - logp) - (ref - logp) - 1', () => {
    // ref - logp = ln 0.5: 0.5 + ln 2 - 1
    const term = k3KlDivergence(Math.log(0.5), Math.log(0.25));
    expect(term.kl).toBeCloseTo(0.5 + Math.LN2 - 1, 12);
    expect(term.dLogprob).toBeCloseTo(0.5, 12);
    expect(k3KlDivergence(-1.3, -1.3)).toEqual({ kl: 0, dLogprob: 0 });
  });

  it('adds beta * KL and subtracts the entropy bonus', () => {
    const config = resolvePpoLossOptions({ klCoefficient: 0.1, entropyCoefficient: 0.01 });
    const loss = ppoStepLoss(
      {
        logprob: Math.log(0.5),
        oldLogprob: Math.log(0.5),
        referenceLogprob: Math.log(0.25),
        advantage: 2,
        entropy: 0.6,
      },
      config,
    );
    const kl = 0.5 + Math.LN2 - 1;
    expect(loss.policyLoss).toBeCloseTo(-2, 12);
    expect(loss.kl).toBeCloseTo(kl, 12);
    expect(loss.loss).toBeCloseTo(-2 + 0.1 * kl - 0.006, 12);
    expect(loss.dLogprob).toBeCloseTo(-2 + 0.1 * 0.5, 12);
    expect(loss.dEntropy).toBe(-0.01);
  });

  it('needs the reference log-probability when the KL term is on', () => {
    const config = resolvePpoLossOptions({ klCoefficient: 0.1 });
    expect(() =>
      ppoStepLoss({ logprob: 0, oldLogprob: 0, advantage: 1, entropy: 0 }, config),
    ).toThrow(ConfigError);
  });

  it('rejects bad coefficients with the field name', () => {
    expect(() => resolvePpoLossOptions({ clipLow: 1.5 })).toThrow(/clipLow/);
    expect(() => resolvePpoLossOptions({ dualClip: 0.5 })).toThrow(/dualClip/);
    expect(() => resolvePpoLossOptions({ klCoefficient: -1 })).toThrow(/klCoefficient/);
  });
});
