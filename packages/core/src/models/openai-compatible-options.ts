/**
 * Options of the OpenAI-compatible model clients, as zod schemas (the source of truth;
 * the option types are inferred from them).
 */
import { z } from 'zod';

/** Options shared by {@link OpenAICompatibleChatModel} and {@link OpenAICompatibleEmbeddingModel}. */
export const OpenAICompatibleClientOptionsSchema = z.object({
  /**
   * Base URL of the OpenAI-compatible API, usually ending in `/v1`: `http://127.0.0.1:8000/v1`
   * (vLLM, SGLang), `http://127.0.0.1:8080/v1` (llama.cpp server), `http://127.0.0.1:11434/v1`
   * (Ollama), `https://api.openai.com/v1`.
   */
  baseURL: z.url({
    protocol: /^https?$/,
    error: 'baseURL must be an http(s) URL such as http://127.0.0.1:8000/v1',
  }),
  /** Model name as the server knows it, e.g. `Qwen/Qwen2.5-7B-Instruct`. */
  model: z.string().min(1, 'model must name the served model'),
  /**
   * API key. Default: the `DREAMGYM_API_KEY` environment variable, else `OPENAI_API_KEY`,
   * else a placeholder for local servers that need none. Never logged or put in errors.
   */
  apiKey: z.string().min(1).optional(),
  /** Time limit of one attempt (connect, wait, read the whole body), in milliseconds. Default 60 000. */
  timeoutMs: z.number().int().positive().default(60_000),
  /** Retries after the first attempt, on 408/409/429/5xx, timeouts, dropped connections and malformed bodies. Default 4. */
  maxRetries: z.number().int().min(0).default(4),
  /** Backoff before the first retry, before jitter; it doubles with each retry. Default 500 ms. */
  retryBaseDelayMs: z.number().min(0).default(500),
  /** Upper bound of the computed backoff. Default 20 000 ms. */
  retryMaxDelayMs: z.number().min(0).default(20_000),
  /** Upper bound of a server-requested `Retry-After` wait. Default 60 000 ms. */
  maxRetryAfterMs: z.number().min(0).default(60_000),
  /** Requests in flight at the same time from this client; others queue in order. Default 8. */
  concurrency: z.number().int().positive().default(8),
  /** Extra HTTP headers sent with every request (e.g. for a gateway). */
  headers: z.record(z.string(), z.string()).optional(),
});

/** How {@link OpenAICompatibleChatModel} asks for structured output. */
export const StructuredOutputModeSchema = z.enum(['auto', 'json_schema', 'json_object', 'text']);

/** Options of {@link OpenAICompatibleChatModel}. */
export const OpenAICompatibleChatModelOptionsSchema = OpenAICompatibleClientOptionsSchema.extend({
  /** Default sampling temperature of every request. Default: the server's. */
  temperature: z.number().min(0).max(2).optional(),
  /** Default upper bound on generated tokens. Default: the server's. */
  maxTokens: z.number().int().positive().optional(),
  /** Default nucleus-sampling `top_p`. Default: the server's. */
  topP: z.number().gt(0).max(1).optional(),
  /**
   * Structured output. `auto` (default): start with `response_format: json_schema`; if the
   * server rejects it, fall back to `json_object`, then to plain text with the schema in the
   * prompt, and remember what worked (one rejected request per client, not per call).
   * The other values force one mode. Output is validated by the zod schema in every mode.
   */
  structuredOutput: StructuredOutputModeSchema.default('auto'),
});

/** Options of {@link OpenAICompatibleEmbeddingModel}. */
export const OpenAICompatibleEmbeddingModelOptionsSchema =
  OpenAICompatibleClientOptionsSchema.extend({
    /**
     * Vector length. Default: discovered from the first response. When given, every
     * response is checked against it.
     */
    dimension: z.number().int().positive().optional(),
    /**
     * Send `dimensions: dimension` in requests, for models that can shorten their vectors
     * (OpenAI `text-embedding-3-*`). Default `false`: many servers reject the field.
     */
    requestDimensions: z.boolean().default(false),
    /** Texts per request; larger inputs are split into batches sent concurrently. Default 64. */
    batchSize: z.number().int().positive().default(64),
  });

/** Input options (defaults optional) of the client options. */
export type OpenAICompatibleClientOptions = z.input<typeof OpenAICompatibleClientOptionsSchema>;
/** Input options of {@link OpenAICompatibleChatModel}. */
export type OpenAICompatibleChatModelOptions = z.input<
  typeof OpenAICompatibleChatModelOptionsSchema
>;
/** Input options of {@link OpenAICompatibleEmbeddingModel}. */
export type OpenAICompatibleEmbeddingModelOptions = z.input<
  typeof OpenAICompatibleEmbeddingModelOptionsSchema
>;
/** A structured-output mode, see {@link OpenAICompatibleChatModelOptionsSchema}. */
export type StructuredOutputMode = z.output<typeof StructuredOutputModeSchema>;
