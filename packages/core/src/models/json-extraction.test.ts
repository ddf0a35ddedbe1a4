import { describe, expect, it } from 'vitest';
import { extractJson, matchingBracketEnd } from './json-extraction.js';

describe('extractJson', () => {
  it('parses a bare JSON answer, with surrounding whitespace', () => {
    expect(extractJson('  {"a": 1}\n')).toEqual({ value: { a: 1 } });
    expect(extractJson('[1, 2]')).toEqual({ value: [1, 2] });
  });

  it('takes the JSON out of a fenced code block', () => {
    const text =
      'Here is the result:\n```json\n{"next": "You open the drawer.", "reward": 0}\n```\nDone.';
    expect(extractJson(text)).toEqual({ value: { next: 'You open the drawer.', reward: 0 } });
    expect(extractJson('```\n{"x": true}```')).toEqual({ value: { x: true } });
  });

  it('finds a balanced object in prose, ignoring brackets inside strings', () => {
    const text =
      'Sure! {"say": "a } and a { and \\"quotes\\"", "n": [1, {"m": 2}]} Hope that helps.';
    expect(extractJson(text)).toEqual({
      value: { say: 'a } and a { and "quotes"', n: [1, { m: 2 }] },
    });
  });

  it('skips a brace that does not start valid JSON and tries the next one', () => {
    expect(extractJson('use {braces} like {"ok": 1}')).toEqual({ value: { ok: 1 } });
  });

  it('ignores <think> reasoning, even when it contains JSON', () => {
    expect(extractJson('<think>maybe {"a": 0}?</think>\n{"a": 1}')).toEqual({ value: { a: 1 } });
  });

  it('returns undefined when there is no JSON', () => {
    expect(extractJson('')).toBeUndefined();
    expect(extractJson('I cannot do that.')).toBeUndefined();
    expect(extractJson('{"truncated": "outp')).toBeUndefined();
  });
});

describe('matchingBracketEnd', () => {
  it('returns the index after the closing bracket, or -1', () => {
    expect(matchingBracketEnd('{"a": [1]} x', 0)).toBe(10);
    expect(matchingBracketEnd('{"a": [1}', 0)).toBe(-1);
    expect(matchingBracketEnd('x', 0)).toBe(-1);
  });
});
