import type { Token } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import { PromptLogprobCache } from './prompt-logprob-cache.js';

const tokens = (...ids: number[]) => ids as Token[];

describe('PromptLogprobCache', () => {
  it('gives the longest cached prefix of a prompt with the log-probabilities of its tokens', () => {
    const cache = new PromptLogprobCache(2);
    expect(cache.lookup(tokens(1, 2, 3))).toEqual({ length: 0, logprobs: [] });
    cache.remember(tokens(1, 2, 3, 4), [-0.2, -0.3, -0.4]);
    cache.remember(tokens(1, 2, 9), [-0.2, -0.9]);
    expect(cache.lookup(tokens(1, 2, 3, 7))).toEqual({ length: 3, logprobs: [-0.2, -0.3] });
    expect(cache.lookup(tokens(1, 2, 3, 4))).toEqual({ length: 4, logprobs: [-0.2, -0.3, -0.4] });
    expect(cache.lookup(tokens(1, 2, 9, 5))).toEqual({ length: 3, logprobs: [-0.2, -0.9] });
    // A prefix of one token has no log-probability to give.
    expect(cache.lookup(tokens(1, 5))).toEqual({ length: 0, logprobs: [] });
  });

  it('keeps the most recent prompts up to its capacity and ignores malformed entries', () => {
    const cache = new PromptLogprobCache(2);
    cache.remember(tokens(1, 2), [-0.1]);
    cache.remember(tokens(3, 4), [-0.2]);
    cache.remember(tokens(5, 6), [-0.3]);
    expect(cache.lookup(tokens(1, 2)).length).toBe(0);
    expect(cache.lookup(tokens(3, 4)).length).toBe(2);
    cache.remember(tokens(7, 8, 9), [-0.1]);
    expect(cache.lookup(tokens(7, 8, 9)).length).toBe(0);
    cache.clear();
    expect(cache.lookup(tokens(5, 6)).length).toBe(0);
  });
});
