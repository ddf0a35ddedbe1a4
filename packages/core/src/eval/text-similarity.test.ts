import { describe, expect, it } from 'vitest';
import { exactMatch, textTokens, tokenF1 } from './text-similarity.js';

describe('exactMatch', () => {
  it('ignores whitespace layout only', () => {
    expect(
      exactMatch(' On the desk 1,\n you see nothing. ', 'On the desk 1, you see nothing.'),
    ).toBe(true);
    expect(exactMatch('On the desk 1, you see nothing.', 'On the desk 2, you see nothing.')).toBe(
      false,
    );
  });
});

describe('tokenF1', () => {
  it('matches hand-computed values', () => {
    expect(tokenF1('you see a mug 1', 'you see a cup 1')).toBeCloseTo(0.8, 12);
    // predicted 2 tokens, actual 4, shared 2: P = 1, R = 0.5, F1 = 2/3
    expect(tokenF1('mug 1', 'a mug 1 here')).toBeCloseTo(2 / 3, 12);
    // repeated tokens count once per occurrence: P = 1/3, R = 1, F1 = 0.5
    expect(tokenF1('a a a', 'a')).toBeCloseTo(0.5, 12);
    expect(tokenF1('', '')).toBe(1);
    expect(tokenF1('x', '')).toBe(0);
    expect(tokenF1('x', 'y')).toBe(0);
  });

  it('tokenises letters and digits, dropping punctuation and case', () => {
    expect(textTokens('On the Desk 1, you see a mug-2.')).toEqual([
      'on',
      'the',
      'desk',
      '1',
      'you',
      'see',
      'a',
      'mug',
      '2',
    ]);
  });
});
