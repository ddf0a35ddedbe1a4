import type { Observation, Step } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { parseWebAction } from './web-action-grammar.js';
import { parseObservationLines, webCandidateActions } from './web-candidate-actions.js';

const TEXT = `Tab 0 (current): Order form | Tab 1: Help
URL: http://127.0.0.1:8000/form.html

[1] heading 'Order form'
[2] form
\t[3] textbox 'Full name' value: 'Ada, Countess: of Lovelace', focused: true, required: true
\t[6] combobox 'Size' value: 'Medium', expanded: false
\t\t[7] option 'Small'
\t\t[8] option 'Medium' selected: true
\t[13] checkbox 'Gift wrap' checked: false
\t[14] button 'Place order'
\t[15] button 'Cancel' disabled: true
StaticText 'It's 5 o'clock'
[16] link 'Help' url: /help
[17] list
\t[18] listitem 'First'`;

describe('parseObservationLines', () => {
  it('reads ids, roles, names with quotes and properties back from the text', () => {
    const lines = parseObservationLines(TEXT);
    expect(lines).toHaveLength(13);
    expect(lines[2]).toEqual({
      id: 3,
      role: 'textbox',
      name: 'Full name',
      properties: { value: 'Ada, Countess: of Lovelace', focused: 'true', required: 'true' },
      depth: 1,
    });
    expect(lines[3]!.properties).toEqual({ value: 'Medium', expanded: 'false' });
    expect(lines.find((line) => line.role === 'StaticText')).toEqual({
      role: 'StaticText',
      name: "It's 5 o'clock",
      properties: {},
      depth: 0,
    });
    expect(lines.find((line) => line.id === 16)!.properties).toEqual({ url: '/help' });
    expect(lines[1]).toEqual({ id: 2, role: 'form', name: '', properties: {}, depth: 0 });
  });
});

describe('webCandidateActions', () => {
  const observation: Observation = { text: TEXT, meta: { typeSuggestions: ['Ada Lovelace'] } };

  it('proposes clicks on actionable elements, typing suggested texts, and global actions', () => {
    const candidates = webCandidateActions(observation, []);
    expect(candidates).toEqual([
      'type [3] [Ada Lovelace] [1]',
      'click [6]',
      'click [7]',
      'click [8]',
      'click [13]',
      'click [14]',
      'click [16]',
      'press [Enter]',
      'scroll [down]',
      'scroll [up]',
      'stop []',
    ]);
    for (const candidate of candidates) expect(() => parseWebAction(candidate)).not.toThrow();
  });

  it('reuses texts typed earlier in the episode and offers go_back after the first step', () => {
    const history: Step[] = [
      {
        observation: { text: TEXT },
        action: 'type [3] [Grace Hopper] [0]',
        reward: 0,
        done: false,
      },
      { observation: { text: TEXT }, action: 'not an action', reward: 0, done: false },
    ];
    const candidates = webCandidateActions({ text: TEXT }, history, { maxElementActions: 2 });
    expect(candidates).toEqual([
      'type [3] [Grace Hopper] [1]',
      'click [6]',
      'press [Enter]',
      'scroll [down]',
      'scroll [up]',
      'go_back',
      'stop []',
    ]);
    expect(new Set(candidates).size).toBe(candidates.length);
  });

  it('works on a state an experience model wrote, without meta', () => {
    const candidates = webCandidateActions({
      text: "[4] link 'Next page'\n[5] searchbox 'Search'",
    });
    expect(candidates).toEqual(['click [4]', 'scroll [down]', 'scroll [up]', 'stop []']);
  });
});
