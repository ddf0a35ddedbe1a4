/**
 * HTTP request plumbing of the OpenEnv protocol on `node:http`: bodies read under a size
 * limit and FastAPI-shaped errors (`{"detail": ...}`), which is what OpenEnv clients and
 * tools expect from an OpenEnv server. Bodies are read, and JSON replies written, by the OpenAI
 * servers' HTTP helpers (`readRequestBody`, `sendJson` of `@dreamgym/openai-wire`).
 */
import type { IncomingMessage } from 'node:http';
import { readRequestBody } from '@dreamgym/openai-wire';

/** An HTTP error with its status and FastAPI-style `detail`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.name = 'HttpError';
  }
}

/**
 * The request body as text, refused with 413 beyond `limit` bytes (by `content-length` up
 * front, or while reading when the length is not declared): core's body reader with this
 * protocol's error.
 */
export function readBody(request: IncomingMessage, limit: number): Promise<string> {
  return readRequestBody(request, limit, tooLarge);
}

function tooLarge(size: number, limit: number): HttpError {
  return new HttpError(
    413,
    `Request body of ${size} bytes exceeds the server's limit of ${limit} bytes (--max-payload).`,
  );
}

/**
 * Parses a JSON body; an empty body is `emptyValue`. Invalid JSON is a 422 with a
 * FastAPI-style `json_invalid` entry.
 */
export function parseJsonBody(text: string, emptyValue?: unknown): unknown {
  if (text.trim() === '' && emptyValue !== undefined) return emptyValue;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(422, [
      {
        type: 'json_invalid',
        loc: ['body'],
        msg: `JSON decode error: ${(error as Error).message}`,
      },
    ]);
  }
}
