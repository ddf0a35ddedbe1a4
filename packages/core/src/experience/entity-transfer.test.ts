import { describe, expect, it } from 'vitest';
import type { ParsedAction } from '../adapter.js';
import { alignActions, alignActionTokens, transferEntities } from './entity-transfer.js';

/** A two-verb grammar in the shape of a domain adapter's parseAction. */
function parse(text: string): ParsedAction {
  const take = /^take (.+) from (.+)$/.exec(text);
  if (take) return { type: 'take', args: [take[1]!, take[2]!], text };
  const go = /^go to (.+)$/.exec(text);
  if (go) return { type: 'go to', args: [go[1]!], text };
  throw new Error(`not an action: ${text}`);
}

describe('alignActionTokens', () => {
  it('pairs the spans between shared words, never anchoring on numbers', () => {
    expect(
      alignActionTokens('take mug 3 from cabinet 1', 'take apple 1 from countertop 2'),
    ).toEqual({
      type: 'take',
      pairs: [
        ['mug 3', 'apple 1'],
        ['cabinet 1', 'countertop 2'],
      ],
    });
    expect(alignActionTokens('go to cabinet 2', 'go to cabinet 4')).toEqual({
      type: 'go',
      pairs: [['cabinet 2', 'cabinet 4']],
    });
  });

  it('does not align actions of different verbs or shapes', () => {
    expect(alignActionTokens('open drawer 1', 'go to drawer 1')).toBeUndefined();
    expect(alignActionTokens('take mug 3 from cabinet 1', 'take mug 3')).toBeUndefined();
  });

  it('aligns equal actions with no renaming', () => {
    expect(alignActionTokens('inventory', 'inventory')).toEqual({ type: 'inventory', pairs: [] });
  });
});

describe('alignActions with a grammar', () => {
  it('pairs arguments in order', () => {
    expect(alignActions('take mug 3 from cabinet 1', 'take apple 1 from cabinet 1', parse)).toEqual(
      { type: 'take', pairs: [['mug 3', 'apple 1']] },
    );
  });

  it('refuses other types and unparseable actions', () => {
    expect(alignActions('go to cabinet 1', 'take apple 1 from cabinet 1', parse)).toBeUndefined();
    expect(alignActions('fly away', 'go to cabinet 1', parse)).toBeUndefined();
  });
});

describe('transferEntities', () => {
  it('renames whole entity names, including instance ids', () => {
    expect(
      transferEntities('You pick up the mug 3 from the cabinet 1.', [
        ['mug 3', 'apple 1'],
        ['cabinet 1', 'countertop 2'],
      ]),
    ).toBe('You pick up the apple 1 from the countertop 2.');
    expect(
      transferEntities('On the cabinet 1, you see a cabinet 12 and a pineapple 1.', [
        ['cabinet 1', 'cabinet 4'],
        ['apple 1', 'apple 2'],
      ]),
    ).toBe('On the cabinet 4, you see a cabinet 12 and a pineapple 1.');
  });

  it('swaps names simultaneously', () => {
    expect(
      transferEntities('apple 1 then apple 2', [
        ['apple 1', 'apple 2'],
        ['apple 2', 'apple 1'],
      ]),
    ).toBe('apple 2 then apple 1');
  });

  it('gives up on contradictory renamings', () => {
    expect(
      transferEntities('x', [
        ['apple 1', 'apple 2'],
        ['Apple 1', 'apple 3'],
      ]),
    ).toBeUndefined();
  });
});
