/**
 * Sampling an answer token by token on one of the engine's sequences: the request's sampling
 * settings over the model's defaults, an optional grammar, per-token log-probabilities (and
 * the most likely alternatives), stop sequences, and the end of a JSON answer. Chat and raw
 * completion both generate through it.
 */
import { ConfigError } from '@dreamgym/core';
import type { TokenLogprob } from '@dreamgym/core/models';
import type { LlamaGrammar, Token } from 'node-llama-cpp';
import { llamaModule } from './llama-binding.js';
import type { SamplingOptions } from './llama-chat-model-options.js';
import type { LlamaEngine } from './llama-engine.js';
import { alignSequence } from './sequence-pool.js';
import { JsonEndDetector, TokenTextDecoder } from './token-text.js';

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

/** A generated answer. */
export interface Generation {
  text: string;
  tokens: GeneratedToken[];
  finishReason: 'stop' | 'length';
  promptTokens: number;
  cachedPromptTokens: number;
}

/** How to generate one answer. */
export interface GenerateSettings {
  sampling: Required<Omit<SamplingOptions, 'seed'>> & { seed: number };
  maxTokens: number;
  stop: readonly string[];
  logprobs: boolean;
  topLogprobs: number;
  grammar?: LlamaGrammar;
  /** Whether the grammar is JSON's (the answer then ends where its JSON value ends). Default true. */
  grammarIsJson?: boolean;
  signal?: AbortSignal;
}

/** OpenAI's floor for a log-probability of 0 probability. */
export const LOGPROB_FLOOR = -9999;

function safeLog(probability: number): number {
  return probability > 0 ? Math.max(LOGPROB_FLOOR, Math.log(probability)) : LOGPROB_FLOOR;
}

/** A fresh seed, for requests and models without one. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 0x7fffffff);
}

/** A request's settings over the engine's defaults. Throws `ConfigError` for a bad `topLogprobs`. */
export function generationSettings(
  engine: LlamaEngine,
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
  const defaults = engine.options;
  return {
    sampling: {
      temperature: request.temperature ?? defaults.temperature,
      topK: request.topK ?? defaults.topK,
      topP: request.topP ?? defaults.topP,
      minP: request.minP ?? defaults.minP,
      seed: (request.seed ?? defaults.seed ?? randomSeed()) >>> 0,
    },
    maxTokens: request.maxTokens ?? defaults.maxTokens,
    stop: request.stop ?? [],
    logprobs: request.logprobs === true || topLogprobs > 0,
    topLogprobs,
    signal: engine.signalOf(request.signal),
  };
}

/** Samples an answer to `prompt` on the best free sequence. */
export async function generate(
  engine: LlamaEngine,
  prompt: readonly Token[],
  settings: GenerateSettings,
): Promise<Generation> {
  const { model, counters } = engine;
  engine.checkRoom(prompt.length, 1);
  const maxTokens = Math.min(settings.maxTokens, engine.contextSize - prompt.length);
  const signal = settings.signal;
  const lease = await engine.pool.acquire(prompt, signal);
  counters.attempts += 1;
  try {
    const { LlamaGrammarEvaluationState } = await llamaModule();
    const start = await alignSequence(lease.sequence, prompt, prompt.length - 1);
    const grammarEvaluationState = settings.grammar
      ? new LlamaGrammarEvaluationState({ model, grammar: settings.grammar })
      : undefined;
    const iterator = lease.sequence.evaluateWithMetadata(
      prompt.slice(start) as Token[],
      { confidence: settings.logprobs, probabilities: settings.topLogprobs > 0 },
      {
        ...settings.sampling,
        ...(grammarEvaluationState ? { grammarEvaluationState } : {}),
      },
    );
    const decoder = new TokenTextDecoder(model);
    const json =
      settings.grammar && settings.grammarIsJson !== false ? new JsonEndDetector() : undefined;
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
            token: model.detokenize([id]),
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
    counters.promptTokens += prompt.length;
    counters.completionTokens += tokens.length;
    counters.cachedPromptTokens += start;
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
