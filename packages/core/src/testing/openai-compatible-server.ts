/**
 * A real OpenAI-compatible HTTP server for tests: `POST /v1/chat/completions`,
 * `POST /v1/embeddings` and `GET /v1/models` in the OpenAI wire format, on 127.0.0.1 and
 * a free port. Each request is answered by a scriptable responder, so a test can inject
 * what real servers do on a bad day (429 with `Retry-After`, 500/503, slow answers,
 * malformed bodies, dropped connections) and what differs between servers (vLLM, SGLang,
 * llama.cpp, Ollama and OpenAI accept different `response_format` types, give logprobs or
 * not, report usage or not). Every request is recorded, in arrival order, so tests can
 * assert that no request was lost or sent twice.
 *
 * @example
 * ```ts
 * const server = await startOpenAICompatibleServer({
 *   chat: (request, index) => (index === 0 ? { type: 'error', status: 429, retryAfter: 1 } : 'hello'),
 * });
 * const model = new OpenAICompatibleChatModel({ baseURL: server.url, model: 'test' });
 * await model.complete({ messages: [{ role: 'user', content: 'hi' }] }); // 'hello', after one retry
 * server.requests.length; // 2
 * await server.close();
 * ```
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A chat message as received in a request (content may be a string or content parts). */
export interface ReceivedChatMessage {
  role: string;
  content?: unknown;
  [field: string]: unknown;
}

/** The `response_format` field of a chat request, as received. */
export interface ReceivedResponseFormat {
  type: string;
  json_schema?: { name?: string; schema?: Record<string, unknown>; strict?: boolean | null };
  [field: string]: unknown;
}

/** The body of a `POST /v1/chat/completions` request, as the server parsed it. */
export interface ReceivedChatRequest {
  model?: string;
  messages: ReceivedChatMessage[];
  temperature?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  stop?: string | string[];
  seed?: number;
  logprobs?: boolean;
  top_logprobs?: number;
  response_format?: ReceivedResponseFormat;
  [field: string]: unknown;
}

/** The body of a `POST /v1/embeddings` request, as the server parsed it. */
export interface ReceivedEmbeddingsRequest {
  model?: string;
  input: string | string[];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  [field: string]: unknown;
}

/** One request the server received, in arrival order. */
export interface RecordedRequest {
  /** 0-based arrival order over all endpoints. */
  index: number;
  /** 0-based arrival order among requests to the same `path`. */
  endpointIndex: number;
  method: string;
  /** The URL path, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw request body. */
  rawBody: string;
  /** The parsed JSON body; `undefined` when the body was not valid JSON. */
  body: unknown;
  /** `Date.now()` when the request arrived. */
  receivedAt: number;
  /** `Date.now()` when the response was finished or the connection closed; unset while in flight. */
  finishedAt?: number;
  /** The HTTP status sent; unset when no response was sent (dropped, or the client went away). */
  status?: number;
  /**
   * What the server meant to answer: a `message` (chat) or `embeddings` success, an
   * `error` (scripted, a rejected `response_format`, or a bad request), a `raw` body or a
   * `drop`. Set once the reply is chosen, even if the client went away before it was sent.
   */
  reply?: 'message' | 'embeddings' | 'error' | 'raw' | 'drop';
  /** How the exchange ended: `sent` a response, the client `aborted` first, or the server `dropped` it. */
  outcome?: 'sent' | 'aborted' | 'dropped';
}

/** Options shared by every scripted reply. */
export interface ReplyTiming {
  /**
   * Wait this long before answering (a slow server, or one past the client's timeout).
   * The wait ends early when the client goes away.
   */
  delayMs?: number;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

/** Token-usage numbers to report; missing fields are computed from the texts. */
export interface ReplyUsage {
  promptTokens?: number;
  completionTokens?: number;
}

/** A successful chat completion. */
export interface ChatMessageReply extends ReplyTiming {
  type: 'message';
  /** The assistant's text. */
  content: string;
  /** Default `stop`. */
  finishReason?: string;
  /**
   * Usage to report. Default: computed (prompt tokens = whitespace-separated words of all
   * messages, completion tokens = the completion's tokens as split for logprobs).
   * `null` omits the `usage` field, as some servers do.
   */
  usage?: ReplyUsage | null;
  /**
   * Per-token logprobs to return when the request asked for them. Default: the content
   * split into word-sized tokens with logprob `-0.01 * (i + 1)` for token `i`, so the
   * tokens concatenate back to `content`. `null`: give none even when asked.
   */
  logprobs?: Array<{ token: string; logprob: number }> | null;
  /** The `model` field of the response. Default: the request's model. */
  model?: string;
}

/** An OpenAI-format error response (`{"error": {...}}`), or vLLM's top-level variant. */
export interface ErrorReply extends ReplyTiming {
  type: 'error';
  status: number;
  /** Default: a message naming the status. */
  message?: string;
  /** The error body's `type`, e.g. `rate_limit_error`, `server_error`, `invalid_request_error`. */
  errorType?: string;
  /** The `Retry-After` header: seconds (a number) or any string, e.g. an HTTP date. */
  retryAfter?: number | string;
  /**
   * Body layout. `openai` (default): `{"error": {"message", "type", "code"}}`; `vllm`:
   * `{"object": "error", "message", "type", "code"}`; `text`: the message as plain text.
   */
  bodyStyle?: 'openai' | 'vllm' | 'text';
}

/** Any body, verbatim: malformed JSON, truncated JSON, HTML from a proxy... */
export interface RawReply extends ReplyTiming {
  type: 'raw';
  /** Default 200. */
  status?: number;
  body: string;
  /** Default `application/json`, to look like a broken API response rather than a different one. */
  contentType?: string;
}

/** Close the connection without answering (a crashed or restarted server). */
export interface DropReply extends ReplyTiming {
  type: 'drop';
}

/**
 * What the chat responder returns: a string (shorthand for a message with that content),
 * or one of the scripted replies.
 */
export type ChatReply = string | ChatMessageReply | ErrorReply | RawReply | DropReply;

/** A successful embeddings response. */
export interface EmbeddingsVectorsReply extends ReplyTiming {
  type: 'embeddings';
  /** One vector per input, in input order. */
  vectors: number[][];
  /** Prompt tokens to report. Default: whitespace-separated words of the inputs. `null` omits usage. */
  usage?: { promptTokens?: number } | null;
  /** Return `data` in reverse order (each item keeps its `index`), as servers may. */
  shuffle?: boolean;
}

/**
 * What the embeddings responder returns: the vectors (one per input), or one of the
 * scripted replies.
 */
export type EmbeddingsReply =
  | number[][]
  | EmbeddingsVectorsReply
  | ErrorReply
  | RawReply
  | DropReply;

/**
 * Answers one chat request. `index` is the 0-based arrival order among chat requests
 * (every attempt counts, retries included); `recorded` is the request's record.
 */
export type ChatResponder = (
  request: ReceivedChatRequest,
  index: number,
  recorded: RecordedRequest,
) => ChatReply | Promise<ChatReply>;

/** Answers one embeddings request; `inputs` is `input` as an array. */
export type EmbeddingsResponder = (
  request: ReceivedEmbeddingsRequest,
  inputs: string[],
  index: number,
  recorded: RecordedRequest,
) => EmbeddingsReply | Promise<EmbeddingsReply>;

/** How a server that does not support a `response_format` type reacts to it. */
export type ResponseFormatSupport =
  /** Supported: the request reaches the responder. */
  | true
  /** Rejected with HTTP 400 before the responder, in the server's error format. */
  | false
  /** Silently ignored (old Ollama): the request reaches the responder as if plain text. */
  | 'ignore';

/** What the simulated server supports. */
export interface ServerCapabilities {
  /** `response_format: {type: 'json_schema'}`. Default `true`. */
  jsonSchema?: ResponseFormatSupport;
  /** `response_format: {type: 'json_object'}`. Default `true`. */
  jsonObject?: ResponseFormatSupport;
  /** `logprobs: true`. `false`: the server ignores it and answers `logprobs: null`. Default `true`. */
  logprobs?: boolean;
}

/**
 * The error a server sends when it rejects a `response_format`, in the style of:
 * `openai` (nested `error` object), `vllm` (top-level `object: "error"`), `llama.cpp`
 * (nested error with numeric `code`), `ollama` (nested error, `invalid_request_error`).
 */
export type RejectionStyle = 'openai' | 'vllm' | 'llama.cpp' | 'ollama';

/** Options of {@link startOpenAICompatibleServer}. All are optional. */
export interface OpenAICompatibleServerOptions {
  /**
   * Answers `POST /v1/chat/completions`. Default: echoes the last user message's content,
   * or `{}` when a JSON response format was asked for.
   */
  chat?: ChatResponder;
  /**
   * Answers `POST /v1/embeddings`. Default: {@link deterministicEmbedding} of each input
   * with `embeddingDimension` components (not normalised, as real servers need not be).
   */
  embeddings?: EmbeddingsResponder;
  /** Vector length of the default embeddings responder. Default 8. */
  embeddingDimension?: number;
  /** `response_format` and logprobs support. Default: everything supported. */
  capabilities?: ServerCapabilities;
  /** Error format of `response_format` rejections. Default `openai`. */
  rejectionStyle?: RejectionStyle;
  /**
   * When set, every request must carry `Authorization: Bearer <apiKey>`; others get 401.
   * Default: no authentication.
   */
  apiKey?: string;
  /** Model ids listed by `GET /v1/models`. Default `['test-model']`. */
  models?: string[];
}

/** A running server; see {@link startOpenAICompatibleServer}. */
export interface OpenAICompatibleServer {
  /** Base URL for clients, ending in `/v1`, e.g. `http://127.0.0.1:38017/v1`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in arrival order (a live array; records fill in as responses end). */
  readonly requests: RecordedRequest[];
  /** The recorded requests to one path, e.g. `/v1/chat/completions`. */
  requestsTo(path: string): RecordedRequest[];
  /** Requests being handled right now. */
  readonly inFlight: number;
  /** The largest number of requests handled at the same time so far. */
  readonly maxInFlight: number;
  /** Replaces the chat responder (the arrival counters keep counting). */
  setChat(responder: ChatResponder): void;
  /** Replaces the embeddings responder. */
  setEmbeddings(responder: EmbeddingsResponder): void;
  /** Changes the simulated capabilities. */
  setCapabilities(capabilities: ServerCapabilities): void;
  /** Waits until no request is in flight (a response may still be in a client's buffers). */
  idle(): Promise<void>;
  /** Stops listening, drops open connections and pending delayed replies (their records end `dropped`). */
  close(): Promise<void>;
}

const CHAT_PATH = '/v1/chat/completions';
const EMBEDDINGS_PATH = '/v1/embeddings';
const MODELS_PATH = '/v1/models';

/**
 * A deterministic, not normalised vector for `text` (FNV-1a hashed character trigrams),
 * the default embeddings of {@link startOpenAICompatibleServer}. Similar texts get similar
 * vectors, so retrieval tests behave sensibly.
 */
export function deterministicEmbedding(text: string, dimension: number): number[] {
  const vector = new Array<number>(dimension).fill(0);
  const padded = `  ${text.toLowerCase()}  `;
  for (let start = 0; start + 3 <= padded.length; start += 1) {
    let hash = 0x811c9dc5;
    for (let offset = 0; offset < 3; offset += 1) {
      hash ^= padded.charCodeAt(start + offset);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    const sign = hash & 1 ? 1 : -1;
    vector[(hash >>> 1) % dimension] = (vector[(hash >>> 1) % dimension] ?? 0) + sign;
  }
  // A constant offset keeps empty and very short texts away from the zero vector.
  vector[0] = (vector[0] ?? 0) + 0.5;
  return vector;
}

/**
 * Splits a completion into word-sized tokens that concatenate back to it, as the default
 * tokenisation for logprobs and usage.
 */
export function splitIntoTokens(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

function countWords(text: string): number {
  return text.split(/\s+/).filter((word) => word.length > 0).length;
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        typeof part === 'object' &&
        part !== null &&
        typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join(' ');
  }
  return '';
}

function defaultChatResponder(request: ReceivedChatRequest): ChatReply {
  const format = request.response_format?.type;
  if (format === 'json_schema' || format === 'json_object') return '{}';
  const lastUser = [...request.messages].reverse().find((message) => message.role === 'user');
  return messageText(lastUser?.content);
}

function errorBody(reply: ErrorReply): { text: string; contentType: string } {
  const message = reply.message ?? `Simulated HTTP ${reply.status} from the test server.`;
  const type =
    reply.errorType ??
    (reply.status === 429
      ? 'rate_limit_error'
      : reply.status >= 500
        ? 'server_error'
        : 'invalid_request_error');
  switch (reply.bodyStyle ?? 'openai') {
    case 'text':
      return { text: message, contentType: 'text/plain; charset=utf-8' };
    case 'vllm':
      return {
        text: JSON.stringify({ object: 'error', message, type, param: null, code: reply.status }),
        contentType: 'application/json',
      };
    default:
      return {
        text: JSON.stringify({ error: { message, type, param: null, code: null } }),
        contentType: 'application/json',
      };
  }
}

/** The 400 a server of `style` sends for a `response_format` type it does not support. */
function rejectionReply(style: RejectionStyle, formatType: string): ErrorReply {
  switch (style) {
    case 'vllm':
      return {
        type: 'error',
        status: 400,
        bodyStyle: 'vllm',
        errorType: 'BadRequestError',
        message: `1 validation error for ChatCompletionRequest\nresponse_format.type\n  Input should be 'text' (type=literal_error, input_value='${formatType}')`,
      };
    case 'llama.cpp':
      return {
        type: 'error',
        status: 400,
        errorType: 'invalid_request_error',
        message: `response_format type must be one of "text" or "json_object", but got: ${formatType}`,
      };
    case 'ollama':
      return {
        type: 'error',
        status: 400,
        errorType: 'invalid_request_error',
        message: `invalid response_format: unsupported type "${formatType}"`,
      };
    default:
      return {
        type: 'error',
        status: 400,
        errorType: 'invalid_request_error',
        message: `Invalid parameter: 'response_format' of type '${formatType}' is not supported with this model.`,
      };
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function floatsToBase64(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

/**
 * Starts a real OpenAI-compatible HTTP server on 127.0.0.1 and a free port.
 * Close it with `close()` (for example in `afterAll`).
 */
export async function startOpenAICompatibleServer(
  options: OpenAICompatibleServerOptions = {},
): Promise<OpenAICompatibleServer> {
  let chatResponder: ChatResponder = options.chat ?? defaultChatResponder;
  const embeddingDimension = options.embeddingDimension ?? 8;
  let embeddingsResponder: EmbeddingsResponder =
    options.embeddings ??
    ((_request, inputs) =>
      inputs.map((input) => deterministicEmbedding(input, embeddingDimension)));
  let capabilities: ServerCapabilities = { ...options.capabilities };
  const rejectionStyle = options.rejectionStyle ?? 'openai';
  const models = options.models ?? ['test-model'];

  const requests: RecordedRequest[] = [];
  const perPath = new Map<string, number>();
  const sockets = new Set<Socket>();
  const pendingTimers = new Set<NodeJS.Timeout>();
  let inFlight = 0;
  let maxInFlight = 0;
  let idleWaiters: Array<() => void> = [];
  let closed = false;

  function finish(record: RecordedRequest, outcome: NonNullable<RecordedRequest['outcome']>): void {
    if (record.outcome !== undefined) return;
    record.outcome = outcome;
    if (outcome !== 'sent') record.status = undefined;
    record.finishedAt = Date.now();
    inFlight -= 1;
    if (inFlight === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Resolves after `ms`, or early with `false` when the client goes away or the server closes. */
  function wait(ms: number, response: ServerResponse): Promise<boolean> {
    if (ms <= 0) return Promise.resolve(!response.destroyed);
    return new Promise((resolve) => {
      const onClose = () => {
        clearTimeout(timer);
        pendingTimers.delete(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        pendingTimers.delete(timer);
        response.off('close', onClose);
        resolve(!response.destroyed);
      }, ms);
      pendingTimers.add(timer);
      response.once('close', onClose);
    });
  }

  function send(
    record: RecordedRequest,
    response: ServerResponse,
    status: number,
    body: string,
    contentType: string,
    headers: Record<string, string> = {},
  ): void {
    if (response.destroyed || response.writableEnded) {
      finish(record, 'aborted');
      return;
    }
    record.status = status;
    response.writeHead(status, {
      'content-type': contentType,
      'content-length': Buffer.byteLength(body),
      ...headers,
    });
    response.end(body);
  }

  async function sendScripted(
    record: RecordedRequest,
    response: ServerResponse,
    reply: ErrorReply | RawReply | DropReply,
  ): Promise<void> {
    record.reply = reply.type;
    if (!(await wait(reply.delayMs ?? 0, response))) return finish(record, 'aborted');
    if (reply.type === 'drop') {
      finish(record, 'dropped');
      response.socket?.destroy();
      return;
    }
    if (reply.type === 'raw') {
      send(
        record,
        response,
        reply.status ?? 200,
        reply.body,
        reply.contentType ?? 'application/json',
        reply.headers,
      );
      return;
    }
    const { text, contentType } = errorBody(reply);
    const headers: Record<string, string> = { ...reply.headers };
    if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
    send(record, response, reply.status, text, contentType, headers);
  }

  function sendError(
    record: RecordedRequest,
    response: ServerResponse,
    status: number,
    message: string,
  ): void {
    record.reply = 'error';
    const { text, contentType } = errorBody({ type: 'error', status, message });
    send(record, response, status, text, contentType);
  }

  async function handleChat(
    record: RecordedRequest,
    response: ServerResponse,
    index: number,
  ): Promise<void> {
    const request = record.body as ReceivedChatRequest;
    if (!Array.isArray(request.messages)) {
      return sendError(record, response, 400, "'messages' is required and must be an array.");
    }
    if (request.stream === true) {
      return sendError(
        record,
        response,
        400,
        'The test server does not stream; send stream: false.',
      );
    }
    let effective = request;
    const format = request.response_format?.type;
    if (format === 'json_schema' || format === 'json_object') {
      const support = format === 'json_schema' ? capabilities.jsonSchema : capabilities.jsonObject;
      if (support === false)
        return sendScripted(record, response, rejectionReply(rejectionStyle, format));
      if (support === 'ignore') {
        const { response_format: _ignored, ...rest } = request;
        effective = rest as ReceivedChatRequest;
      }
    }
    const scripted = await chatResponder(effective, index, record);
    const reply: ChatReply =
      typeof scripted === 'string' ? { type: 'message', content: scripted } : scripted;
    if (reply.type !== 'message') return sendScripted(record, response, reply);
    record.reply = 'message';
    if (!(await wait(reply.delayMs ?? 0, response))) return finish(record, 'aborted');

    const tokens = splitIntoTokens(reply.content);
    const wantsLogprobs =
      request.logprobs === true && capabilities.logprobs !== false && reply.logprobs !== null;
    const logprobs = wantsLogprobs
      ? {
          content: (
            reply.logprobs ??
            tokens.map((token, position) => ({ token, logprob: -0.01 * (position + 1) }))
          ).map(({ token, logprob }) => ({
            token,
            logprob,
            bytes: [...Buffer.from(token, 'utf8')],
            top_logprobs: [],
          })),
        }
      : null;
    const promptTokens =
      reply.usage?.promptTokens ??
      request.messages.reduce((sum, message) => sum + countWords(messageText(message.content)), 0);
    const completionTokens = reply.usage?.completionTokens ?? tokens.length;
    const body = {
      id: `chatcmpl-test-${record.index}`,
      object: 'chat.completion',
      created: Math.floor(record.receivedAt / 1000),
      model: reply.model ?? request.model ?? models[0],
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: reply.content },
          logprobs,
          finish_reason: reply.finishReason ?? 'stop',
        },
      ],
      ...(reply.usage === null
        ? {}
        : {
            usage: {
              prompt_tokens: promptTokens,
              completion_tokens: completionTokens,
              total_tokens: promptTokens + completionTokens,
            },
          }),
    };
    send(record, response, 200, JSON.stringify(body), 'application/json', reply.headers);
  }

  async function handleEmbeddings(
    record: RecordedRequest,
    response: ServerResponse,
    index: number,
  ): Promise<void> {
    const request = record.body as ReceivedEmbeddingsRequest;
    const inputs = typeof request.input === 'string' ? [request.input] : request.input;
    if (!Array.isArray(inputs) || inputs.some((input) => typeof input !== 'string')) {
      return sendError(record, response, 400, "'input' must be a string or an array of strings.");
    }
    const scripted = await embeddingsResponder(request, inputs, index, record);
    const reply: EmbeddingsReply = Array.isArray(scripted)
      ? { type: 'embeddings', vectors: scripted }
      : scripted;
    if (reply.type !== 'embeddings') return sendScripted(record, response, reply);
    record.reply = 'embeddings';
    if (!(await wait(reply.delayMs ?? 0, response))) return finish(record, 'aborted');
    const base64 = request.encoding_format === 'base64';
    const data = reply.vectors.map((vector, position) => ({
      object: 'embedding',
      index: position,
      embedding: base64 ? floatsToBase64(vector) : vector,
    }));
    if (reply.shuffle) data.reverse();
    const promptTokens =
      reply.usage?.promptTokens ?? inputs.reduce((sum, input) => sum + countWords(input), 0);
    const body = {
      object: 'list',
      model: request.model ?? models[0],
      data,
      ...(reply.usage === null
        ? {}
        : { usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } }),
    };
    send(record, response, 200, JSON.stringify(body), 'application/json', reply.headers);
  }

  function startRecord(request: IncomingMessage, response: ServerResponse): RecordedRequest {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname.replace(/\/+$/, '');
    const endpointIndex = perPath.get(path) ?? 0;
    perPath.set(path, endpointIndex + 1);
    const record: RecordedRequest = {
      index: requests.length,
      endpointIndex,
      method: request.method ?? 'GET',
      path,
      headers: request.headers,
      rawBody: '',
      body: undefined,
      receivedAt: Date.now(),
    };
    requests.push(record);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    response.once('finish', () => finish(record, 'sent'));
    response.once('close', () => finish(record, response.writableFinished ? 'sent' : 'aborted'));
    return record;
  }

  async function handle(
    record: RecordedRequest,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<void> {
    const path = record.path;
    const endpointIndex = record.endpointIndex;
    record.rawBody = await readBody(request);
    if (record.rawBody.length > 0) {
      try {
        record.body = JSON.parse(record.rawBody);
      } catch {
        record.body = undefined;
      }
    }

    if (
      options.apiKey !== undefined &&
      request.headers.authorization !== `Bearer ${options.apiKey}`
    ) {
      return sendError(record, response, 401, 'Incorrect API key provided.');
    }
    if (path === MODELS_PATH && record.method === 'GET') {
      const body = {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'test' })),
      };
      return send(record, response, 200, JSON.stringify(body), 'application/json');
    }
    if ((path === CHAT_PATH || path === EMBEDDINGS_PATH) && record.method === 'POST') {
      if (typeof record.body !== 'object' || record.body === null) {
        return sendError(record, response, 400, 'The request body is not a JSON object.');
      }
      if (path === CHAT_PATH) return handleChat(record, response, endpointIndex);
      return handleEmbeddings(record, response, endpointIndex);
    }
    sendError(record, response, 404, `No route for ${record.method} ${path} on the test server.`);
  }

  const server = createServer((request, response) => {
    const record = startRecord(request, response);
    handle(record, request, response).catch((error: unknown) => {
      // A throwing responder is a bug in the test; answer 500 and keep the message visible.
      const message = error instanceof Error ? error.message : String(error);
      if (!response.headersSent && !response.destroyed) {
        sendError(record, response, 500, `The test responder threw: ${message}`);
      } else if (!response.destroyed) {
        response.destroy();
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    requestsTo: (path) => requests.filter((record) => record.path === path),
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    setChat(responder) {
      chatResponder = responder;
    },
    setEmbeddings(responder) {
      embeddingsResponder = responder;
    },
    setCapabilities(next) {
      capabilities = { ...next };
    },
    idle() {
      if (inFlight === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of pendingTimers) clearTimeout(timer);
      pendingTimers.clear();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
      // Requests cut off by closing were dropped by the server, whatever events are still queued.
      for (const record of requests) if (record.outcome === undefined) finish(record, 'dropped');
    },
  };
}

/**
 * A test helper: `start(options)` starts a server that `closeAll()` stops again; call
 * `closeAll` from `afterEach` so no server outlives its test.
 *
 * @example
 * ```ts
 * const servers = openAICompatibleServerPool();
 * afterEach(() => servers.closeAll());
 * it('retries', async () => {
 *   const server = await servers.start({ chat: () => 'ok' });
 * });
 * ```
 */
export function openAICompatibleServerPool(): {
  start(options?: OpenAICompatibleServerOptions): Promise<OpenAICompatibleServer>;
  closeAll(): Promise<void>;
} {
  const running = new Set<OpenAICompatibleServer>();
  return {
    async start(options) {
      const server = await startOpenAICompatibleServer(options);
      running.add(server);
      return server;
    },
    async closeAll() {
      const servers = [...running];
      running.clear();
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}
