import { describe, expect, it } from 'vitest';
import type { Step } from '../mdp/schemas.js';
import { parseActionByTokens } from './entity-transfer.js';
import { type ConsistencyHints, recallFromHistory } from './episode-consistency.js';

const hints: ConsistencyHints = {
  revisitActionTypes: ['go to', 'examine'],
  removeActionTypes: ['take'],
  placeActionTypes: ['put'],
};

/** History from (action, outcome) pairs; step i's observation is the outcome of step i-1. */
function episode(start: string, pairs: Array<[string, string]>) {
  const history: Step[] = [];
  let text = start;
  for (const [action, outcome] of pairs) {
    history.push({ observation: { text }, action, reward: 0, done: false });
    text = outcome;
  }
  return { history, state: { text } };
}

describe('recallFromHistory', () => {
  it('repeats what a revisited place showed, minus what was taken since', () => {
    const { history, state } = episode('You are in a room.', [
      ['go to desk 1', 'On the desk 1, you see a cd 2, a mug 1, and a pen 2.'],
      ['take mug 1 from desk 1', 'You pick up the mug 1 from the desk 1.'],
      ['go to shelf 1', 'On the shelf 1, you see nothing.'],
    ]);
    expect(
      recallFromHistory({ history, state, action: 'go to desk 1' }, parseActionByTokens, hints),
    ).toEqual({
      text: 'On the desk 1, you see a cd 2, and a pen 2.',
      fromStep: 0,
      edits: ['-mug 1'],
    });
  });

  it('adds what was put there since', () => {
    const { history, state } = episode('You are in a room.', [
      ['go to shelf 1', 'On the shelf 1, you see nothing.'],
      ['put mug 1 in/on shelf 1', 'You put the mug 1 in/on the shelf 1.'],
      ['go to desk 1', 'On the desk 1, you see a pen 2.'],
    ]);
    expect(
      recallFromHistory({ history, state, action: 'examine shelf 1' }, parseActionByTokens, hints)
        ?.text,
    ).toBe('On the shelf 1, you see a mug 1.');
  });

  it('ignores failed actions and gives up after an unwritable change', () => {
    const { history, state } = episode('You are in a room.', [
      ['go to drawer 1', 'The drawer 1 is closed.'],
      ['take mug 1 from drawer 1', 'Nothing happens.'],
      ['go to shelf 1', 'On the shelf 1, you see nothing.'],
    ]);
    expect(
      recallFromHistory({ history, state, action: 'go to drawer 1' }, parseActionByTokens, hints)
        ?.text,
    ).toBe('The drawer 1 is closed.');
    const opened = episode('You are in a room.', [
      ['go to drawer 1', 'The drawer 1 is closed.'],
      ['open drawer 1', 'You open the drawer 1. The drawer 1 is open. In it, you see a cd 1.'],
      ['go to shelf 1', 'On the shelf 1, you see nothing.'],
    ]);
    expect(
      recallFromHistory({ ...opened, action: 'go to drawer 1' }, parseActionByTokens, hints),
    ).toBeUndefined();
  });

  it('recalls nothing for unseen places, other action types, or without hints', () => {
    const { history, state } = episode('You are in a room.', [
      ['go to desk 1', 'On the desk 1, you see a pen 2.'],
    ]);
    expect(
      recallFromHistory({ history, state, action: 'go to desk 2' }, parseActionByTokens, hints),
    ).toBeUndefined();
    expect(
      recallFromHistory({ history, state, action: 'open desk 1' }, parseActionByTokens, hints),
    ).toBeUndefined();
    expect(
      recallFromHistory({ history, state, action: 'go to desk 1' }, parseActionByTokens, {}),
    ).toBeUndefined();
  });
});
