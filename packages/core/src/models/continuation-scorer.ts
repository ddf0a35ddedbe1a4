/**
 * `ContinuationScorer`: the log-probability a model gives to each of several given
 * continuations of one prompt (teacher forcing, nothing sampled). An LLM policy chooses among
 * candidate actions with it (`log pi(a|s)` of every admissible action, exactly), and a
 * trainer re-evaluates recorded decisions. Implemented in process by `@dreamgym/llama` and,
 * for any OpenAI-compatible server with `/v1/completions` echo and logprobs (vLLM, our
 * `dreamgym model serve`), by {@link OpenAICompatibleScorer}.
 */
import { InvalidArgumentError } from '../errors.js';
import type { ChatMessage, TokenLogprob, TokenUsage } from './chat-model.js';

/** What to score: a prompt and the continuations to score after it. */
export interface ScoreRequest {
  /**
   * The conversation: each continuation is scored as the start of the assistant's reply
   * (the chat template is applied with the generation prompt). Give this or `prompt`.
   */
  messages?: readonly ChatMessage[];
  /** A raw prompt, used as it is (no chat template). Give this or `messages`. */
  prompt?: string;
  /** The texts to score after the prompt, e.g. `<action>go to cabinet 1</action>` for each candidate. */
  continuations: readonly string[];
  /** Cancels the request. */
  signal?: AbortSignal;
}

/** The score of one continuation. */
export interface ContinuationScore {
  /** The continuation, as given. */
  text: string;
  /** `log P(text | prompt)`: the sum of its tokens' log-probabilities. */
  logprob: number;
  /** Per-token log-probabilities; the tokens spell `text`. */
  tokens: TokenLogprob[];
}

/** Scores of a {@link ScoreRequest}, in the order of its continuations. */
export interface ScoreResponse {
  scores: ContinuationScore[];
  /** Tokens evaluated (prompt tokens counted once per continuation the server evaluated them for). */
  usage: TokenUsage;
}

/** A model that scores given continuations of a prompt by log-probability. */
export interface ContinuationScorer {
  /** Identifies the model, as `ChatModel.id` does. */
  readonly id: string;
  scoreContinuations(request: ScoreRequest): Promise<ScoreResponse>;
}

/**
 * The continuation with the highest log-probability (the first on ties), optionally
 * length-normalised (mean log-probability per token), and the softmax distribution over
 * the continuations' log-probabilities: `pi(a|s)` restricted to the candidates.
 */
export function rankContinuations(
  scores: readonly ContinuationScore[],
  options: { normalize?: 'sum' | 'mean' } = {},
): { best: number; probabilities: number[] } {
  if (scores.length === 0)
    throw new InvalidArgumentError('rankContinuations needs at least one score.', {
      argument: 'scores',
    });
  const values = scores.map((score) =>
    options.normalize === 'mean' ? score.logprob / Math.max(1, score.tokens.length) : score.logprob,
  );
  let best = 0;
  for (let index = 1; index < values.length; index += 1) {
    if (values[index]! > values[best]!) best = index;
  }
  const max = values[best]!;
  const weights = values.map((value) => Math.exp(value - max));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  return { best, probabilities: weights.map((weight) => weight / total) };
}
