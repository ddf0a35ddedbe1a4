/**
 * Raw-prompt completion (no chat template), what `/v1/completions` serves: the prompt's
 * special tokens parsed as such, optionally echoed with their teacher-forced
 * log-probabilities, and an answer sampled after it (or none, with `maxTokens` 0).
 */
import { ConfigError, ModelError } from '@dreamgym/core';
import type { TokenUsage } from '@dreamgym/core/models';
import type { Token } from 'node-llama-cpp';
import { type ForcedToken, teacherForce } from './continuation-scoring.js';
import type { SamplingOptions } from './llama-chat-model-options.js';
import type { LlamaEngine } from './llama-engine.js';
import {
  type GeneratedToken,
  type Generation,
  generate,
  generationSettings,
} from './token-generation.js';
import { TokenTextDecoder } from './token-text.js';

/** A raw-prompt completion request (`/v1/completions`). */
export interface PromptCompletionRequest extends SamplingOptions {
  /**
   * The raw prompt; special tokens written in it (`<|im_start|>`) are parsed as such. Or the
   * prompt's token ids, evaluated as given.
   */
  prompt: string | readonly number[];
  /** Upper bound on generated tokens; 0 only evaluates (with `echo`). Default the model's. */
  maxTokens?: number;
  stop?: readonly string[];
  /** Per-token log-probabilities: the sampled token's, plus this many alternatives (0-20). */
  logprobs?: number;
  /** Return the prompt's tokens too, with their teacher-forced log-probabilities. */
  echo?: boolean;
  /**
   * With `echo`: log-probabilities only of the prompt tokens from this position on (earlier
   * ones are `null`); the prompt before it is evaluated without logits, from the KV cache where
   * it is there. Default 1 (every token but the first).
   */
  echoLogprobsFrom?: number;
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

/** `ids` when every one is in the vocabulary; else a `ConfigError` naming the first that is not. */
export function checkTokenIds(engine: LlamaEngine, ids: readonly number[]): number[] {
  const size = engine.vocabularySize;
  const bad = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= size);
  if (bad >= 0) {
    throw new ConfigError(
      `Token id ${ids[bad]} at position ${bad} is outside the vocabulary of ${engine.name} (0 to ${size - 1}).`,
      { field: 'prompt' },
    );
  }
  return [...ids];
}

/** Completes `request.prompt` on `engine`; see the file's comment. */
export async function completePrompt(
  engine: LlamaEngine,
  request: PromptCompletionRequest,
): Promise<PromptCompletion> {
  engine.ensureOpen();
  const { model, counters } = engine;
  try {
    const tokens =
      typeof request.prompt === 'string'
        ? model.tokenize(request.prompt, true)
        : (checkTokenIds(engine, request.prompt) as Token[]);
    if (tokens.length === 0) throw new ModelError(`${engine.id}: the prompt is empty.`);
    const topLogprobs = request.logprobs ?? 0;
    let promptTokens: GeneratedToken[] | undefined;
    let evaluated = 0;
    if (request.echo) {
      const from = Math.max(1, Math.min(request.echoLogprobsFrom ?? 1, tokens.length));
      // forced[i] is the log-probability of prompt token i + 1; null before `from`.
      let forced: Array<ForcedToken | null>;
      if (topLogprobs > 0 || from > 1) {
        const rest = await teacherForce(engine, tokens, from, topLogprobs, request.signal);
        forced = [...new Array<null>(from - 1).fill(null), ...rest];
        evaluated = tokens.length;
      } else {
        const known = engine.promptLogprobs.lookup(tokens);
        const rest = await teacherForce(
          engine,
          tokens,
          Math.max(1, known.length),
          0,
          request.signal,
        );
        const logprobs = [...known.logprobs, ...rest.map((token) => token.logprob)];
        engine.promptLogprobs.remember(tokens, logprobs);
        forced = logprobs.map((logprob) => ({ logprob }));
        evaluated = tokens.length - known.length;
        counters.cachedPromptTokens += known.length;
      }
      const decoder = new TokenTextDecoder(model, true);
      promptTokens = tokens.map((id, index) => ({
        id,
        text: decoder.push(id),
        ...(request.logprobs === undefined
          ? {}
          : index === 0 || forced[index - 1] === null
            ? { logprob: null }
            : {
                logprob: forced[index - 1]!.logprob,
                ...(topLogprobs > 0 ? { top: forced[index - 1]!.top } : {}),
              }),
      }));
    }
    const maxTokens = request.maxTokens ?? engine.options.maxTokens;
    let generation: Generation = {
      text: '',
      tokens: [],
      finishReason: 'length',
      promptTokens: tokens.length,
      cachedPromptTokens: 0,
    };
    if (maxTokens > 0) {
      generation = await generate(engine, tokens, {
        ...generationSettings(engine, {
          ...request,
          maxTokens,
          logprobs: request.logprobs !== undefined,
          topLogprobs,
        }),
      });
    } else {
      counters.promptTokens += request.echo ? 0 : tokens.length;
    }
    if (request.echo) counters.promptTokens += evaluated;
    counters.requests += 1;
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
    counters.failures += 1;
    throw engine.wrapError(error, request.signal);
  }
}
