import { describe, expect, it } from 'vitest';
import { BoundedMemo } from './bounded-memo.js';

describe('BoundedMemo', () => {
  it('computes a key once, undefined values too, and empties itself when full', () => {
    const memo = new BoundedMemo<string, string | undefined>(2);
    let calls = 0;
    const compute = (key: string) => {
      calls += 1;
      return key === 'none' ? undefined : key.toUpperCase();
    };
    expect(memo.get('a', compute)).toBe('A');
    expect(memo.get('none', compute)).toBeUndefined();
    expect(memo.get('a', compute)).toBe('A');
    expect(memo.get('none', compute)).toBeUndefined();
    expect(calls).toBe(2);
    // Full: the third key empties it, so `a` is computed again.
    memo.get('b', compute);
    memo.get('a', compute);
    expect(calls).toBe(4);
    memo.clear();
    memo.get('b', compute);
    expect(calls).toBe(5);
  });
});
