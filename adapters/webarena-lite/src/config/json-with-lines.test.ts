import { DatasetFormatError } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { parseConfigDocument, parseJsonWithLines } from './json-with-lines.js';

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

describe('parseConfigDocument', () => {
  const configs = (...bodies: string[]) =>
    `[\n${bodies.map((body) => `  {\n${body}\n  }`).join(',\n')}\n]\n`;
  const read = (text: string) => {
    const document = parseConfigDocument(text, 'configs.json');
    return {
      ids: document.configs.map(({ value, path }) => [
        path[0],
        (value as { task_id: number }).task_id,
      ]),
      errors: document.errors.map((error) => error.message),
      unread: document.unread,
      stopped: document.stopped,
    };
  };

  it('reads past a broken config to the next one, naming the error with its config', () => {
    const text = configs(
      '    "task_id": 1,\n    "intent": "a"',
      '    "task_id": 2,\n    "intent": "b" "eval": {\n      "x": 1\n    }',
      '    "task_id": 3,\n    "eval": {\n      "nested": {"task_id": 9}\n    }',
    );
    expect(read(text)).toEqual({
      ids: [
        [0, 1],
        [2, 3],
      ],
      errors: [
        'configs.json:8:19 (task_id 2): invalid JSON: expected "," or "}" after the value of "intent"',
      ],
      unread: 1,
      stopped: false,
    });
  });

  it('keeps a whole config that lacks the comma after it, and reports the spot', () => {
    const text = configs('    "task_id": 1', '    "task_id": 2').replace('},\n  {', '}\n  {');
    expect(read(text)).toEqual({
      ids: [
        [0, 1],
        [1, 2],
      ],
      errors: ['configs.json:5:3 (task_id 1): invalid JSON: expected "," or "]" after a config'],
      unread: 0,
      stopped: false,
    });
  });

  it('stops at a spot it cannot read past, with the configs before it', () => {
    // One line: no layout shows where the next config starts.
    expect(read('[{"task_id": 1}, {"task_id": 2 "x": 1}, {"task_id": 3}]')).toEqual({
      ids: [[0, 1]],
      errors: [
        'configs.json:1:32 (task_id 2): invalid JSON: expected "," or "}" after the value of "task_id"; reading stopped here, with 1 config read before it (no next config was found to read on from)',
      ],
      unread: 1,
      stopped: true,
    });
    expect(read(`${configs('    "task_id": 1')} x`)).toMatchObject({
      ids: [[0, 1]],
      errors: ['configs.json:6:2: invalid JSON: unexpected "x" after the list of configs'],
      unread: 0,
      stopped: false,
    });
  });

  it('reads one config as the document', () => {
    expect(read('{"task_id": 4}')).toEqual({
      ids: [[undefined, 4]],
      errors: [],
      unread: 0,
      stopped: false,
    });
    expect(read('{"task_id": 4,}')).toMatchObject({ ids: [], unread: 1, stopped: true });
  });
});
