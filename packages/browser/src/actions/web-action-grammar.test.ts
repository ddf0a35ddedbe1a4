import { ActionParseError } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import {
  formatWebAction,
  normalizeKeyCombination,
  parseWebAction,
  parseWebActionText,
} from './web-action-grammar.js';

describe('parseWebAction', () => {
  it.each([
    ['click [12]', { type: 'click', id: 12 }, 'click [12]'],
    ['  CLICK [ 7 ]  ', { type: 'click', id: 7 }, 'click [7]'],
    ['hover [3]', { type: 'hover', id: 3 }, 'hover [3]'],
    [
      'type [5] [red shoes] [0]',
      { type: 'type', id: 5, text: 'red shoes', pressEnter: false },
      'type [5] [red shoes] [0]',
    ],
    [
      'type [5] [red shoes]',
      { type: 'type', id: 5, text: 'red shoes', pressEnter: true },
      'type [5] [red shoes] [1]',
    ],
    [
      'type [5] [a [b] c] [1]',
      { type: 'type', id: 5, text: 'a [b] c', pressEnter: true },
      'type [5] [a [b] c] [1]',
    ],
    ['type [5] []', { type: 'type', id: 5, text: '', pressEnter: true }, 'type [5] [] [1]'],
    ['press [ctrl+a]', { type: 'press', keys: 'Control+a' }, 'press [Control+a]'],
    ['press [Enter]', { type: 'press', keys: 'Enter' }, 'press [Enter]'],
    ['scroll [down]', { type: 'scroll', direction: 'down' }, 'scroll [down]'],
    ['scroll [direction=up]', { type: 'scroll', direction: 'up' }, 'scroll [up]'],
    ['new_tab', { type: 'new_tab' }, 'new_tab'],
    ['tab_focus [2]', { type: 'tab_focus', index: 2 }, 'tab_focus [2]'],
    ['close_tab', { type: 'close_tab' }, 'close_tab'],
    [
      'goto [http://127.0.0.1:7770/a?b=c]',
      { type: 'goto', url: 'http://127.0.0.1:7770/a?b=c' },
      'goto [http://127.0.0.1:7770/a?b=c]',
    ],
    ['go_back', { type: 'go_back' }, 'go_back'],
    ['go_forward', { type: 'go_forward' }, 'go_forward'],
    [
      'stop [$25.99 [incl. tax]]',
      { type: 'stop', answer: '$25.99 [incl. tax]' },
      'stop [$25.99 [incl. tax]]',
    ],
    ['stop []', { type: 'stop', answer: '' }, 'stop []'],
    ['stop', { type: 'stop', answer: '' }, 'stop []'],
  ])('parses %j', (text, expected, canonical) => {
    const action = parseWebAction(text);
    expect(action).toEqual(expected);
    expect(formatWebAction(action)).toBe(canonical);
    expect(parseWebAction(canonical)).toEqual(expected);
  });

  it.each([
    ['', 'empty'],
    ['click 12', 'element id'],
    ['click [abc]', 'not [abc]'],
    ['click [1] [2]', 'exactly one argument'],
    ['tap [3]', '"tap" is not a verb'],
    ['type [4]', 'text in brackets'],
    ['type [x] [hi]', 'element id'],
    ['press [Hyper+q]', 'key or key combination'],
    ['scroll [left]', '[up] or [down]'],
    ['tab_focus [first]', 'tab index'],
    ['goto []', 'URL'],
    ['stop 42', 'answer in brackets'],
    ['go_back [1]', 'takes no arguments'],
  ])('rejects %j with an ActionParseError that says why', (text, reason) => {
    let thrown: unknown;
    try {
      parseWebAction(text);
    } catch (error) {
      thrown = error;
    }
    expect(ActionParseError.isInstance(thrown)).toBe(true);
    expect((thrown as ActionParseError).action).toBe(text);
    expect((thrown as Error).message).toContain(reason);
    expect((thrown as Error).message).toContain('click [id]');
  });

  it('gives core ParsedActions with arguments in order', () => {
    expect(parseWebActionText('type [9] [hello] [0]')).toEqual({
      type: 'type',
      args: ['9', 'hello', '0'],
      text: 'type [9] [hello] [0]',
    });
    expect(parseWebActionText('go_back')).toEqual({ type: 'go_back', args: [], text: 'go_back' });
  });
});

describe('normalizeKeyCombination', () => {
  it('maps the names agents write to Playwright key names', () => {
    expect(normalizeKeyCombination('ctrl+shift+Z')).toBe('Control+Shift+Z');
    expect(normalizeKeyCombination('cmd+c')).toBe('Meta+c');
    expect(normalizeKeyCombination('esc')).toBe('Escape');
    expect(normalizeKeyCombination('PageDown')).toBe('PageDown');
    expect(normalizeKeyCombination('F5')).toBe('F5');
    expect(normalizeKeyCombination('Control++')).toBe('Control++');
    expect(normalizeKeyCombination('+')).toBe('+');
    expect(normalizeKeyCombination('hello')).toBeUndefined();
    expect(normalizeKeyCombination(' ')).toBeUndefined();
  });
});
