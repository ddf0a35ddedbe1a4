import { describe, expect, it } from 'vitest';
import { parseMiniwobAction } from './action-grammar.js';

describe('parseMiniwobAction', () => {
  it('parses the web grammar with and without an element note', () => {
    expect(parseMiniwobAction("click [3] # button 'previous'")).toEqual({
      type: 'click',
      args: ['3'],
      text: "click [3] # button 'previous'",
      webAction: 'click [3]',
      note: "button 'previous'",
    });
    expect(parseMiniwobAction('CLICK [3]')).toEqual({
      type: 'click',
      args: ['3'],
      text: 'click [3]',
      webAction: 'click [3]',
    });
    expect(parseMiniwobAction('type [1] [Kasey] [0]  #   textbox ')).toMatchObject({
      type: 'type',
      args: ['1', 'Kasey', '0'],
      text: 'type [1] [Kasey] [0] # textbox',
      webAction: 'type [1] [Kasey] [0]',
    });
    expect(parseMiniwobAction('press [ctrl+a]').text).toBe('press [Control+a]');
  });

  it('keeps a " # " inside a typed text as text', () => {
    expect(parseMiniwobAction('type [2] [a # b] [1]')).toMatchObject({
      args: ['2', 'a # b', '1'],
      webAction: 'type [2] [a # b] [1]',
    });
    expect(parseMiniwobAction('type [2] [a # b] [1] # textbox')).toMatchObject({
      webAction: 'type [2] [a # b] [1]',
      note: 'textbox',
    });
  });

  it('rejects what the web grammar rejects, and notes on actions without an element', () => {
    for (const action of ['click 3', "click [x] # button 'Ok'", 'stop [] # done', 'fly', '']) {
      expect(() => parseMiniwobAction(action), action).toThrow(
        expect.objectContaining({ code: 'ACTION_PARSE', action }),
      );
    }
    expect(() => parseMiniwobAction('click 3')).toThrow(/may end with a note naming its element/);
  });
});
