/**
 * `ChatModel`: a chat-completion model behind any OpenAI-compatible server (vLLM, SGLang,
 * llama.cpp, Ollama, OpenAI). Every LLM-backed part of DreamGym (the reasoning experience
 * model, LLM policies, the task generator, the judge) talks to a model through it.
 */
import type { z } from 'zod';

/** One message of a chat conversation. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Token counts of one request, or totals over many. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** Log-probability of one generated token. */
export interface TokenLogprob {
  token: string;
  logprob: number;
}

/** One chat-completion request. */
export interface ChatRequest {
  messages: ChatMessage[];
  /** Sampling temperature. Default: the client's option, else the server's. */
  temperature?: number;
  /** Upper bound on generated tokens. */
  maxTokens?: number;
  /** Stop sequences. */
  stop?: string[];
  /** Ask for the log-probability of every generated token. */
  logprobs?: boolean;
  /** Seed for servers that support reproducible sampling. */
  seed?: number;
  /** Cancels the request (and its retries). */
  signal?: AbortSignal;
}

/** The model's answer to a {@link ChatRequest}. */
export interface ChatResponse {
  /** The generated text. */
  text: string;
  /** Per-token log-probabilities, when asked for and the server gave them. */
  logprobs?: TokenLogprob[];
  /** Why generation stopped (`stop`, `length`...), as the server said. */
  finishReason?: string;
  usage: TokenUsage;
}

/** A request for output that must match `schema`. */
export interface StructuredChatRequest<S extends z.ZodType> extends ChatRequest {
  /** The output's schema: sent to the server as JSON Schema where supported, always validated. */
  schema: S;
  /** Name of the schema, as servers require one (`experience_step`). */
  schemaName: string;
  /**
   * Ask the server to enforce the schema strictly (OpenAI `strict: true`). Default: `true`
   * when the schema allows it (every object property required, no open records), else `false`.
   */
  strict?: boolean;
}

/** The answer to a {@link StructuredChatRequest}, with the validated value. */
export interface StructuredChatResponse<T> extends ChatResponse {
  /** The validated output. */
  value: T;
  /** How the structure was obtained: server-enforced schema, JSON mode, or parsed from plain text. */
  mode: 'json_schema' | 'json_object' | 'text';
}

/** Totals over a model client's lifetime. */
export interface ChatModelStats extends TokenUsage {
  /** Requests that completed. */
  requests: number;
  /** Attempts that were retried (429, 5xx, timeouts). */
  retries: number;
  /** Requests that failed after all retries. */
  failures: number;
  /** HTTP attempts sent: first attempts, retries and structured-output fallbacks together. */
  attempts: number;
  /**
   * Structured requests that the server rejected for their `response_format` and that were
   * re-sent in a simpler mode (`json_schema` -> `json_object` -> `text`).
   */
  formatFallbacks: number;
}

/** A chat-completion model: plain and schema-validated completions, with usage accounting. */
export interface ChatModel {
  /** Identifies the model and server, e.g. `Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1`. */
  readonly id: string;
  complete(request: ChatRequest): Promise<ChatResponse>;
  /**
   * Completes with output validated against `request.schema`; throws a `ModelOutputError`
   * when the model's output cannot be made to match it.
   */
  completeStructured<S extends z.ZodType>(
    request: StructuredChatRequest<S>,
  ): Promise<StructuredChatResponse<z.output<S>>>;
  /** Usage and request counts so far. */
  stats(): ChatModelStats;
}
