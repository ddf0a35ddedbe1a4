/**
 * The interaction history shown to an LLM experience model, cut to a token budget:
 * the newest steps are kept and the oldest dropped first, because the latest
 * observations constrain the next state most.
 */
import type { Step } from '../mdp/schemas.js';

/** Counts the tokens of a text for budgeting prompts. */
export type TokenCounter = (text: string) => number;

/**
 * A tokenizer-free estimate: one token per four characters, rounded up (close to BPE
 * tokenizers on English and code; exact counts need the model's own tokenizer).
 *
 * @example estimateTokens('go to cabinet 2') // 4 (15 characters)
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** How one history step is written in a prompt: the action taken and what followed. */
export function formatHistoryStep(step: Step, nextObservationText: string): string {
  return `> ${step.action}\n${nextObservationText}`;
}

/** The newest steps of `history` whose formatted texts fit `budget` tokens. */
export interface HistoryWindow {
  /** Formatted steps, oldest first. */
  lines: string[];
  /** Steps left out at the start of the history. */
  dropped: number;
  /** Tokens of the kept lines. */
  tokens: number;
}

/**
 * Selects the newest steps that fit `budget` tokens. Step i is written with the
 * observation that followed it: step i+1's observation, or `currentText` (s_t) for
 * the last step.
 *
 * @example
 * // three steps of 10 tokens each and a budget of 25: the two newest are kept
 */
export function selectHistoryWindow(
  history: readonly Step[],
  currentText: string,
  budget: number,
  countTokens: TokenCounter = estimateTokens,
): HistoryWindow {
  const lines: string[] = [];
  let tokens = 0;
  let index = history.length - 1;
  for (; index >= 0; index -= 1) {
    const step = history[index]!;
    const line = formatHistoryStep(step, history[index + 1]?.observation.text ?? currentText);
    const cost = countTokens(line);
    if (tokens + cost > budget) break;
    tokens += cost;
    lines.push(line);
  }
  lines.reverse();
  return { lines, dropped: index + 1, tokens };
}
