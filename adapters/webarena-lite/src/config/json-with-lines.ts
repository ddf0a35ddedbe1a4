/**
 * A JSON parser that remembers where every value starts, so that a config error can name
 * the file, the line, the column and the field (`test.raw.json:1234:7 (field
 * eval.reference_url)`), which `JSON.parse` cannot; a syntax error also names the config it
 * is in (its `task_id` where that was read, else its index). A file of configs is read past a
 * syntax error to the next config ({@link parseConfigDocument}), so that one error does not
 * hide the others, nor the configs after it.
 */
import { DatasetFormatError } from '@dreamgym/core';

/** Where a value starts: 1-based line and column. */
export interface JsonPosition {
  line: number;
  column: number;
}

/** Where the values of a parsed document start, by their paths. */
export interface JsonPositions {
  /** The line where the value at `path` starts (its nearest parent's when absent). */
  lineOf(path: readonly (string | number)[]): number;
  /** The line and column where the value at `path` starts (its nearest parent's when absent). */
  positionOf(path: readonly (string | number)[]): JsonPosition;
}

/** A parsed JSON document with the 1-based line and column of every value, by its path. */
export interface JsonWithLines extends JsonPositions {
  value: unknown;
}

/** A file of configs as far as it could be read: the configs read whole, and the syntax errors. */
export interface ConfigDocument extends JsonPositions {
  /** Each config read whole: the elements of a top-level array (path `[i]`), or the document (path `[]`). */
  configs: { value: unknown; path: (string | number)[] }[];
  /** The syntax errors, one per config that could not be read (named by its task id or index). */
  errors: DatasetFormatError[];
  /** Configs that a syntax error inside them kept from being read (each named in `errors`). */
  unread: number;
  /** Whether reading stopped at an error it could not get past: configs after it were not read. */
  stopped: boolean;
}

const key = (path: readonly (string | number)[]) => path.map(String).join('\u0000');

/** A syntax error, thrown inside the parser and caught by its callers. */
class JsonSyntaxError extends DatasetFormatError {}

/** A recursive-descent JSON parser over `text` that records every value's position. */
function createParser(text: string, file: string) {
  const positions = new Map<string, JsonPosition>();
  const state = { index: 0, line: 1, lineStart: 0 };
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
    throw new JsonSyntaxError(`invalid JSON: ${message}`, {
      file,
      line: state.line,
      column: state.index - state.lineStart + 1,
      ...(record ? { recordId: record } : {}),
    });
  };
  /** Moves to `index`, keeping the line count (forward or backward). */
  const moveTo = (index: number) => {
    const before = text.slice(0, index);
    let line = 1;
    for (let at = before.indexOf('\n'); at !== -1; at = before.indexOf('\n', at + 1)) line += 1;
    state.index = index;
    state.line = line;
    state.lineStart = before.lastIndexOf('\n') + 1;
  };
  const skipWhitespace = () => {
    while (state.index < text.length) {
      const character = text[state.index]!;
      if (character === '\n') {
        state.line += 1;
        state.lineStart = state.index + 1;
      } else if (character !== ' ' && character !== '\t' && character !== '\r') break;
      state.index += 1;
    }
  };
  const parseString = (): string => {
    const start = state.index;
    state.index += 1;
    while (state.index < text.length) {
      const character = text[state.index]!;
      if (character === '"') {
        state.index += 1;
        try {
          return JSON.parse(text.slice(start, state.index)) as string;
        } catch {
          return fail('bad escape in a string');
        }
      }
      if (character === '\\') state.index += 2;
      else if (character === '\n') return fail('a string runs past the end of its line');
      else state.index += 1;
    }
    return fail('a string is not closed');
  };
  const parseValue = (path: (string | number)[]): unknown => {
    skipWhitespace();
    positions.set(key(path), { line: state.line, column: state.index - state.lineStart + 1 });
    if (path.length === 1 && typeof path[0] === 'number') {
      configIndex = path[0];
      configTaskId = undefined;
    }
    const character = text[state.index];
    if (character === '{') {
      state.index += 1;
      const object: Record<string, unknown> = {};
      skipWhitespace();
      if (text[state.index] === '}') {
        state.index += 1;
        return object;
      }
      for (;;) {
        skipWhitespace();
        if (text[state.index] !== '"')
          fail(`expected a property name, found ${JSON.stringify(text[state.index] ?? 'the end')}`);
        const name = parseString();
        skipWhitespace();
        if (text[state.index] !== ':') fail(`expected ":" after "${name}"`);
        state.index += 1;
        object[name] = parseValue([...path, name]);
        if (name === 'task_id' && path.length <= 1) configTaskId = object[name];
        skipWhitespace();
        if (text[state.index] === ',') {
          state.index += 1;
          continue;
        }
        if (text[state.index] === '}') {
          state.index += 1;
          return object;
        }
        return fail(`expected "," or "}" after the value of "${name}"`);
      }
    }
    if (character === '[') {
      state.index += 1;
      const array: unknown[] = [];
      skipWhitespace();
      if (text[state.index] === ']') {
        state.index += 1;
        return array;
      }
      for (;;) {
        array.push(parseValue([...path, array.length]));
        skipWhitespace();
        if (text[state.index] === ',') {
          state.index += 1;
          continue;
        }
        if (text[state.index] === ']') {
          state.index += 1;
          return array;
        }
        return fail('expected "," or "]" in an array');
      }
    }
    if (character === '"') return parseString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(
      text.slice(state.index, state.index + 400),
    );
    if (!literal)
      return fail(
        `unexpected ${character === undefined ? 'end of file' : JSON.stringify(character)}`,
      );
    state.index += literal[0].length;
    return JSON.parse(literal[0]) as unknown;
  };
  const positionOf = (path: readonly (string | number)[]): JsonPosition => {
    for (let length = path.length; length >= 0; length -= 1) {
      const found = positions.get(key(path.slice(0, length)));
      if (found !== undefined) return found;
    }
    return { line: 1, column: 1 };
  };
  const lookup: JsonPositions = { positionOf, lineOf: (path) => positionOf(path).line };
  /** Records that the value at `path` starts here (a value read other than by `parseValue`). */
  const mark = (path: (string | number)[]) =>
    positions.set(key(path), { line: state.line, column: state.index - state.lineStart + 1 });
  const forgetConfig = () => {
    configIndex = undefined;
    configTaskId = undefined;
  };
  return { state, fail, moveTo, skipWhitespace, parseValue, lookup, mark, forgetConfig };
}

/**
 * Parses `text` as JSON, recording the start line of each value.
 *
 * @throws DatasetFormatError naming `file` and the line of the first syntax error.
 */
export function parseJsonWithLines(text: string, file: string): JsonWithLines {
  const parser = createParser(text, file);
  const value = parser.parseValue([]);
  parser.skipWhitespace();
  if (parser.state.index < text.length)
    parser.fail(`unexpected ${JSON.stringify(text[parser.state.index])} after the document`);
  return { value, ...parser.lookup };
}

/**
 * Where the next config of a pretty-printed array starts after a syntax error at or after
 * `from`: a `{` that starts its line at the column where the array's configs start, and reads
 * as a whole object followed by `,` or `]`. Undefined where there is none (the error is in the
 * last config, or the file is not laid out one config per block).
 */
function nextConfigStart(
  text: string,
  file: string,
  from: number,
  column: number | undefined,
): number | undefined {
  if (column === undefined) return undefined;
  const indent = new RegExp(`\\n[ \\t]{${column - 1}}\\{`, 'g');
  indent.lastIndex = Math.max(from - column, 0);
  for (let match = indent.exec(text); match; match = indent.exec(text)) {
    const start = match.index + match[0].length - 1;
    if (start < from) continue;
    const trial = createParser(text, file);
    trial.moveTo(start);
    try {
      trial.parseValue([0]);
      trial.skipWhitespace();
      const after = text[trial.state.index];
      if (after === ',' || after === ']') return start;
    } catch {
      // not a whole config: look further
    }
  }
  return undefined;
}

/**
 * Parses a file of configs (a JSON array of configs, or one config), reading past a syntax
 * error to the next config where the layout shows where it starts (configs that each begin a
 * line at one indentation, as `json.dump(..., indent=2)` writes them): every syntax error is
 * named, and every config that can be read is returned. Where no next config can be found,
 * reading stops at that one spot (`stopped`), with the configs before it returned.
 */
export function parseConfigDocument(text: string, file: string): ConfigDocument {
  const parser = createParser(text, file);
  const { state } = parser;
  const configs: ConfigDocument['configs'] = [];
  const errors: DatasetFormatError[] = [];
  let unread = 0;
  const result = (stopped: boolean): ConfigDocument => ({
    configs,
    errors,
    unread,
    stopped,
    ...parser.lookup,
  });
  const caught = (error: unknown): DatasetFormatError => {
    if (error instanceof JsonSyntaxError) return error;
    throw error;
  };
  parser.skipWhitespace();
  if (text[state.index] !== '[') {
    try {
      const value = parser.parseValue([]);
      parser.skipWhitespace();
      if (state.index < text.length)
        parser.fail(`unexpected ${JSON.stringify(text[state.index])} after the document`);
      configs.push({ value, path: [] });
      return result(false);
    } catch (error) {
      errors.push(caught(error));
      unread += 1;
      return result(true);
    }
  }
  parser.mark([]);
  state.index += 1;
  parser.skipWhitespace();
  if (text[state.index] === ']') {
    state.index += 1;
  } else {
    let column: number | undefined;
    for (let element = 0; ; element += 1) {
      parser.skipWhitespace();
      const start = state.index;
      const atLineStart = text.slice(state.lineStart, start).trim() === '';
      if (element === 0 && atLineStart) column = start - state.lineStart + 1;
      let value: unknown;
      let read = false;
      try {
        value = parser.parseValue([element]);
        read = true;
        configs.push({ value, path: [element] });
        parser.skipWhitespace();
        if (text[state.index] === ',') {
          state.index += 1;
          continue;
        }
        if (text[state.index] === ']') {
          state.index += 1;
          break;
        }
        parser.fail(
          text[state.index] === undefined
            ? 'the file ends before the list of configs is closed with "]"'
            : 'expected "," or "]" after a config',
        );
      } catch (error) {
        errors.push(caught(error));
        if (!read) unread += 1;
        const next = nextConfigStart(text, file, read ? state.index : start + 1, column);
        if (next === undefined) {
          // The one spot reading could not get past: say so, with what was read before it.
          const last = errors.pop()!;
          errors.push(
            new JsonSyntaxError(
              `${last.message.slice(last.message.indexOf('invalid JSON'))}; reading stopped here, with ${configs.length} config${configs.length === 1 ? '' : 's'} read before it (no next config was found to read on from)`,
              {
                file,
                ...(last.line === undefined ? {} : { line: last.line }),
                ...(last.column === undefined ? {} : { column: last.column }),
                ...(last.recordId === undefined ? {} : { recordId: last.recordId }),
              },
            ),
          );
          parser.forgetConfig();
          return result(true);
        }
        parser.moveTo(next);
      }
    }
  }
  parser.forgetConfig();
  parser.skipWhitespace();
  if (state.index < text.length) {
    try {
      parser.fail(`unexpected ${JSON.stringify(text[state.index])} after the list of configs`);
    } catch (error) {
      errors.push(caught(error));
    }
  }
  return result(false);
}
