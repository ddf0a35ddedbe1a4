/**
 * `LlamaChatModel`: a GGUF model run in process by llama.cpp (node-llama-cpp), behind core's
 * `ChatModel` and `ContinuationScorer` interfaces. Chat template (ChatML, or the model's own),
 * JSON-schema structured output through grammars, per-token log-probabilities, scoring of
 * given continuations by teacher forcing, KV-cache reuse across the turns of an episode, a
 * concurrency limit (one context sequence per request), cancellation and disposal.
 */
import {
  type ChatMessage,
  type ChatModel,
  type ChatModelStats,
  type ChatRequest,
  type ChatResponse,
  ConfigError,
  type ContinuationScore,
  type ContinuationScorer,
  formatChatMLPrompt,
  ModelError,
  ModelOutputError,
  type ScoreRequest,
  type ScoreResponse,
  type StructuredChatRequest,
  type StructuredChatResponse,
  type TokenLogprob,
  type TokenUsage,
  toResponseJsonSchema,
} from '@dreamgym/core';
import { extractJson } from '@dreamgym/core/internal';
import type {
  ChatHistoryItem,
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaGrammar,
  LlamaModel,
  Token,
} from 'node-llama-cpp';
import { z } from 'zod';
import { toGrammarSchema, UnsupportedSchemaError } from './grammar-schema.js';
import { llamaModule, sharedLlama } from './llama-binding.js';
import { resolveModelPath } from './model-files.js';
import { alignSequence, SequencePool } from './sequence-pool.js';
import { JsonEndDetector, TokenTextDecoder } from './token-text.js';

/** The largest decode whose results do not depend on batching (see `batchSize`). */
const REPRODUCIBLE_BATCH_TOKENS = 63;

/** Options of {@link LlamaChatModel.load}. */
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
/** Input options of {@link LlamaChatModel.load}. */
export type LlamaChatModelOptions = z.input<typeof LlamaChatModelOptionsSchema>;
type ResolvedOptions = z.output<typeof LlamaChatModelOptionsSchema>;

/** Sampling settings of one request; absent fields take the model's defaults. */
export interface SamplingOptions {
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
}

/** One generated (or echoed) token. */
export interface GeneratedToken {
  /** The token id. */
  id: number;
  /** Its text; the texts of a completion's tokens spell the completion. */
  text: string;
  /**
   * Its log-probability under the distribution it was sampled from: the model's at the
   * request's temperature, after top-k/top-p/min-p and the grammar where they apply. At
   * temperature 1 with no truncation and no grammar (or greedy) it equals teacher-forced
   * scoring. Undefined unless asked for; `null` for an echoed first prompt token.
   */
  logprob?: number | null;
  /** The most likely tokens at this position, when asked for. */
  top?: TokenLogprob[];
}

/** A raw-prompt completion request (`/v1/completions`). */
export interface PromptCompletionRequest extends SamplingOptions {
  /** The raw prompt; special tokens written in it (`<|im_start|>`) are parsed as such. */
  prompt: string;
  /** Upper bound on generated tokens; 0 only evaluates (with `echo`). Default the model's. */
  maxTokens?: number;
  stop?: readonly string[];
  /** Per-token log-probabilities: the sampled token's, plus this many alternatives (0-20). */
  logprobs?: number;
  /** Return the prompt's tokens too, with their teacher-forced log-probabilities. */
  echo?: boolean;
  signal?: AbortSignal;
}

/** The answer to a {@link PromptCompletionRequest}. */
export interface PromptCompletion {
  /** The generated text (without the prompt). */
  text: string;
  /** Generated tokens. */
  tokens: GeneratedToken[];
  /** The prompt's tokens, with `echo`. */
  promptTokens?: GeneratedToken[];
  finishReason: 'stop' | 'length';
  usage: TokenUsage;
}

/** A chat request with the options the OpenAI-compatible server passes through. */
export interface LlamaChatRequest
  extends ChatRequest,
    Omit<SamplingOptions, 'temperature' | 'seed'> {
  /** Alternatives per generated token (0-20); implies `logprobs`. */
  topLogprobs?: number;
  /** Constrain the answer to this JSON Schema by a grammar. */
  jsonSchema?: Record<string, unknown>;
  /** Constrain the answer to a JSON object by a grammar. */
  jsonObject?: boolean;
}

/** The answer to a {@link LlamaChatRequest}, with its tokens. */
export interface LlamaChatResponse extends ChatResponse {
  tokens: GeneratedToken[];
  /** Prompt tokens reused from the KV cache (not evaluated again). */
  cachedPromptTokens: number;
}

/** Counters beyond {@link ChatModelStats}. */
export interface LlamaChatModelStats extends ChatModelStats {
  /** Prompt tokens served from the KV cache instead of being evaluated. */
  cachedPromptTokens: number;
  /** Continuations scored. */
  scoredContinuations: number;
  /** Structured answers cut off by the token limit. */
  truncatedStructured: number;
}

interface Generation {
  text: string;
  tokens: GeneratedToken[];
  finishReason: 'stop' | 'length';
  promptTokens: number;
  cachedPromptTokens: number;
}

interface GenerateSettings {
  sampling: Required<Omit<SamplingOptions, 'seed'>> & { seed: number };
  maxTokens: number;
  stop: readonly string[];
  logprobs: boolean;
  topLogprobs: number;
  grammar?: LlamaGrammar;
  signal?: AbortSignal;
}

/** The sampler settings under which logits are the model's own distribution. */
const RAW_DISTRIBUTION = { temperature: 1, topK: 0, topP: 1, minP: 0 } as const;
/** OpenAI's floor for a log-probability of 0 probability. */
const LOGPROB_FLOOR = -9999;

function safeLog(probability: number): number {
  return probability > 0 ? Math.max(LOGPROB_FLOOR, Math.log(probability)) : LOGPROB_FLOOR;
}

function jsonInstruction(schema: Record<string, unknown>): string {
  return `Answer with a single JSON object and nothing else. It must conform to this JSON Schema:\n${JSON.stringify(schema)}`;
}

/** The GGUF's default system prompt, when its ChatML template adds one to conversations without. */
export function defaultSystemPromptOf(template: string | undefined): string | undefined {
  const match = template?.match(/<\|im_start\|>system\s*\n([^<'"]*?)<\|im_end\|>/);
  return match?.[1];
}

/**
 * A GGUF model in process, as a `ChatModel` and a `ContinuationScorer`.
 *
 * @example
 * ```ts
 * const model = await LlamaChatModel.load({ model: 'local' });
 * const { text } = await model.complete({ messages: [{ role: 'user', content: 'Say hi.' }], maxTokens: 16 });
 * const { value } = await model.completeStructured({
 *   messages: [{ role: 'user', content: 'Name a fruit.' }],
 *   schema: z.object({ fruit: z.string().max(20) }),
 *   schemaName: 'fruit',
 * });
 * await model.dispose();
 * ```
 */
export class LlamaChatModel implements ChatModel, ContinuationScorer {
  readonly id: string;
  /** The model's name (`smollm2-135m-instruct`, or the GGUF's file name). */
  readonly name: string;
  /** Path of the GGUF file. */
  readonly path: string;
  /** Tokens one request may hold. */
  readonly contextSize: number;
  /** The chat template in use. */
  readonly chatTemplate: 'chatml' | 'model';
  /** System prompt added to conversations without one (the GGUF template's), if any. */
  readonly defaultSystemPrompt: string | undefined;
  private readonly options: ResolvedOptions;
  private readonly llama: Llama;
  private readonly model: LlamaModel;
  private readonly context: LlamaContext;
  private readonly pool: SequencePool;
  private readonly grammars = new Map<
    string,
    Promise<{ grammar: LlamaGrammar; mode: 'json_schema' | 'json_object' }>
  >();
  private readonly lifetime = new AbortController();
  private disposing: Promise<void> | undefined;
  private readonly counters = {
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

  private constructor(parts: {
    options: ResolvedOptions;
    name: string;
    path: string;
    llama: Llama;
    model: LlamaModel;
    context: LlamaContext;
    sequences: LlamaContextSequence[];
  }) {
    this.options = parts.options;
    this.name = parts.name;
    this.path = parts.path;
    this.llama = parts.llama;
    this.model = parts.model;
    this.context = parts.context;
    this.contextSize = parts.context.contextSize;
    this.pool = new SequencePool(parts.sequences);
    this.id = parts.options.id ?? `${parts.name}@llama.cpp`;
    const template = parts.model.fileInfo.metadata.tokenizer?.chat_template;
    const chatml = template === undefined || template.includes('<|im_start|>');
    this.chatTemplate =
      parts.options.chatTemplate === 'auto'
        ? chatml
          ? 'chatml'
          : 'model'
        : parts.options.chatTemplate;
    this.defaultSystemPrompt = defaultSystemPromptOf(template);
  }

  /**
   * Loads a model (`local`, a known name, or a GGUF path) and creates its context. Throws
   * `ModelFileError` when the file is missing, `ConfigError` for invalid options, and
   * `ModelError` when llama.cpp cannot load it.
   */
  static async load(options: LlamaChatModelOptions = {}): Promise<LlamaChatModel> {
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
    return new LlamaChatModel({
      options: resolved,
      name: file.name,
      path: file.path,
      llama,
      model,
      context,
      sequences,
    });
  }

  /** Requests being evaluated now and waiting for a sequence. */
  load(): { busy: number; queued: number; concurrency: number } {
    return {
      busy: this.pool.busy,
      queued: this.pool.queued,
      concurrency: this.options.concurrency,
    };
  }

  /** Whether {@link dispose} was called. */
  get disposed(): boolean {
    return this.disposing !== undefined;
  }

  /** The model's tokens for `text` (special tokens such as `<|im_end|>` parsed when `special`). */
  tokenize(text: string, special = false): number[] {
    return this.model.tokenize(text, special);
  }

  /** Tokens of `text`: an exact `TokenCounter` for prompt budgets. */
  readonly countTokens = (text: string): number => this.model.tokenize(text, false).length;

  /** The text of `tokens`; special tokens are written out when `special`. */
  detokenize(tokens: readonly number[], special = false): string {
    return this.model.detokenize(tokens as Token[], special);
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

  /** The prompt tokens of a conversation, ending where the assistant's answer starts. */
  promptTokens(messages: readonly ChatMessage[]): Promise<Token[]> | Token[] {
    if (this.chatTemplate === 'chatml') {
      const text = formatChatMLPrompt(messages, {
        ...(this.defaultSystemPrompt === undefined
          ? {}
          : { defaultSystemPrompt: this.defaultSystemPrompt }),
      });
      return this.model.tokenize(text, true);
    }
    return this.wrapperTokens(messages);
  }

  private async wrapperTokens(messages: readonly ChatMessage[]): Promise<Token[]> {
    const { JinjaTemplateChatWrapper, resolveChatWrapper } = await llamaModule();
    const template = this.model.fileInfo.metadata.tokenizer?.chat_template;
    // The GGUF's own Jinja template, rendered as the model's authors wrote it; a wrapper
    // node-llama-cpp picks by the model's family where the file has none.
    const wrapper =
      template !== undefined
        ? new JinjaTemplateChatWrapper({ template, tokenizer: this.model.tokenizer })
        : resolveChatWrapper(this.model);
    if (!wrapper) throw new ModelError(`${this.id}: no chat template for this model.`);
    const history: ChatHistoryItem[] = messages.map((message) =>
      message.role === 'assistant'
        ? { type: 'model', response: [message.content] }
        : { type: message.role, text: message.content },
    );
    history.push({ type: 'model', response: [] });
    return wrapper
      .generateContextState({ chatHistory: history })
      .contextText.tokenize(this.model.tokenizer);
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const { tokens: _tokens, cachedPromptTokens: _cached, ...response } = await this.chat(request);
    return response;
  }

  /**
   * A chat completion with the runtime's extras: per-token details, top log-probabilities,
   * and grammar-constrained JSON (`jsonSchema`, `jsonObject`).
   */
  async chat(request: LlamaChatRequest): Promise<LlamaChatResponse> {
    this.ensureOpen();
    try {
      let messages = request.messages;
      let grammar: LlamaGrammar | undefined;
      if (request.jsonSchema || request.jsonObject) {
        const compiled = await this.grammarFor(request.jsonSchema);
        grammar = compiled.grammar;
        if (compiled.mode === 'json_object' && request.jsonSchema) {
          messages = withSystemInstruction(messages, jsonInstruction(request.jsonSchema));
        }
      }
      const generation = await this.generate(await this.promptTokens(messages), {
        ...this.settings(request),
        ...(grammar ? { grammar } : {}),
      });
      this.counters.requests += 1;
      return this.toChatResponse(
        generation,
        request.logprobs === true || (request.topLogprobs ?? 0) > 0,
      );
    } catch (error) {
      this.counters.failures += 1;
      throw this.wrapError(error, request.signal);
    }
  }

  async completeStructured<S extends z.ZodType>(
    request: StructuredChatRequest<S>,
  ): Promise<StructuredChatResponse<z.output<S>>> {
    this.ensureOpen();
    const { schema: jsonSchema } = toResponseJsonSchema(request.schema);
    let compiled: { grammar: LlamaGrammar; mode: 'json_schema' | 'json_object' };
    try {
      compiled = await this.grammarFor(jsonSchema);
    } catch (error) {
      this.counters.failures += 1;
      throw this.wrapError(error, request.signal);
    }
    const messages =
      compiled.mode === 'json_object'
        ? withSystemInstruction(request.messages, jsonInstruction(jsonSchema))
        : request.messages;
    const temperature = request.temperature ?? this.options.temperature;
    const attempts = temperature === 0 ? 1 : this.options.structuredAttempts;
    const baseSeed = request.seed ?? this.options.seed ?? randomSeed();
    let problem = '';
    let lastText = '';
    try {
      const prompt = await this.promptTokens(messages);
      for (let attempt = 0; attempt < attempts; attempt += 1) {
        if (attempt > 0) this.counters.retries += 1;
        const generation = await this.generate(prompt, {
          ...this.settings({ ...request, seed: (baseSeed + attempt) >>> 0 }),
          grammar: compiled.grammar,
        });
        const response = this.toChatResponse(generation, request.logprobs === true);
        lastText = response.text;
        if (generation.finishReason === 'length') {
          this.counters.truncatedStructured += 1;
          problem = `the answer was cut off by the token limit (maxTokens ${this.settings(request).maxTokens}); raise maxTokens or bound the schema's strings with maxLength`;
          continue;
        }
        const extracted = extractJson(response.text);
        const parsed = extracted ? request.schema.safeParse(extracted.value) : undefined;
        if (parsed?.success) {
          this.counters.requests += 1;
          return { ...response, value: parsed.data, mode: compiled.mode };
        }
        problem = parsed
          ? `the answer does not match the schema: ${z.prettifyError(parsed.error)}`
          : 'the answer holds no JSON';
      }
    } catch (error) {
      this.counters.failures += 1;
      throw this.wrapError(error, request.signal);
    }
    this.counters.failures += 1;
    throw new ModelOutputError(
      `${this.id}: no valid answer for schema "${request.schemaName}" in ${attempts} attempt${attempts === 1 ? '' : 's'}: ${problem}. Answer: "${preview(lastText)}"`,
      { output: lastText },
    );
  }

  /**
   * Completes a raw prompt (no chat template), optionally echoing the prompt's tokens with
   * their teacher-forced log-probabilities: what `/v1/completions` serves.
   */
  async completePrompt(request: PromptCompletionRequest): Promise<PromptCompletion> {
    this.ensureOpen();
    try {
      const tokens = this.model.tokenize(request.prompt, true);
      if (tokens.length === 0) throw new ModelError(`${this.id}: the prompt is empty.`);
      const topLogprobs = request.logprobs ?? 0;
      let promptTokens: GeneratedToken[] | undefined;
      let evaluated = 0;
      if (request.echo) {
        const forced = await this.teacherForce(tokens, 1, topLogprobs, request.signal);
        const decoder = new TokenTextDecoder(this.model, true);
        promptTokens = tokens.map((id, index) => ({
          id,
          text: decoder.push(id),
          ...(request.logprobs === undefined
            ? {}
            : index === 0
              ? { logprob: null }
              : {
                  logprob: forced[index - 1]!.logprob,
                  ...(topLogprobs > 0 ? { top: forced[index - 1]!.top } : {}),
                }),
        }));
        evaluated = tokens.length;
      }
      const maxTokens = request.maxTokens ?? this.options.maxTokens;
      let generation: Generation = {
        text: '',
        tokens: [],
        finishReason: 'length',
        promptTokens: tokens.length,
        cachedPromptTokens: 0,
      };
      if (maxTokens > 0) {
        generation = await this.generate(tokens, {
          ...this.settings({
            ...request,
            maxTokens,
            logprobs: request.logprobs !== undefined,
            topLogprobs,
          }),
        });
      } else {
        this.counters.promptTokens += request.echo ? 0 : tokens.length;
      }
      if (request.echo) this.counters.promptTokens += evaluated;
      this.counters.requests += 1;
      return {
        text: generation.text,
        tokens: generation.tokens,
        ...(promptTokens ? { promptTokens } : {}),
        finishReason: generation.finishReason,
        usage: {
          promptTokens: tokens.length,
          completionTokens: generation.tokens.length,
          totalTokens: tokens.length + generation.tokens.length,
        },
      };
    } catch (error) {
      this.counters.failures += 1;
      throw this.wrapError(error, request.signal);
    }
  }

  /**
   * `log P(continuation | prompt)` of each continuation by teacher forcing, on one sequence:
   * the prompt is evaluated once (or taken from the KV cache), each continuation after it.
   */
  async scoreContinuations(request: ScoreRequest): Promise<ScoreResponse> {
    this.ensureOpen();
    if ((request.prompt === undefined) === (request.messages === undefined)) {
      throw new ConfigError('scoreContinuations needs exactly one of `prompt` and `messages`.', {
        field: 'prompt',
      });
    }
    try {
      const prompt =
        request.prompt !== undefined
          ? this.model.tokenize(request.prompt, true)
          : await this.promptTokens(request.messages!);
      if (prompt.length === 0) throw new ModelError(`${this.id}: the prompt is empty.`);
      const scores: ContinuationScore[] = [];
      let evaluated = 0;
      const lease = await this.pool.acquire(prompt, this.signalOf(request.signal));
      try {
        for (const continuation of request.continuations) {
          const tokens = this.model.tokenize(continuation, true);
          if (tokens.length === 0) {
            scores.push({ text: continuation, logprob: 0, tokens: [] });
            continue;
          }
          const all = [...prompt, ...tokens];
          this.checkRoom(all.length, 0);
          const forced = await this.forceOn(lease.sequence, all, prompt.length, 0, request.signal);
          evaluated += forced.evaluated;
          const decoder = new TokenTextDecoder(this.model);
          const pieces = tokens.map((id) => decoder.push(id));
          scores.push({
            text: continuation,
            logprob: forced.logprobs.reduce((sum, item) => sum + item.logprob, 0),
            tokens: forced.logprobs.map((item, index) => ({
              token: pieces[index]!,
              logprob: item.logprob,
            })),
          });
        }
      } finally {
        lease.release();
      }
      this.counters.scoredContinuations += scores.length;
      this.counters.requests += 1;
      this.counters.promptTokens += evaluated;
      return {
        scores,
        usage: { promptTokens: evaluated, completionTokens: 0, totalTokens: evaluated },
      };
    } catch (error) {
      this.counters.failures += 1;
      throw this.wrapError(error, request.signal);
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

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }

  private ensureOpen(): void {
    if (this.disposing) throw new ModelError(`${this.id} was disposed.`);
  }

  private signalOf(signal: AbortSignal | undefined): AbortSignal {
    return signal ? AbortSignal.any([signal, this.lifetime.signal]) : this.lifetime.signal;
  }

  /** A request's abort reason as it is; disposal as a `ModelError`; anything else from llama.cpp as a `ModelError`. */
  private wrapError(error: unknown, signal: AbortSignal | undefined): unknown {
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

  private settings(
    request: SamplingOptions & {
      maxTokens?: number;
      stop?: readonly string[];
      logprobs?: boolean;
      topLogprobs?: number;
      signal?: AbortSignal;
    },
  ): GenerateSettings {
    const topLogprobs = request.topLogprobs ?? 0;
    if (!Number.isInteger(topLogprobs) || topLogprobs < 0 || topLogprobs > 20) {
      throw new ConfigError(`topLogprobs must be an integer from 0 to 20, got ${topLogprobs}.`, {
        field: 'topLogprobs',
      });
    }
    return {
      sampling: {
        temperature: request.temperature ?? this.options.temperature,
        topK: request.topK ?? this.options.topK,
        topP: request.topP ?? this.options.topP,
        minP: request.minP ?? this.options.minP,
        seed: (request.seed ?? this.options.seed ?? randomSeed()) >>> 0,
      },
      maxTokens: request.maxTokens ?? this.options.maxTokens,
      stop: request.stop ?? [],
      logprobs: request.logprobs === true || topLogprobs > 0,
      topLogprobs,
      signal: this.signalOf(request.signal),
    };
  }

  private checkRoom(promptLength: number, answerTokens: number): void {
    if (promptLength + answerTokens > this.contextSize) {
      throw new ModelError(
        `${this.id}: the prompt has ${promptLength} tokens${answerTokens > 0 ? ` and the answer needs at least ${answerTokens}` : ''}; the context holds ${this.contextSize}. Shorten the prompt or load the model with a larger contextSize.`,
      );
    }
  }

  private async grammarFor(
    schema: Record<string, unknown> | undefined,
  ): Promise<{ grammar: LlamaGrammar; mode: 'json_schema' | 'json_object' }> {
    const key = schema === undefined ? '' : JSON.stringify(schema);
    let compiled = this.grammars.get(key);
    if (!compiled) {
      compiled = (async () => {
        if (schema !== undefined) {
          try {
            const grammarSchema = toGrammarSchema(schema) as never;
            return {
              grammar: await this.llama.createGrammarForJsonSchema(grammarSchema),
              mode: 'json_schema' as const,
            };
          } catch (error) {
            if (!(error instanceof UnsupportedSchemaError)) throw error;
          }
        }
        return {
          grammar: await this.llama.createGrammarForJsonSchema({
            type: 'object',
            additionalProperties: true,
          } as never),
          mode: 'json_object' as const,
        };
      })();
      compiled.catch(() => this.grammars.delete(key));
      this.grammars.set(key, compiled);
    }
    return compiled;
  }

  private toChatResponse(generation: Generation, withLogprobs: boolean): LlamaChatResponse {
    return {
      text: generation.text,
      ...(withLogprobs
        ? {
            logprobs: generation.tokens.map((token) => ({
              token: token.text,
              logprob: token.logprob ?? LOGPROB_FLOOR,
            })),
          }
        : {}),
      finishReason: generation.finishReason,
      usage: {
        promptTokens: generation.promptTokens,
        completionTokens: generation.tokens.length,
        totalTokens: generation.promptTokens + generation.tokens.length,
      },
      tokens: generation.tokens,
      cachedPromptTokens: generation.cachedPromptTokens,
    };
  }

  /** Samples an answer to `prompt` on the best free sequence. */
  private async generate(
    prompt: readonly Token[],
    settings: GenerateSettings,
  ): Promise<Generation> {
    this.checkRoom(prompt.length, 1);
    const maxTokens = Math.min(settings.maxTokens, this.contextSize - prompt.length);
    const signal = settings.signal;
    const lease = await this.pool.acquire(prompt, signal);
    this.counters.attempts += 1;
    try {
      const { LlamaGrammarEvaluationState } = await llamaModule();
      const start = await alignSequence(lease.sequence, prompt, prompt.length - 1);
      const grammarEvaluationState = settings.grammar
        ? new LlamaGrammarEvaluationState({ model: this.model, grammar: settings.grammar })
        : undefined;
      const iterator = lease.sequence.evaluateWithMetadata(
        prompt.slice(start) as Token[],
        { confidence: settings.logprobs, probabilities: settings.topLogprobs > 0 },
        {
          ...settings.sampling,
          ...(grammarEvaluationState ? { grammarEvaluationState } : {}),
        },
      );
      const decoder = new TokenTextDecoder(this.model);
      const json = settings.grammar ? new JsonEndDetector() : undefined;
      const tokens: GeneratedToken[] = [];
      let text = '';
      let finishReason: 'stop' | 'length' | undefined;
      for await (const output of iterator) {
        signal?.throwIfAborted();
        const piece = decoder.push(output.token);
        const token: GeneratedToken = { id: output.token, text: piece };
        if (settings.logprobs) {
          const confidence = (output as { confidence?: number }).confidence;
          token.logprob = confidence === undefined ? LOGPROB_FLOOR : safeLog(confidence);
        }
        if (settings.topLogprobs > 0) {
          const probabilities = (output as { probabilities?: Map<Token, number> }).probabilities;
          token.top = [...(probabilities?.entries() ?? [])]
            .slice(0, settings.topLogprobs)
            .map(([id, probability]) => ({
              token: this.model.detokenize([id]),
              logprob: safeLog(probability),
            }));
        }
        tokens.push(token);
        const before = text.length;
        text += piece;
        if (json) {
          const end = json.feed(piece);
          if (end >= 0) {
            text = text.slice(0, end);
            token.text = piece.slice(0, Math.max(0, end - before));
            finishReason = 'stop';
            break;
          }
        }
        const cut = findStop(text, settings.stop, before);
        if (cut >= 0) {
          text = text.slice(0, cut);
          token.text = piece.slice(0, Math.max(0, cut - before));
          finishReason = 'stop';
          break;
        }
        if (tokens.length >= maxTokens) {
          finishReason = 'length';
          break;
        }
      }
      signal?.throwIfAborted();
      // The iterator ended by itself: the model wrote an end-of-generation token.
      finishReason ??= 'stop';
      this.counters.promptTokens += prompt.length;
      this.counters.completionTokens += tokens.length;
      this.counters.cachedPromptTokens += start;
      // Pieces of a cut or a multi-byte tail may still be pending: the text is authoritative.
      const spelled = tokens.map((token) => token.text).join('');
      if (spelled !== text && tokens.length > 0) {
        const last = tokens[tokens.length - 1]!;
        last.text += text.slice(spelled.length);
      }
      return { text, tokens, finishReason, promptTokens: prompt.length, cachedPromptTokens: start };
    } finally {
      lease.release();
    }
  }

  /** Teacher-forced log-probabilities of `tokens[from..]` on the best free sequence. */
  private async teacherForce(
    tokens: readonly Token[],
    from: number,
    top: number,
    signal: AbortSignal | undefined,
  ): Promise<Array<{ logprob: number; top?: TokenLogprob[] }>> {
    if (tokens.length <= from) return [];
    this.checkRoom(tokens.length, 0);
    const lease = await this.pool.acquire(tokens, this.signalOf(signal));
    try {
      return (await this.forceOn(lease.sequence, tokens, from, top, signal)).logprobs;
    } finally {
      lease.release();
    }
  }

  /**
   * Evaluates `tokens` on `sequence` (reusing its cached prefix up to `from - 1`) and reads,
   * for every position from `from` on, the log-probability of the token there given those
   * before it: the logit against the log-sum-exp of the model's raw distribution.
   */
  private async forceOn(
    sequence: LlamaContextSequence,
    tokens: readonly Token[],
    from: number,
    top: number,
    signal: AbortSignal | undefined,
  ): Promise<{ logprobs: Array<{ logprob: number; top?: TokenLogprob[] }>; evaluated: number }> {
    const start = await alignSequence(sequence, tokens, from - 1);
    const input = tokens.slice(start, tokens.length - 1).map((token, offset) => {
      const index = start + offset;
      if (index < from - 1) return token;
      return [
        token,
        {
          generateNext: {
            logits: { filter: { tokens: [tokens[index + 1]!], includeTop: Math.max(1, top) } },
            totalLogitWeight: true,
            options: RAW_DISTRIBUTION,
          },
        },
      ] as [Token, { generateNext: Record<string, unknown> }];
    });
    const results = await sequence.controlledEvaluate(
      input as Parameters<LlamaContextSequence['controlledEvaluate']>[0],
    );
    this.signalOf(signal).throwIfAborted();
    const logprobs: Array<{ logprob: number; top?: TokenLogprob[] }> = [];
    for (let index = from - 1; index < tokens.length - 1; index += 1) {
      const next = results[index - start]?.next as
        | { logits?: Map<Token, number>; totalLogitWeight?: number }
        | undefined;
      const logits = next?.logits;
      if (!logits || next?.totalLogitWeight === undefined) {
        throw new ModelError(`${this.id}: llama.cpp returned no logits for position ${index}.`);
      }
      let max = Number.NEGATIVE_INFINITY;
      for (const value of logits.values()) max = Math.max(max, value);
      const normaliser = max + Math.log(next.totalLogitWeight);
      const target = logits.get(tokens[index + 1]!) ?? Number.NEGATIVE_INFINITY;
      const entry: { logprob: number; top?: TokenLogprob[] } = {
        logprob: Math.max(LOGPROB_FLOOR, target - normaliser),
      };
      if (top > 0) {
        entry.top = [...logits.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, top)
          .map(([id, value]) => ({
            token: this.model.detokenize([id]),
            logprob: value - normaliser,
          }));
      }
      logprobs.push(entry);
    }
    return { logprobs, evaluated: tokens.length - 1 - start };
  }
}

/** Index where the earliest stop sequence starts, searching from near `from`; -1 if none. */
function findStop(text: string, stops: readonly string[], from: number): number {
  let cut = -1;
  for (const stop of stops) {
    if (stop === '') continue;
    const index = text.indexOf(stop, Math.max(0, from - stop.length + 1));
    if (index >= 0 && (cut < 0 || index < cut)) cut = index;
  }
  return cut;
}

function withSystemInstruction(
  messages: readonly ChatMessage[],
  instruction: string,
): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role === 'system')
    return [{ role: 'system', content: `${first.content}\n\n${instruction}` }, ...rest];
  return [{ role: 'system', content: instruction }, ...messages];
}

function randomSeed(): number {
  return Math.floor(Math.random() * 0x7fffffff);
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}...` : flat;
}
