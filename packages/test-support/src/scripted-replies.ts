/**
 * The scripting surface of the fake OpenAI-compatible server: what a test's responders
 * receive (the request as sent, and its record), what they may answer (a message, vectors,
 * an error, a raw body, a dropped connection), and the server's options and handle.
 */
import type { IncomingHttpHeaders } from 'node:http';

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

/** The body of a `POST /v1/chat/completions` request as sent (it passed the wire schema). */
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

/** The body of a `POST /v1/embeddings` request as sent (it passed the wire schema). */
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
