import { DatasetFormatError } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { parseJsonWithLines } from './json-with-lines.js';

describe('parseJsonWithLines', () => {
  const text =
    '[\n  {\n    "task_id": 1,\n    "eval": {\n      "eval_types": ["url_match"],\n      "note": "a \\"quoted\\" word"\n    }\n  },\n  {"task_id": 2}\n]';

  it('parses like JSON.parse and knows the line of every value', () => {
    const document = parseJsonWithLines(text, 'configs.json');
    expect(document.value).toEqual(JSON.parse(text));
    expect(document.lineOf([0])).toBe(2);
    expect(document.lineOf([0, 'task_id'])).toBe(3);
    expect(document.lineOf([0, 'eval', 'eval_types', 0])).toBe(5);
    expect(document.lineOf([0, 'eval', 'note'])).toBe(6);
    expect(document.lineOf([1, 'task_id'])).toBe(9);
    // A field that is not there is placed at its nearest parent.
    expect(document.lineOf([0, 'eval', 'reference_url'])).toBe(4);
    // Columns are where values start: `1` of `"task_id": 1` on line 3, the `{` of line 9.
    expect(document.positionOf([0, 'task_id'])).toEqual({ line: 3, column: 16 });
    expect(document.positionOf([1])).toEqual({ line: 9, column: 3 });
  });

  it.each([
    ['{\n  "a": 1,\n  "b": tru\n}', 3, 'unexpected "t"'],
    ['[\n  {"a": 1}\n  {"b": 2}\n]', 3, 'expected "," or "]"'],
    ['{\n  "a": "unterminated\n}', 2, 'a string runs past the end of its line'],
    ['{"a": 1} x', 1, 'after the document'],
    ['', 1, 'end of file'],
  ])('reports a syntax error with file and line: %j', (broken, line, reason) => {
    let thrown: unknown;
    try {
      parseJsonWithLines(broken, 'broken.json');
    } catch (error) {
      thrown = error;
    }
    expect(DatasetFormatError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({ file: 'broken.json', line });
    const { column } = thrown as DatasetFormatError;
    expect(column).toBeGreaterThan(0);
    expect((thrown as Error).message).toContain(`broken.json:${line}:${column}`);
    expect((thrown as Error).message).toContain(reason);
  });
});
