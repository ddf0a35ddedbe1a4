/**
 * `LlamaChatModel`: a GGUF model run in process by llama.cpp (node-llama-cpp), behind core's
 * `ChatModel` and `ContinuationScorer` interfaces. Chat with per-token log-probabilities and
 * JSON-schema structured output (grammars, `json-grammars.ts`) here; the chat template in
 * `chat-templates.ts`, sampling in `token-generation.ts`, scoring of given continuations in
 * `continuation-scoring.ts`, raw completion in `prompt-completion.ts`, and what they share
 * (the context's sequences, KV-cache reuse, counters, cancellation, disposal) in
 * `llama-engine.ts`.
 */
import { ConfigError, ModelOutputError } from '@dreamgym/core';
import { extractJson } from '@dreamgym/core/internal';
import {
  type ChatMessage,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ContinuationScorer,
  type ScoreRequest,
  type ScoreResponse,
  type StructuredChatRequest,
  type StructuredChatResponse,
  toResponseJsonSchema,
} from '@dreamgym/core/models';
import type { LlamaGrammar, Token } from 'node-llama-cpp';
import { z } from 'zod';
import { scoreContinuations } from './continuation-scoring.js';
import { type JsonGrammar, jsonInstruction, withSystemInstruction } from './json-grammars.js';
import type { LlamaChatModelOptions, SamplingOptions } from './llama-chat-model-options.js';
import {
  type LlamaChatModelStats,
  type LlamaEngine,
  type LlamaQueueState,
  openLlamaEngine,
} from './llama-engine.js';
import {
  completePrompt,
  type PromptCompletion,
  type PromptCompletionRequest,
} from './prompt-completion.js';
import {
  type GeneratedToken,
  type Generation,
  generate,
  generationSettings,
  LOGPROB_FLOOR,
  randomSeed,
} from './token-generation.js';

// The tokens of a chat response are the generated tokens.
export type { GeneratedToken } from './token-generation.js';

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
  /** Constrain the answer to exactly one of these strings by a grammar. */
  choice?: readonly string[];
}

/** The answer to a {@link LlamaChatRequest}, with its tokens. */
export interface LlamaChatResponse extends ChatResponse {
  tokens: GeneratedToken[];
  /** Prompt tokens reused from the KV cache (not evaluated again). */
  cachedPromptTokens: number;
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

  private constructor(private readonly engine: LlamaEngine) {
    this.id = engine.id;
    this.name = engine.name;
    this.path = engine.path;
    this.contextSize = engine.contextSize;
    this.chatTemplate = engine.template.kind;
    this.defaultSystemPrompt = engine.template.defaultSystemPrompt;
  }

  /**
   * Loads a model (`local`, a known name, or a GGUF path) and creates its context. Throws
   * `ModelFileError` when the file is missing, `ConfigError` for invalid options, and
   * `ModelError` when llama.cpp cannot load it.
   */
  static async load(options: LlamaChatModelOptions = {}): Promise<LlamaChatModel> {
    return new LlamaChatModel(await openLlamaEngine(options));
  }

  /** Requests being evaluated now and waiting for a sequence, and the concurrency limit. */
  queueState(): LlamaQueueState {
    return this.engine.queueState();
  }

  /** Whether {@link dispose} was called. */
  get disposed(): boolean {
    return this.engine.disposed;
  }

  /** Tokens in the model's vocabulary: valid token ids are 0 to this minus one. */
  get vocabularySize(): number {
    return this.engine.vocabularySize;
  }

  /**
   * The same model and settings with the LoRA adapter GGUF at `path` applied: a second model
   * in memory, disposed on its own. Throws like {@link LlamaChatModel.load}.
   */
  withLoraAdapter(path: string): Promise<LlamaChatModel> {
    return LlamaChatModel.load({ ...this.engine.options, loraAdapters: [path] });
  }

  /** The model's tokens for `text` (special tokens such as `<|im_end|>` parsed when `special`). */
  tokenize(text: string, special = false): number[] {
    return this.engine.model.tokenize(text, special);
  }

  /** Tokens of `text`: an exact `TokenCounter` for prompt budgets. */
  readonly countTokens = (text: string): number => this.engine.model.tokenize(text, false).length;

  /** The text of `tokens`; special tokens are written out when `special`. */
  detokenize(tokens: readonly number[], special = false): string {
    return this.engine.model.detokenize(tokens as Token[], special);
  }

  stats(): LlamaChatModelStats {
    return this.engine.stats();
  }

  /** The prompt tokens of a conversation, ending where the assistant's answer starts. */
  promptTokens(messages: readonly ChatMessage[]): Promise<Token[]> | Token[] {
    return this.engine.template.promptTokens(messages);
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
    const { engine } = this;
    engine.ensureOpen();
    try {
      let messages = request.messages;
      let grammar: LlamaGrammar | undefined;
      if (request.jsonSchema || request.jsonObject) {
        const compiled = await engine.grammars.for(request.jsonSchema);
        grammar = compiled.grammar;
        if (compiled.mode === 'json_object' && request.jsonSchema) {
          messages = withSystemInstruction(messages, jsonInstruction(request.jsonSchema));
        }
      }
      let choiceGrammar: LlamaGrammar | undefined;
      if (request.choice && request.choice.length > 0) {
        if (grammar) {
          throw new ConfigError(
            'A chat request constrains its answer one way: a JSON schema or a choice.',
            {
              field: 'choice',
            },
          );
        }
        choiceGrammar = await engine.grammars.choice(request.choice);
      }
      const generation = await generate(engine, await this.promptTokens(messages), {
        ...generationSettings(engine, request),
        ...(grammar ? { grammar } : {}),
        ...(choiceGrammar ? { grammar: choiceGrammar, grammarIsJson: false } : {}),
      });
      engine.counters.requests += 1;
      return toChatResponse(
        generation,
        request.logprobs === true || (request.topLogprobs ?? 0) > 0,
      );
    } catch (error) {
      engine.counters.failures += 1;
      throw engine.wrapError(error, request.signal);
    }
  }

  async completeStructured<S extends z.ZodType>(
    request: StructuredChatRequest<S>,
  ): Promise<StructuredChatResponse<z.output<S>>> {
    const { engine } = this;
    const { counters } = engine;
    engine.ensureOpen();
    const { schema: jsonSchema } = toResponseJsonSchema(request.schema);
    let compiled: JsonGrammar;
    try {
      compiled = await engine.grammars.for(jsonSchema);
    } catch (error) {
      counters.failures += 1;
      throw engine.wrapError(error, request.signal);
    }
    const messages =
      compiled.mode === 'json_object'
        ? withSystemInstruction(request.messages, jsonInstruction(jsonSchema))
        : request.messages;
    const temperature = request.temperature ?? engine.options.temperature;
    const attempts = temperature === 0 ? 1 : engine.options.structuredAttempts;
    const baseSeed = request.seed ?? engine.options.seed ?? randomSeed();
    let problem = '';
    let lastText = '';
    try {
      const prompt = await this.promptTokens(messages);
      for (let attempt = 0; attempt < attempts; attempt += 1) {
        if (attempt > 0) counters.retries += 1;
        const generation = await generate(engine, prompt, {
          ...generationSettings(engine, { ...request, seed: (baseSeed + attempt) >>> 0 }),
          grammar: compiled.grammar,
        });
        const response = toChatResponse(generation, request.logprobs === true);
        lastText = response.text;
        if (generation.finishReason === 'length') {
          counters.truncatedStructured += 1;
          problem = `the answer was cut off by the token limit (maxTokens ${generationSettings(engine, request).maxTokens}); raise maxTokens or bound the schema's strings with maxLength`;
          continue;
        }
        const extracted = extractJson(response.text);
        const parsed = extracted ? request.schema.safeParse(extracted.value) : undefined;
        if (parsed?.success) {
          counters.requests += 1;
          return { ...response, value: parsed.data, mode: compiled.mode };
        }
        problem = parsed
          ? `the answer does not match the schema: ${z.prettifyError(parsed.error)}`
          : 'the answer holds no JSON';
      }
    } catch (error) {
      counters.failures += 1;
      throw engine.wrapError(error, request.signal);
    }
    counters.failures += 1;
    throw new ModelOutputError(
      `${this.id}: no valid answer for schema "${request.schemaName}" in ${attempts} attempt${attempts === 1 ? '' : 's'}: ${problem}. Answer: "${preview(lastText)}"`,
      { output: lastText },
    );
  }

  /**
   * Completes a raw prompt (no chat template), optionally echoing the prompt's tokens with
   * their teacher-forced log-probabilities: what `/v1/completions` serves.
   */
  completePrompt(request: PromptCompletionRequest): Promise<PromptCompletion> {
    return completePrompt(this.engine, request);
  }

  /**
   * `log P(continuation | prompt)` of each continuation by teacher forcing, on one sequence:
   * the prompt is evaluated once (or taken from the KV cache), each continuation after it.
   */
  scoreContinuations(request: ScoreRequest): Promise<ScoreResponse> {
    return scoreContinuations(this.engine, request);
  }

  /**
   * Aborts requests in flight, waits for them to end, and frees the context and the model.
   * Later calls throw `ModelError`. Safe to call twice.
   */
  dispose(): Promise<void> {
    return this.engine.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

function toChatResponse(generation: Generation, withLogprobs: boolean): LlamaChatResponse {
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

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}...` : flat;
}
