/**
 * The HTTP side of the OpenAI wire format, written once for the servers that speak it:
 * `dreamgym model serve` (`startLlamaServer` in `@dreamgym/llama`) and the scripted fake
 * server of `@dreamgym/test-support`. Request bodies read under a size limit, parsed and
 * validated (a 400 that names the field otherwise), JSON responses with their length, and
 * OpenAI's `{"error": {...}}` answers. The request schemas and response bodies are in
 * `bodies.ts`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';

/** OpenAI's error body: what {@link OpenAIHttpError.toBody} returns and clients read. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The `type` OpenAI gives an error of this HTTP status. */
export function openAIErrorType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

/**
 * A failure a server answers with `status` and OpenAI's `{"error": {...}}` body
 * ({@link sendOpenAIError}). `type` defaults to the one OpenAI gives the status
 * ({@link openAIErrorType}); `param` names the request field at fault, `code` a machine-readable
 * reason (`request_too_large`).
 */
export class OpenAIHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = openAIErrorType(status),
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'OpenAIHttpError';
  }

  /** The response body for this error. */
  toBody(): OpenAIErrorBody {
    return {
      error: { message: this.message, type: this.type, param: this.param, code: this.code },
    };
  }
}

/** The 413 of an OpenAI server for a body over `limit` bytes. */
function requestTooLarge(size: number, limit: number): OpenAIHttpError {
  return new OpenAIHttpError(
    413,
    `The request body has ${size} bytes or more; the limit is ${limit}.`,
    'invalid_request_error',
    null,
    'request_too_large',
  );
}

/**
 * The request body as UTF-8 text, refused beyond `limit` bytes: up front by its
 * `content-length`, or as soon as the bytes read pass the limit when no length was declared.
 * A refused body is still read to its end and thrown away, so the server can answer the
 * error on the same connection instead of cutting it. `tooLarge` makes the error to reject
 * with (default: OpenAI's 413, {@link requestTooLarge}).
 */
export function readRequestBody(
  request: IncomingMessage,
  limit = Number.POSITIVE_INFINITY,
  tooLarge: (size: number, limit: number) => Error = requestTooLarge,
): Promise<string> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    request.resume();
    return Promise.reject(tooLarge(declared, limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    request.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(tooLarge(size, limit));
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    request.on('error', (error) => {
      if (!failed) reject(error);
    });
  });
}

/**
 * Parses a request body and validates it against `schema`. Invalid JSON and the first schema
 * issue are 400s; the issue's path is the error's `param` and is named in its message.
 */
export function parseOpenAIRequest<S extends z.ZodType>(text: string, schema: S): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new OpenAIHttpError(
      400,
      `The request body is not valid JSON: ${(error as Error).message}.`,
    );
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.map(String).join('.');
    throw new OpenAIHttpError(
      400,
      `Invalid request${param ? ` (field \`${param}\`)` : ''}: ${issue.message}.`,
      'invalid_request_error',
      param || null,
    );
  }
  return parsed.data;
}

/** Sends a complete response with its `content-length`. */
export function sendText(
  response: ServerResponse,
  status: number,
  text: string,
  contentType: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

/** Sends `body` as JSON with `status`. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendText(response, status, JSON.stringify(body), 'application/json', headers);
}

/** Sends `error` as OpenAI does: its status and `{"error": {...}}`. */
export function sendOpenAIError(
  response: ServerResponse,
  error: OpenAIHttpError,
  headers: Record<string, string> = {},
): void {
  sendJson(response, error.status, error.toBody(), headers);
}
