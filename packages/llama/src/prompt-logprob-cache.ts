/**
 * Teacher-forced prompt log-probabilities kept for the prompts evaluated last, so a prompt that
 * shares a prefix with one of them is forced only from where they differ. Score selection over
 * an OpenAI-compatible server sends one prompt per candidate action (the same conversation,
 * then each candidate) with `prompt_logprobs`, and the next decision repeats the conversation
 * so far: without this cache every candidate re-evaluates the whole conversation with logits at
 * every position, which made `dreamgym model serve` 8.3x slower per decision than scoring
 * in-process (`benchmarks/results/llm-policy.json`, `runtimes`).
 *
 * One cache per loaded model (an adapter is another model), so cached values are always of the
 * weights that serve the request.
 */
import type { Token } from 'node-llama-cpp';

interface CachedPrompt {
  tokens: readonly Token[];
  /** `logprobs[i]` is the log-probability of `tokens[i + 1]` given `tokens[0..i]`. */
  logprobs: readonly number[];
}

/** The prefix of a prompt whose log-probabilities are known. */
export interface KnownPrefix {
  /** Tokens of the prompt's prefix that are cached (0 when none). */
  length: number;
  /** Log-probabilities of the prefix's tokens 1 to `length - 1`. */
  logprobs: number[];
}

/** The last `capacity` forced prompts, most recent first; see the file's comment. */
export class PromptLogprobCache {
  private entries: CachedPrompt[] = [];

  constructor(private readonly capacity = 8) {}

  /** The longest prefix of `tokens` shared with a cached prompt, and its log-probabilities. */
  lookup(tokens: readonly Token[]): KnownPrefix {
    let best: CachedPrompt | undefined;
    let bestLength = 0;
    for (const entry of this.entries) {
      const limit = Math.min(entry.tokens.length, tokens.length);
      let length = 0;
      while (length < limit && entry.tokens[length] === tokens[length]) length += 1;
      if (length > bestLength) {
        best = entry;
        bestLength = length;
      }
    }
    if (!best || bestLength < 2) return { length: 0, logprobs: [] };
    return { length: bestLength, logprobs: best.logprobs.slice(0, bestLength - 1) };
  }

  /** Keeps `tokens` and their log-probabilities (`logprobs.length === tokens.length - 1`). */
  remember(tokens: readonly Token[], logprobs: readonly number[]): void {
    if (tokens.length < 2 || logprobs.length !== tokens.length - 1) return;
    this.entries = [
      { tokens: [...tokens], logprobs: [...logprobs] },
      ...this.entries.filter((entry) => !sameTokens(entry.tokens, tokens)),
    ].slice(0, this.capacity);
  }

  /** Forgets every prompt. */
  clear(): void {
    this.entries = [];
  }
}

function sameTokens(a: readonly Token[], b: readonly Token[]): boolean {
  return a.length === b.length && a.every((token, index) => token === b[index]);
}
