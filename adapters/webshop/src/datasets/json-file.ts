/**
 * Reading WebShop's JSON data files (one array or object spread over many lines) with errors
 * that name the file and the line of the entry at fault.
 */
import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { DatasetFormatError, DatasetNotFoundError } from '@dreamgym/core';

/** A parsed JSON file and the 1-based line where each top-level entry starts. */
export interface LocatedJson {
  file: string;
  value: unknown;
  /** Start line of each array element, or of each object member's key, in order. */
  entryLines: number[];
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let index = 0; index < offset && index < text.length; index += 1) {
    if (text.charCodeAt(index) === 10) line += 1;
  }
  return line;
}

/** Start lines of the top-level entries of a JSON array or object text. */
function topLevelEntryLines(text: string): number[] {
  const lines: number[] = [];
  let depth = 0;
  let line = 1;
  let inString = false;
  let expectEntry = false;
  let isObject = false;
  let expectKey = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '\n') line += 1;
    if (inString) {
      if (char === '\\') index += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (/\s/.test(char)) continue;
    if (depth === 1 && expectEntry && char !== ']' && char !== '}') {
      if (!isObject || expectKey) lines.push(line);
      expectEntry = false;
      expectKey = false;
    }
    if (char === '"') inString = true;
    else if (char === '[' || char === '{') {
      depth += 1;
      if (depth === 1) {
        isObject = char === '{';
        expectEntry = true;
        expectKey = isObject;
      }
    } else if (char === ']' || char === '}') depth -= 1;
    else if (char === ',' && depth === 1) {
      expectEntry = true;
      expectKey = isObject;
    }
  }
  return lines;
}

function notFound(file: string, what: string, cause?: unknown): DatasetNotFoundError {
  return new DatasetNotFoundError(
    `WebShop dataset file ${file} does not exist (${what}). Pass the WebShop data folder (--data DIR, or DREAMGYM_DATA_DIR holding webshop/), or fetch it with downloadWebshopData(dir).`,
    { path: file, cause },
  );
}

function parse(file: string, text: string): LocatedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    const lineMatch = /line (\d+)/.exec((error as Error).message)?.[1];
    const line =
      lineMatch !== undefined
        ? Number(lineMatch)
        : position !== undefined
          ? lineAt(text, Number(position))
          : undefined;
    throw new DatasetFormatError(`invalid JSON (${(error as Error).message}).`, {
      file,
      ...(line === undefined ? {} : { line }),
      cause: error,
    });
  }
  return { file, value, entryLines: topLevelEntryLines(text) };
}

/** Reads and parses a JSON data file. `what` says what the file is, for the not-found error. */
export async function readLocatedJson(file: string, what: string): Promise<LocatedJson> {
  try {
    if (!(await stat(file)).isFile()) throw notFound(file, what);
  } catch (error) {
    if (DatasetNotFoundError.isInstance(error)) throw error;
    throw notFound(file, what, error);
  }
  return parse(file, await readFile(file, 'utf8'));
}

/** {@link readLocatedJson}, synchronously (for lazy loads inside synchronous adapter calls). */
export function readLocatedJsonSync(file: string, what: string): LocatedJson {
  try {
    if (!statSync(file).isFile()) throw notFound(file, what);
  } catch (error) {
    if (DatasetNotFoundError.isInstance(error)) throw error;
    throw notFound(file, what, error);
  }
  return parse(file, readFileSync(file, 'utf8'));
}
