import { describe, expect, it } from 'vitest';
import type { Step } from '../mdp/schemas.js';
import { estimateTokens, selectHistoryWindow } from './history-window.js';

function step(action: string, text: string): Step {
  return { observation: { text }, action, reward: 0, done: false };
}

describe('estimateTokens', () => {
  it('counts one token per four characters, rounded up', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd')).toBe(1);
    expect(estimateTokens('go to cabinet 2')).toBe(4);
  });
});

describe('selectHistoryWindow', () => {
  const history = [step('a1', 's0'), step('a2', 's1'), step('a3', 's2')];

  it('pairs each action with the observation that followed it', () => {
    const window = selectHistoryWindow(history, 's3', 1000);
    expect(window.lines).toEqual(['> a1\ns1', '> a2\ns2', '> a3\ns3']);
    expect(window.dropped).toBe(0);
  });

  it('drops the oldest steps first when over budget', () => {
    // Every line costs 7 characters = 7 tokens with a character counter; 15 fits two.
    const window = selectHistoryWindow(history, 's3', 15, (text) => text.length);
    expect(window.lines).toEqual(['> a2\ns2', '> a3\ns3']);
    expect(window.dropped).toBe(1);
    expect(window.tokens).toBe(14);
  });

  it('keeps nothing when even the newest step does not fit', () => {
    const window = selectHistoryWindow(history, 's3', 6, (text) => text.length);
    expect(window).toEqual({ lines: [], dropped: 3, tokens: 0 });
  });
});
