/**
 * Scoring by teacher forcing: the log-probability of given tokens under the model's raw
 * distribution (temperature 1, no truncation), read from the logits as each token is
 * evaluated. `scoreContinuations` scores candidate continuations of one prompt (core's
 * `ContinuationScorer`); raw completion echoes a prompt's own log-probabilities through
 * {@link teacherForce}.
 */
import { ConfigError, ModelError } from '@dreamgym/core';
import type {
  ContinuationScore,
  ScoreRequest,
  ScoreResponse,
  TokenLogprob,
} from '@dreamgym/core/models';
import type { LlamaContextSequence, Token } from 'node-llama-cpp';
import type { LlamaEngine } from './llama-engine.js';
import { alignSequence } from './sequence-pool.js';
import { LOGPROB_FLOOR } from './token-generation.js';
import { TokenTextDecoder } from './token-text.js';

/** The sampler settings under which logits are the model's own distribution. */
const RAW_DISTRIBUTION = { temperature: 1, topK: 0, topP: 1, minP: 0 } as const;

/** A teacher-forced token: its log-probability and, when asked, the most likely alternatives. */
export interface ForcedToken {
  logprob: number;
  top?: TokenLogprob[];
}

/**
 * `log P(continuation | prompt)` of each continuation by teacher forcing, on one sequence:
 * the prompt is evaluated once (or taken from the KV cache), each continuation after it.
 */
export async function scoreContinuations(
  engine: LlamaEngine,
  request: ScoreRequest,
): Promise<ScoreResponse> {
  engine.ensureOpen();
  if ((request.prompt === undefined) === (request.messages === undefined)) {
    throw new ConfigError('scoreContinuations needs exactly one of `prompt` and `messages`.', {
      field: 'prompt',
    });
  }
  const { model, counters } = engine;
  try {
    const prompt =
      request.prompt !== undefined
        ? model.tokenize(request.prompt, true)
        : await engine.template.promptTokens(request.messages!);
    if (prompt.length === 0) throw new ModelError(`${engine.id}: the prompt is empty.`);
    const scores: ContinuationScore[] = [];
    let evaluated = 0;
    const lease = await engine.pool.acquire(prompt, engine.signalOf(request.signal));
    try {
      for (const continuation of request.continuations) {
        const tokens = model.tokenize(continuation, true);
        if (tokens.length === 0) {
          scores.push({ text: continuation, logprob: 0, tokens: [] });
          continue;
        }
        const all = [...prompt, ...tokens];
        engine.checkRoom(all.length, 0);
        const forced = await forceOn(engine, lease.sequence, all, prompt.length, 0, request.signal);
        evaluated += forced.evaluated;
        const decoder = new TokenTextDecoder(model);
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
    counters.scoredContinuations += scores.length;
    counters.requests += 1;
    counters.promptTokens += evaluated;
    return {
      scores,
      usage: { promptTokens: evaluated, completionTokens: 0, totalTokens: evaluated },
    };
  } catch (error) {
    counters.failures += 1;
    throw engine.wrapError(error, request.signal);
  }
}

/** Teacher-forced log-probabilities of `tokens[from..]` on the best free sequence. */
export async function teacherForce(
  engine: LlamaEngine,
  tokens: readonly Token[],
  from: number,
  top: number,
  signal: AbortSignal | undefined,
): Promise<ForcedToken[]> {
  if (tokens.length <= from) return [];
  engine.checkRoom(tokens.length, 0);
  const lease = await engine.pool.acquire(tokens, engine.signalOf(signal));
  try {
    return (await forceOn(engine, lease.sequence, tokens, from, top, signal)).logprobs;
  } finally {
    lease.release();
  }
}

/**
 * Evaluates `tokens` on `sequence` (reusing its cached prefix up to `from - 1`) and reads,
 * for every position from `from` on, the log-probability of the token there given those
 * before it: the logit against the log-sum-exp of the model's raw distribution.
 */
async function forceOn(
  engine: LlamaEngine,
  sequence: LlamaContextSequence,
  tokens: readonly Token[],
  from: number,
  top: number,
  signal: AbortSignal | undefined,
): Promise<{ logprobs: ForcedToken[]; evaluated: number }> {
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
  engine.signalOf(signal).throwIfAborted();
  const logprobs: ForcedToken[] = [];
  for (let index = from - 1; index < tokens.length - 1; index += 1) {
    const next = results[index - start]?.next as
      | { logits?: Map<Token, number>; totalLogitWeight?: number }
      | undefined;
    const logits = next?.logits;
    if (!logits || next?.totalLogitWeight === undefined) {
      throw new ModelError(`${engine.id}: llama.cpp returned no logits for position ${index}.`);
    }
    let max = Number.NEGATIVE_INFINITY;
    for (const value of logits.values()) max = Math.max(max, value);
    const normaliser = max + Math.log(next.totalLogitWeight);
    const target = logits.get(tokens[index + 1]!) ?? Number.NEGATIVE_INFINITY;
    const entry: ForcedToken = {
      logprob: Math.max(LOGPROB_FLOOR, target - normaliser),
    };
    if (top > 0) {
      entry.top = [...logits.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, top)
        .map(([id, value]) => ({
          token: engine.model.detokenize([id]),
          logprob: value - normaliser,
        }));
    }
    logprobs.push(entry);
  }
  return { logprobs, evaluated: tokens.length - 1 - start };
}
