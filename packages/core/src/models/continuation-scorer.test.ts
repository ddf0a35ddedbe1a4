import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { rankContinuations } from './continuation-scorer.js';
import { continuationTokens } from './openai-compatible-scorer.js';

const score = (text: string, logprobs: number[]) => ({
  text,
  logprob: logprobs.reduce((sum, value) => sum + value, 0),
  tokens: logprobs.map((logprob, index) => ({ token: `${text}${index}`, logprob })),
});

describe('rankContinuations', () => {
  it('picks the highest log-probability and gives the softmax over candidates', () => {
    const ranked = rankContinuations([score('a', [-1, -1]), score('b', [-0.5])]);
    expect(ranked.best).toBe(1);
    // softmax(-2, -0.5) = (e^-1.5, 1) / (1 + e^-1.5)
    const low = Math.exp(-1.5) / (1 + Math.exp(-1.5));
    expect(ranked.probabilities[0]).toBeCloseTo(low, 12);
    expect(ranked.probabilities[1]).toBeCloseTo(1 - low, 12);
  });

  it('can normalise by length, and prefers the first candidate on ties', () => {
    // mean: a = -1, b = -1.5; sum: a = -2, b = -1.5
    const candidates = [score('a', [-1, -1]), score('b', [-1.5])];
    expect(rankContinuations(candidates, { normalize: 'mean' }).best).toBe(0);
    expect(rankContinuations(candidates).best).toBe(1);
    expect(rankContinuations([score('x', [-1]), score('y', [-1])]).best).toBe(0);
    expect(() => rankContinuations([])).toThrow(InvalidArgumentError);
  });
});

describe('continuationTokens', () => {
  it('keeps the echoed tokens that spell the continuation, cutting one that straddles the prompt end', () => {
    // prompt "Q: go" (5 chars) + continuation "al now" ; tokens: "Q:", " go", "al", " now", "!"(generated)
    const logprobs = {
      tokens: ['Q:', ' goal', ' now', '!'],
      token_logprobs: [null, -0.5, -0.25, -3],
      text_offset: [0, 2, 7, 11],
    };
    expect(continuationTokens(logprobs, 5, 11)).toEqual([
      { token: 'al', logprob: -0.5 },
      { token: ' now', logprob: -0.25 },
    ]);
  });

  it('is undefined when a continuation token has no log-probability', () => {
    const logprobs = { tokens: ['a', 'b'], token_logprobs: [null, null], text_offset: [0, 1] };
    expect(continuationTokens(logprobs, 1, 2)).toBeUndefined();
  });
});
