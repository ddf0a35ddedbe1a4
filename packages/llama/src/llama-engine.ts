/**
 * `LlamaEngine`: a GGUF loaded by llama.cpp with its context, and what chat, scoring and raw
 * completion share on it: the context's sequences (one per request; others queue), the chat
 * template, the JSON grammars, the counters, and the lifetime (cancellation and disposal).
 */
import { ConfigError, ModelError, ModelOutputError } from '@dreamgym/core';
import type { ChatModelStats } from '@dreamgym/core/models';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';
import { ChatTemplate } from './chat-templates.js';
import { JsonGrammars } from './json-grammars.js';
import { sharedLlama } from './llama-binding.js';
import {
  type LlamaChatModelOptions,
  LlamaChatModelOptionsSchema,
  type ResolvedLlamaChatModelOptions,
} from './llama-chat-model-options.js';
import { resolveModelPath } from './model-files.js';
import { PromptLogprobCache } from './prompt-logprob-cache.js';
import { SequencePool } from './sequence-pool.js';

/** Counters beyond {@link ChatModelStats}. */
export interface LlamaChatModelStats extends ChatModelStats {
  /** Prompt tokens served from the KV cache instead of being evaluated. */
  cachedPromptTokens: number;
  /** Continuations scored. */
  scoredContinuations: number;
  /** Structured answers cut off by the token limit. */
  truncatedStructured: number;
}

/** Requests being evaluated and waiting, against the concurrency limit. */
export interface LlamaQueueState {
  busy: number;
  queued: number;
  concurrency: number;
}

/**
 * Loads a model (`local`, a known name, or a GGUF path) and creates its context. Throws
 * `ModelFileError` when the file is missing, `ConfigError` for invalid options, and
 * `ModelError` when llama.cpp cannot load it.
 */
export async function openLlamaEngine(options: LlamaChatModelOptions): Promise<LlamaEngine> {
  const parsed = LlamaChatModelOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new ConfigError(
      `Invalid LlamaChatModel options (field \`${field}\`): ${issue.message}.`,
      {
        field,
      },
    );
  }
  const resolved = parsed.data;
  const file = resolveModelPath(resolved.model, {
    ...(resolved.modelDirectory ? { modelDirectory: resolved.modelDirectory } : {}),
  });
  let llama: Llama;
  let model: LlamaModel;
  let context: LlamaContext;
  try {
    llama = await sharedLlama();
    model = await llama.loadModel({ modelPath: file.path });
  } catch (error) {
    throw new ModelError(`llama.cpp cannot load ${file.path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  try {
    context = await model.createContext({
      contextSize: resolved.contextSize,
      sequences: resolved.concurrency,
      threads: resolved.threads,
      batchSize: resolved.batchSize,
      ...(resolved.loraAdapters?.length
        ? { lora: { adapters: resolved.loraAdapters.map((filePath) => ({ filePath })) } }
        : {}),
    });
  } catch (error) {
    await model.dispose();
    throw new ModelError(
      `Cannot create a ${resolved.contextSize}-token context with ${resolved.concurrency} sequences for ${file.path}: ${(error as Error).message}. Lower contextSize or concurrency.`,
      { cause: error },
    );
  }
  const sequences = Array.from({ length: resolved.concurrency }, () => context.getSequence());
  return new LlamaEngine({
    options: resolved,
    name: file.name,
    path: file.path,
    llama,
    model,
    context,
    sequences,
  });
}

/** A loaded model and its context; see the file's comment. */
export class LlamaEngine {
  readonly id: string;
  /** The model's name (`smollm2-135m-instruct`, or the GGUF's file name). */
  readonly name: string;
  /** Path of the GGUF file. */
  readonly path: string;
  /** Tokens one request may hold. */
  readonly contextSize: number;
  readonly options: ResolvedLlamaChatModelOptions;
  /** Tokens in the vocabulary (ids outside it abort llama.cpp: check before evaluating). */
  readonly vocabularySize: number;
  readonly model: LlamaModel;
  readonly pool: SequencePool;
  readonly template: ChatTemplate;
  readonly grammars: JsonGrammars;
  /** Log-probabilities of the prompts raw completion forced last (`echo`). */
  readonly promptLogprobs = new PromptLogprobCache();
  /** Raw counters; {@link LlamaEngine.stats} reports them. */
  readonly counters = {
    promptTokens: 0,
    completionTokens: 0,
    requests: 0,
    retries: 0,
    failures: 0,
    attempts: 0,
    cachedPromptTokens: 0,
    scoredContinuations: 0,
    truncatedStructured: 0,
  };
  private readonly context: LlamaContext;
  private readonly lifetime = new AbortController();
  private disposing: Promise<void> | undefined;

  constructor(parts: {
    options: ResolvedLlamaChatModelOptions;
    name: string;
    path: string;
    llama: Llama;
    model: LlamaModel;
    context: LlamaContext;
    sequences: LlamaContextSequence[];
  }) {
    this.options = parts.options;
    const tokens = parts.model.fileInfo.metadata?.tokenizer?.ggml?.tokens;
    this.vocabularySize = Array.isArray(tokens) ? tokens.length : (parts.model.tokens.eos ?? 0);
    this.name = parts.name;
    this.path = parts.path;
    this.model = parts.model;
    this.context = parts.context;
    this.contextSize = parts.context.contextSize;
    this.pool = new SequencePool(parts.sequences);
    this.id = parts.options.id ?? `${parts.name}@llama.cpp`;
    this.template = new ChatTemplate(parts.model, parts.options.chatTemplate, this.id);
    this.grammars = new JsonGrammars(parts.llama);
  }

  /** Requests being evaluated now and waiting for a sequence. */
  queueState(): LlamaQueueState {
    return {
      busy: this.pool.busy,
      queued: this.pool.queued,
      concurrency: this.options.concurrency,
    };
  }

  stats(): LlamaChatModelStats {
    const { promptTokens, completionTokens } = this.counters;
    return {
      promptTokens,
      completionTokens,
      totalTokens: promptTokens + completionTokens,
      requests: this.counters.requests,
      retries: this.counters.retries,
      failures: this.counters.failures,
      attempts: this.counters.attempts,
      formatFallbacks: 0,
      cachedPromptTokens: this.counters.cachedPromptTokens,
      scoredContinuations: this.counters.scoredContinuations,
      truncatedStructured: this.counters.truncatedStructured,
    };
  }

  /** Whether {@link dispose} was called. */
  get disposed(): boolean {
    return this.disposing !== undefined;
  }

  /** Throws `ModelError` once disposed. */
  ensureOpen(): void {
    if (this.disposing) throw new ModelError(`${this.id} was disposed.`);
  }

  /** A request's signal joined with disposal. */
  signalOf(signal: AbortSignal | undefined): AbortSignal {
    return signal ? AbortSignal.any([signal, this.lifetime.signal]) : this.lifetime.signal;
  }

  /** A request's abort reason as it is; disposal as a `ModelError`; anything else from llama.cpp as a `ModelError`. */
  wrapError(error: unknown, signal: AbortSignal | undefined): unknown {
    if (signal?.aborted && error === signal.reason) return error;
    if (this.lifetime.signal.aborted && error === this.lifetime.signal.reason) return error;
    if (
      error instanceof Error &&
      (ModelError.isInstance(error) ||
        ModelOutputError.isInstance(error) ||
        ConfigError.isInstance(error))
    ) {
      return error;
    }
    return new ModelError(`${this.id}: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
    });
  }

  /** Throws `ModelError` when a prompt (and the least of its answer) does not fit the context. */
  checkRoom(promptLength: number, answerTokens: number): void {
    if (promptLength + answerTokens > this.contextSize) {
      throw new ModelError(
        `${this.id}: the prompt has ${promptLength} tokens${answerTokens > 0 ? ` and the answer needs at least ${answerTokens}` : ''}; the context holds ${this.contextSize}. Shorten the prompt or load the model with a larger contextSize.`,
      );
    }
  }

  /**
   * Aborts requests in flight, waits for them to end, and frees the context and the model.
   * Later calls throw `ModelError`. Safe to call twice.
   */
  dispose(): Promise<void> {
    this.disposing ??= (async () => {
      this.lifetime.abort(new ModelError(`${this.id} was disposed.`));
      await this.pool.drain();
      await this.context.dispose();
      await this.model.dispose();
    })();
    return this.disposing;
  }
}
