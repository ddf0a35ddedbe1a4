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

const JSON_RPC_PARSE_ERROR = -32700;
const JSON_RPC_INVALID_REQUEST = -32600;
const JSON_RPC_METHOD_NOT_FOUND = -32601;
const JSON_RPC_INTERNAL_ERROR = -32603;

/**
 * `POST /mcp`, answered as OpenEnv answers it for an environment without MCP tools:
 * JSON-RPC 2.0 errors (parse error, invalid request, "does not support MCP" for `tools/*`,
 * method not found otherwise).
 */
export function mcpReply(body: string): Record<string, unknown> {
  let request: unknown;
  try {
    request = JSON.parse(body);
  } catch {
    return jsonRpcError(JSON_RPC_PARSE_ERROR, 'Parse error');
  }
  return mcpRequestReply(request);
}

function jsonRpcError(code: number, message: string, id: unknown = null) {
  return { jsonrpc: '2.0', error: { code, message }, id };
}

/**
 * The JSON-RPC reply to a parsed MCP request (the `data` of a WebSocket `mcp` message, or an
 * HTTP `/mcp` body), as OpenEnv answers for an environment without MCP tools.
 */
export function mcpRequestReply(request: unknown): Record<string, unknown> {
  const error = jsonRpcError;
  const candidate = request as { jsonrpc?: unknown; method?: unknown; id?: unknown };
  if (
    typeof request !== 'object' ||
    request === null ||
    Array.isArray(request) ||
    candidate.jsonrpc !== '2.0' ||
    typeof candidate.method !== 'string'
  ) {
    return error(
      JSON_RPC_INVALID_REQUEST,
      'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a "method".',
    );
  }
  const id =
    typeof candidate.id === 'string' || typeof candidate.id === 'number' ? candidate.id : null;
  if (candidate.method === 'tools/list' || candidate.method === 'tools/call') {
    return error(JSON_RPC_INTERNAL_ERROR, 'Environment does not support MCP', id);
  }
  return error(JSON_RPC_METHOD_NOT_FOUND, `Method not found: ${candidate.method}`, id);
}
