/**
 * MCP's JSON-RPC 2.0 methods as this server answers them, whatever carries them (Streamable
 * HTTP `POST /mcp`, or the `data` of a WebSocket `mcp` message): `initialize`, `ping`,
 * `tools/list`, `tools/call` (see `mcp-tools.ts`), and notifications (no reply). The
 * protocol version is the client's when this server speaks it, else the newest it speaks.
 */
import {
  callEnvironmentTool,
  environmentTools,
  type McpEpisode,
  McpToolCallError,
} from './mcp-tools.js';

/** Protocol versions this server speaks, newest first. */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

export const JSON_RPC_PARSE_ERROR = -32700;
export const JSON_RPC_INVALID_REQUEST = -32600;
export const JSON_RPC_METHOD_NOT_FOUND = -32601;
export const JSON_RPC_INVALID_PARAMS = -32602;
export const JSON_RPC_INTERNAL_ERROR = -32603;

/** A JSON-RPC reply (result or error). */
export type JsonRpcReply = Record<string, unknown>;

/** A parsed JSON-RPC message: a request (has `id`), a notification (no `id`), or a client's reply. */
export interface JsonRpcMessage {
  kind: 'request' | 'notification' | 'response';
  method: string;
  id: string | number | null;
  params: Record<string, unknown>;
}

/** What the server says about itself in `initialize`. */
export interface McpServerIdentity {
  name: string;
  version: string;
  /** The domain's action grammar: the `act` tool's description and the `instructions`. */
  grammar: string;
}

/** A JSON-RPC error reply. */
export function jsonRpcError(
  code: number,
  message: string,
  id: string | number | null = null,
): JsonRpcReply {
  return { jsonrpc: '2.0', error: { code, message }, id };
}

/**
 * Reads one JSON-RPC message; a malformed one gives the error reply to send. Batches (arrays)
 * were dropped from MCP in 2025-06-18 and are refused.
 */
export function parseJsonRpc(value: unknown): JsonRpcMessage | { error: JsonRpcReply } {
  if (Array.isArray(value)) {
    return {
      error: jsonRpcError(
        JSON_RPC_INVALID_REQUEST,
        'Invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them); send one message per request.',
      ),
    };
  }
  const candidate = value as {
    jsonrpc?: unknown;
    method?: unknown;
    id?: unknown;
    params?: unknown;
  };
  if (typeof value !== 'object' || value === null || candidate.jsonrpc !== '2.0') {
    return {
      error: jsonRpcError(
        JSON_RPC_INVALID_REQUEST,
        'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a "method".',
      ),
    };
  }
  const id =
    typeof candidate.id === 'string' || typeof candidate.id === 'number' ? candidate.id : null;
  if (typeof candidate.method !== 'string') {
    if ('result' in candidate || 'error' in candidate) {
      return { kind: 'response', method: '', id, params: {} };
    }
    return {
      error: jsonRpcError(
        JSON_RPC_INVALID_REQUEST,
        'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a "method".',
        id,
      ),
    };
  }
  const params =
    typeof candidate.params === 'object' &&
    candidate.params !== null &&
    !Array.isArray(candidate.params)
      ? (candidate.params as Record<string, unknown>)
      : {};
  return {
    kind: 'id' in candidate ? 'request' : 'notification',
    method: candidate.method,
    id,
    params,
  };
}

/** The version to answer `initialize` with: the client's when spoken here, else the newest. */
export function negotiatedVersion(requested: unknown): string {
  return typeof requested === 'string' && MCP_PROTOCOL_VERSIONS.includes(requested)
    ? requested
    : MCP_PROTOCOL_VERSIONS[0]!;
}

/**
 * The reply to one request; undefined for notifications and client replies. `episode` is the
 * session's (undefined where none is open: `tools/call` is then refused, saying how to open one).
 */
export async function answerMcp(
  message: JsonRpcMessage,
  identity: McpServerIdentity,
  episode: McpEpisode | undefined,
): Promise<JsonRpcReply | undefined> {
  if (message.kind !== 'request') return undefined;
  const { id, params } = message;
  const result = (value: Record<string, unknown>): JsonRpcReply => ({
    jsonrpc: '2.0',
    id,
    result: value,
  });
  switch (message.method) {
    case 'initialize':
      return result({
        protocolVersion: negotiatedVersion(params.protocolVersion),
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: identity.name, version: identity.version },
        instructions:
          `Each MCP session plays one episode of ${identity.name}: call "observe" to read the task, then "act" until the episode ends. ${identity.grammar}`.trim(),
      });
    case 'ping':
      return result({});
    case 'tools/list':
      return result({ tools: environmentTools(identity.grammar) });
    case 'tools/call': {
      if (!episode) {
        return jsonRpcError(
          JSON_RPC_INVALID_REQUEST,
          'tools/call needs an MCP session: send initialize first and pass the Mcp-Session-Id header of its reply (each session plays one episode).',
          id,
        );
      }
      try {
        return result({ ...(await callEnvironmentTool(episode, params.name, params.arguments)) });
      } catch (error) {
        if (error instanceof McpToolCallError) {
          return jsonRpcError(JSON_RPC_INVALID_PARAMS, error.message, id);
        }
        throw error;
      }
    }
    default:
      return jsonRpcError(JSON_RPC_METHOD_NOT_FOUND, `Method not found: ${message.method}`, id);
  }
}
