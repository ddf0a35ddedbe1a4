/**
 * The options of a `LlamaChatModel`: which GGUF, the context and its sequences, the CPU
 * threads and batch size, and the default sampling of requests that set none.
 */
import { z } from 'zod';

/** The largest decode whose results do not depend on batching (see `batchSize`). */
const REPRODUCIBLE_BATCH_TOKENS = 63;

/** Options of `LlamaChatModel.load`. */
export const LlamaChatModelOptionsSchema = z.object({
  /**
   * The model: `local` (the embedded SmolLM2-135M-Instruct), a known model name
   * (`smollm2-135m-instruct`) from the model cache, or the path of any GGUF file. Default `local`.
   */
  model: z.string().min(1).default('local'),
  /** Model cache folder for names. Default `$DREAMGYM_MODEL_DIR`, else `~/.cache/dreamgym/models`. */
  modelDirectory: z.string().min(1).optional(),
  /** Tokens one request may hold (prompt and answer together). Default 2 048. */
  contextSize: z.number().int().min(64).default(2048),
  /**
   * Requests evaluated at the same time, each in its own context sequence (they are batched
   * together); others queue in arrival order. Memory grows with `concurrency * contextSize`. Default 2.
   */
  concurrency: z.number().int().min(1).max(64).default(2),
  /**
   * CPU threads. Default 1: on a small model, one thread decodes fastest and is the least
   * hurt by other processes; prompts evaluate faster with more.
   */
  threads: z.number().int().min(1).default(1),
  /**
   * Most tokens one llama.cpp decode evaluates (all sequences together). Default 63:
   * llama.cpp's CPU backend multiplies a batch of 64 tokens or more with another kernel that
   * rounds differently (up to 0.2 nats a token on SmolLM2 Q4_1), so with bigger batches a
   * score or a sample would depend on how much of the prompt the KV cache already held and
   * on which requests were batched together. Below it, every result is a function of the
   * tokens alone, so seeded runs reproduce (a resumed run acts as an uninterrupted one).
   * Larger batches evaluate long prompts faster (see the llm benchmark) and give up that.
   */
  batchSize: z.number().int().positive().default(REPRODUCIBLE_BATCH_TOKENS),
  /** Default sampling temperature; 0 is greedy. Default 1. */
  temperature: z.number().min(0).max(2).default(1),
  /** Default top-k; 0 keeps the whole vocabulary. Default 0. */
  topK: z.number().int().min(0).default(0),
  /** Default nucleus `top_p`. Default 1 (off). */
  topP: z.number().gt(0).max(1).default(1),
  /** Default min-p. Default 0 (off). */
  minP: z.number().min(0).max(1).default(0),
  /** Default upper bound on generated tokens. Default 512. */
  maxTokens: z.number().int().positive().default(512),
  /** Seed of requests without one. Default: a fresh random seed per request. */
  seed: z.number().int().min(0).optional(),
  /**
   * Tries of a structured request whose answer the token limit cut off or that does not
   * validate (sampled again with the next seed; greedy answers are not retried). Default 2.
   */
  structuredAttempts: z.number().int().min(1).default(2),
  /**
   * How messages become tokens: `chatml`; `model` (the GGUF's own template through
   * node-llama-cpp's chat wrappers); `auto` (default): ChatML when the GGUF's template is
   * ChatML or absent, else the model's.
   */
  chatTemplate: z.enum(['auto', 'chatml', 'model']).default('auto'),
  /** Identifies the model in logs. Default `<name>@llama.cpp`. */
  id: z.string().min(1).optional(),
  /**
   * LoRA adapter GGUFs applied to the model (llama.cpp adapters, scale 1), e.g. what the
   * DreamGym trainer exports after an update of an LLM policy trained with LoRA.
   */
  loraAdapters: z.array(z.string().min(1)).optional(),
});
/** Input options of `LlamaChatModel.load`. */
export type LlamaChatModelOptions = z.input<typeof LlamaChatModelOptionsSchema>;
/** The options with their defaults filled in. */
export type ResolvedLlamaChatModelOptions = z.output<typeof LlamaChatModelOptionsSchema>;

/** Sampling settings of one request; absent fields take the model's defaults. */
export interface SamplingOptions {
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
}
