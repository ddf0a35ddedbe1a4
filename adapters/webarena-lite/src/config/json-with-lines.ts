/**
 * A JSON parser that remembers where every value starts, so that a config error can name
 * the file, the line, the column and the field (`test.raw.json:1234:7 (field
 * eval.reference_url)`), which `JSON.parse` cannot; a syntax error also names the config it
 * is in (its `task_id` where that was read, else its index).
 */
import { DatasetFormatError } from '@dreamgym/core';

/** Where a value starts: 1-based line and column. */
export interface JsonPosition {
  line: number;
  column: number;
}

/** A parsed JSON document with the 1-based line and column of every value, by its path. */
export interface JsonWithLines {
  value: unknown;
  /** The line where the value at `path` starts (its nearest parent's when absent). */
  lineOf(path: readonly (string | number)[]): number;
  /** The line and column where the value at `path` starts (its nearest parent's when absent). */
  positionOf(path: readonly (string | number)[]): JsonPosition;
}

const key = (path: readonly (string | number)[]) => path.map(String).join('\u0000');

/**
 * Parses `text` as JSON, recording the start line of each value.
 *
 * @throws DatasetFormatError naming `file` and the line of the first syntax error.
 */
export function parseJsonWithLines(text: string, file: string): JsonWithLines {
  const positions = new Map<string, JsonPosition>();
  let index = 0;
  let line = 1;
  let lineStart = 0;
  // The config being read (a top-level array element, or the document): for syntax errors.
  let configIndex: number | undefined;
  let configTaskId: unknown;

  const fail = (message: string): never => {
    const record =
      configTaskId !== undefined
        ? `task_id ${String(configTaskId)}`
        : configIndex !== undefined
          ? `config #${configIndex}`
          : undefined;
    throw new DatasetFormatError(`invalid JSON: ${message}`, {
      file,
      line,
      column: index - lineStart + 1,
      ...(record ? { recordId: record } : {}),
    });
  };
  const skipWhitespace = () => {
    while (index < text.length) {
      const character = text[index]!;
      if (character === '\n') {
        line += 1;
        lineStart = index + 1;
      } else if (character !== ' ' && character !== '\t' && character !== '\r') break;
      index += 1;
    }
  };
  const parseString = (): string => {
    const start = index;
    index += 1;
    while (index < text.length) {
      const character = text[index]!;
      if (character === '"') {
        index += 1;
        try {
          return JSON.parse(text.slice(start, index)) as string;
        } catch {
          return fail('bad escape in a string');
        }
      }
      if (character === '\\') index += 2;
      else if (character === '\n') return fail('a string runs past the end of its line');
      else index += 1;
    }
    return fail('a string is not closed');
  };
  const parseValue = (path: (string | number)[]): unknown => {
    skipWhitespace();
    positions.set(key(path), { line, column: index - lineStart + 1 });
    if (path.length === 1 && typeof path[0] === 'number') {
      configIndex = path[0];
      configTaskId = undefined;
    }
    const character = text[index];
    if (character === '{') {
      index += 1;
      const object: Record<string, unknown> = {};
      skipWhitespace();
      if (text[index] === '}') {
        index += 1;
        return object;
      }
      for (;;) {
        skipWhitespace();
        if (text[index] !== '"')
          fail(`expected a property name, found ${JSON.stringify(text[index] ?? 'the end')}`);
        const name = parseString();
        skipWhitespace();
        if (text[index] !== ':') fail(`expected ":" after "${name}"`);
        index += 1;
        object[name] = parseValue([...path, name]);
        if (name === 'task_id' && path.length <= 1) configTaskId = object[name];
        skipWhitespace();
        if (text[index] === ',') {
          index += 1;
          continue;
        }
        if (text[index] === '}') {
          index += 1;
          return object;
        }
        return fail(`expected "," or "}" after the value of "${name}"`);
      }
    }
    if (character === '[') {
      index += 1;
      const array: unknown[] = [];
      skipWhitespace();
      if (text[index] === ']') {
        index += 1;
        return array;
      }
      for (;;) {
        array.push(parseValue([...path, array.length]));
        skipWhitespace();
        if (text[index] === ',') {
          index += 1;
          continue;
        }
        if (text[index] === ']') {
          index += 1;
          return array;
        }
        return fail('expected "," or "]" in an array');
      }
    }
    if (character === '"') return parseString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(
      text.slice(index, index + 400),
    );
    if (!literal)
      return fail(
        `unexpected ${character === undefined ? 'end of file' : JSON.stringify(character)}`,
      );
    index += literal[0].length;
    return JSON.parse(literal[0]) as unknown;
  };

  const value = parseValue([]);
  skipWhitespace();
  if (index < text.length) fail(`unexpected ${JSON.stringify(text[index])} after the document`);
  return {
    value,
    lineOf(path) {
      return this.positionOf(path).line;
    },
    positionOf(path) {
      for (let length = path.length; length >= 0; length -= 1) {
        const found = positions.get(key(path.slice(0, length)));
        if (found !== undefined) return found;
      }
      return { line: 1, column: 1 };
    },
  };
}
