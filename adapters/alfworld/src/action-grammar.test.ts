import { ActionParseError } from '@dreamgym/core';
import { readJsonlLines } from '@dreamgym/core/mdp';
import { describe, expect, it } from 'vitest';
import { formatAlfworldAction, parseAlfworldAction } from './action-grammar.js';
import { alfworldDataDirectory } from './test-data-directory.js';

describe('parseAlfworldAction', () => {
  it('parses each command form into type, arguments and canonical text', () => {
    expect(parseAlfworldAction('go to countertop 1')).toEqual({
      type: 'go to',
      args: ['countertop 1'],
      text: 'go to countertop 1',
    });
    expect(parseAlfworldAction('  Take Apple 1 from   countertop 2 ')).toEqual({
      type: 'take',
      args: ['apple 1', 'countertop 2'],
      text: 'take apple 1 from countertop 2',
    });
    expect(parseAlfworldAction('put apple 1 in/on fridge 1').args).toEqual(['apple 1', 'fridge 1']);
    expect(parseAlfworldAction('heat potato 2 with microwave 1').type).toBe('heat');
    expect(parseAlfworldAction('use desklamp 1')).toMatchObject({
      type: 'use',
      args: ['desklamp 1'],
    });
    expect(parseAlfworldAction('inventory')).toEqual({
      type: 'inventory',
      args: [],
      text: 'inventory',
    });
    expect(parseAlfworldAction('look').type).toBe('look');
  });

  it('rejects what the engine would not understand, listing the valid forms', () => {
    for (const bad of [
      '',
      'put apple 1 in fridge 1',
      'take apple from countertop 1',
      'go to the fridge',
      'jump',
      'look around',
      'toggle desklamp 1',
    ]) {
      let error: unknown;
      try {
        parseAlfworldAction(bad);
      } catch (caught) {
        error = caught;
      }
      expect(ActionParseError.isInstance(error), bad).toBe(true);
      expect((error as ActionParseError).action).toBe(bad);
      expect((error as Error).message).toContain('`put O in/on R`');
    }
    expect(() => parseAlfworldAction('put apple 1 in fridge 1')).toThrow(/literal `in\/on`/);
  });

  it('formats commands as the inverse of parsing', () => {
    expect(formatAlfworldAction('put', ['apple 1', 'fridge 1'])).toBe('put apple 1 in/on fridge 1');
    expect(formatAlfworldAction('look', [])).toBe('look');
  });

  it('parses every command of the 3,554 expert trajectories, and their text round-trips', async () => {
    const file = `${alfworldDataDirectory()}/expert_trajectories.jsonl`;
    const types = new Map<string, number>();
    let commands = 0;
    for await (const { value } of readJsonlLines(file)) {
      for (const turn of (value as { conversations: { from: string; value: string }[] })
        .conversations) {
        if (turn.from !== 'gpt') continue;
        const parsed = parseAlfworldAction(turn.value);
        expect(parsed.text).toBe(turn.value);
        expect(formatAlfworldAction(parsed.type as never, parsed.args)).toBe(turn.value);
        types.set(parsed.type, (types.get(parsed.type) ?? 0) + 1);
        commands += 1;
      }
    }
    expect(commands).toBe(60_628);
    expect(Object.fromEntries(types)).toEqual({
      'go to': 32_922,
      open: 9_074,
      close: 7_921,
      take: 4_470,
      put: 4_117,
      clean: 651,
      cool: 533,
      heat: 459,
      use: 308,
      examine: 173,
    });
  });
});
