import { ActionParseError } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { parseTextworldAction } from './action-grammar.js';

describe('parseTextworldAction', () => {
  it('parses every form to its verb, its things and a canonical text', () => {
    expect(parseTextworldAction('look')).toEqual({ type: 'look', args: [], text: 'look' });
    expect(parseTextworldAction('  Prepare   Meal ')).toEqual({
      type: 'prepare',
      args: [],
      text: 'prepare meal',
    });
    expect(parseTextworldAction('go West')).toEqual({
      type: 'go',
      args: ['west'],
      text: 'go west',
    });
    expect(parseTextworldAction('take the red hot pepper')).toEqual({
      type: 'take',
      args: ['red hot pepper'],
      text: 'take red hot pepper',
    });
    expect(parseTextworldAction('take block of cheese from the fridge')).toEqual({
      type: 'take',
      args: ['block of cheese', 'fridge'],
      text: 'take block of cheese from fridge',
    });
    expect(parseTextworldAction('Slice the yellow potato with a knife')).toEqual({
      type: 'slice',
      args: ['yellow potato', 'knife'],
      text: 'slice yellow potato with knife',
    });
    expect(parseTextworldAction('insert carrot into fridge').args).toEqual(['carrot', 'fridge']);
    expect(parseTextworldAction('put knife on kitchen island').args).toEqual([
      'knife',
      'kitchen island',
    ]);
    expect(parseTextworldAction('open frosted-glass door').text).toBe('open frosted-glass door');
  });

  it('rejects what the grammar does not have, naming the command and the forms', () => {
    for (const action of [
      '',
      'go up',
      'jump',
      'cook carrot',
      'slice with knife',
      'take',
      'put knife',
    ]) {
      let thrown: unknown;
      try {
        parseTextworldAction(action);
      } catch (error) {
        thrown = error;
      }
      expect(ActionParseError.isInstance(thrown)).toBe(true);
      expect((thrown as ActionParseError).action).toBe(action);
      expect((thrown as Error).message).toContain('take X from Y');
    }
  });
});
