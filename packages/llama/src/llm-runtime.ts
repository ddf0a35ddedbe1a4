/**
 * `LlmRuntime`: what an {@link LlmPolicy} needs from the engine that runs its LLM for acting.
 * Generation with the sampled tokens' ids and log-probabilities, teacher-forced scoring of
 * given continuations, the tokenizer (the trainer backend works on these token ids, so both
 * sides see the same tokens), and a way to swap in the weights a gradient step produced.
 *
 * `LlamaPolicyRuntime` implements it on llama.cpp in process; `OpenAICompatibleRuntime` on
 * an inference server (vLLM, SGLang, `dreamgym model serve`) that returns token ids and
 * log-probabilities and loads LoRA adapters by name.
 */
import type { ChatMessage } from '@dreamgym/core/models';

/** One generated token. */
export interface RuntimeToken {
  id: number;
  /** log-probability under the distribution it was sampled from (temperature applied). */
  logprob: number;
}

/** What {@link LlmRuntime.generate} returns. */
export interface RuntimeGeneration {
  text: string;
  /** The generated tokens (without an end-of-turn token the model stopped on). */
  tokens: RuntimeToken[];
  /** `length` when `maxTokens` cut the answer. */
  finishReason: 'stop' | 'length';
  /** The prompt's token ids as the engine evaluated them, where it reports them. */
  promptTokens?: number[];
}

/** Weights a trainer exported for generation. */
export interface ExportedWeights {
  /**
   * `lora`: an adapter GGUF over the base model; `model`: a whole model GGUF; `peft`: a PEFT
   * adapter folder (`adapter_config.json`, `adapter_model.safetensors`, and `adapter.gguf`
   * for llama.cpp), what vLLM and SGLang load.
   */
  kind: 'lora' | 'model' | 'peft';
  path: string;
}

/** The acting side of an LLM policy. */
export interface LlmRuntime {
  readonly id: string;
  /** Path of the base model's GGUF: the weights the trainer backend starts from. */
  readonly modelPath: string;
  /** The text that ends an assistant turn in the chat template (`<|im_end|>` in ChatML). */
  readonly endOfTurn: string;
  /** What {@link LlmRuntime.loadWeights} takes: GGUF files (`lora`, `model`) or PEFT folders. */
  readonly weightFormat: 'gguf' | 'peft';
  /** Token ids of a conversation, up to where the assistant's answer starts. */
  promptTokens(messages: readonly ChatMessage[]): Promise<number[]>;
  /** Token ids of a continuation text (special tokens such as `<|im_end|>` parsed). */
  tokenize(text: string): Promise<number[]>;
  /**
   * Tokens of a plain text (an observation) in the model's tokenizer, counted in process.
   * Absent where tokenising takes a request (an inference server): callers then estimate.
   */
  countTokens?(text: string): number;
  /** Samples an answer to `messages` (temperature 0: greedy), with per-token log-probabilities. */
  generate(request: {
    messages: readonly ChatMessage[];
    maxTokens: number;
    temperature: number;
    seed?: number;
    stop?: readonly string[];
    signal?: AbortSignal;
  }): Promise<RuntimeGeneration>;
  /**
   * Per-token log-probabilities of each continuation after `messages`, by teacher forcing
   * under the model's raw distribution; token order as {@link LlmRuntime.tokenize} gives.
   */
  score(request: {
    messages: readonly ChatMessage[];
    continuations: readonly string[];
    signal?: AbortSignal;
  }): Promise<number[][]>;
  /** Makes later generation use `weights` (waits for requests in flight first). */
  loadWeights(weights: ExportedWeights): Promise<void>;
  /** Frees the model. Idempotent. */
  close(): Promise<void>;
}
