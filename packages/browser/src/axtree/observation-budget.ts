/**
 * The observation budget: an observation holds at most `budget` tokens of the model that reads
 * it. Tokens are counted with that model's tokenizer when the caller has one (`countTokens`),
 * else with {@link estimateObservationTokens}, an estimate that over-counts rather than under.
 * What is counted is the whole text the model reads, as it will read it, so the budget holds
 * whatever the tokenizer does where two lines meet.
 */
import type { TokenCounter } from '@dreamgym/core/experience';

// Runs of ASCII letters, split where a capital starts a word (`DerefMut` is `Deref` `Mut`:
// BPE vocabularies rarely merge across that seam), runs of spaces, and every other character.
const PIECES = /[A-Z]?[a-z]+|[A-Z]+(?![a-z])| +|[^A-Za-z ]/gu;

/**
 * A tokenizer-free count that does not under-count: ASCII words cost one token per 3.5 letters
 * (per camel-case part), digits, punctuation, tabs and newlines one each, a space one unless it
 * leads a word, any other character its UTF-8 bytes (byte-level BPE never needs more).
 *
 * Measured against SmolLM2-135M's tokenizer (a 49k-token BPE) on the whole trees of 24 real
 * documentation pages (Rust's std, book and Cargo docs; pydoc pages of Python's standard
 * library; Debian's libffi and base-passwd manuals; 1.5k to 176k real tokens): it never counts
 * fewer tokens than the tokenizer does, on any page or its first lines (at most 0.80 real tokens
 * per counted one, 0.62 on average over whole pages), on any run of 10 lines (at most 1.0), or on
 * any line of over 40 characters. `characters / 4` counts up to 1.6 times too few on the same
 * pages, 1.9 times on their first lines. Tokenizers with larger vocabularies usually need
 * fewer tokens than SmolLM2's for the same text (not measured here); for any model whose
 * tokenizer is at hand, pass it as `countTokens` instead.
 *
 * @example estimateObservationTokens("[12] link 'My Account'") // 12 (SmolLM2's tokenizer: 9)
 */
export function estimateObservationTokens(text: string): number {
  let tokens = 0;
  for (const match of text.matchAll(PIECES)) {
    const piece = match[0];
    const first = piece.charCodeAt(0);
    if (first === 32) {
      const next = text.charCodeAt(match.index + piece.length);
      const leadsWord =
        piece.length === 1 && ((next >= 65 && next <= 90) || (next >= 97 && next <= 122));
      tokens += leadsWord ? 0 : 1;
    } else if ((first >= 65 && first <= 90) || (first >= 97 && first <= 122)) {
      tokens += Math.ceil(piece.length / 3.5);
    } else {
      tokens += first < 128 ? 1 : Buffer.byteLength(piece);
    }
  }
  return tokens;
}

/** How a text is fitted to a budget. */
export interface ObservationBudget {
  /** Most tokens the text may hold. */
  maxTokens: number;
  /** The reader's tokenizer. Default {@link estimateObservationTokens}. */
  countTokens?: TokenCounter;
}

/** A text fitted to its budget. */
export interface FittedObservation {
  /** `head`, the lines kept, and the note when lines were left out. */
  text: string;
  /** The lines kept (the note is not one of them). */
  lines: readonly string[];
  /** When lines were left out: how many were shown of how many. */
  cut?: { shownLines: number; totalLines: number };
  /** Tokens of `text`, as counted. */
  tokens: number;
}

/**
 * Keeps the first `lines` that fit the budget beside `head` (text above them: the tab header,
 * a notice), ending a cut text with a note that says how many lines are shown and `rest` (how
 * to see the others). The whole text is counted, note included, so `tokens <= maxTokens`
 * always holds: when even `head` and the note do not fit, the text is cut at a character.
 */
export function fitLinesToBudget(
  head: string,
  lines: readonly string[],
  budget: ObservationBudget,
  rest: string,
): FittedObservation {
  const count = budget.countTokens ?? estimateObservationTokens;
  const { maxTokens } = budget;
  const join = (kept: number) => {
    const shown = lines.slice(0, kept);
    if (kept === lines.length) return `${head}${shown.join('\n')}`;
    const note = `[The observation is cut at its budget of ${maxTokens} tokens: ${kept} of ${lines.length} lines are shown; ${rest}.]`;
    return `${head}${[...shown, note].join('\n')}`;
  };
  const fits = (kept: number) => count(join(kept)) <= maxTokens;
  const total = lines.length;

  // A first guess from the lines' own counts, then the most lines whose whole text fits, by a
  // gallop and a bisection from the guess on whole texts (lines can merge into fewer tokens, or
  // more, where they meet). Only texts near the budget are counted, not the whole page.
  // Counted 16 lines at a time, then line by line in the block that reaches the budget (a
  // tokenizer call has its own cost: one per line of a 5,000-line page would be most of it).
  let used = count(join(0));
  let guess = 0;
  for (let size = 16; guess < total && size > 0; ) {
    const block = lines.slice(guess, guess + size);
    const cost = count(`${block.join('\n')}\n`);
    if (used + cost <= maxTokens) {
      used += cost;
      guess += block.length;
    } else size = size === 16 ? 1 : 0;
  }
  let low = 0; // fits (or 0)
  let high = total + 1; // does not fit
  if (fits(guess)) {
    low = guess;
    for (let step = 1; low < total; step *= 2) {
      const next = Math.min(low + step, total);
      if (!fits(next)) {
        high = next;
        break;
      }
      low = next;
    }
  } else {
    high = guess;
    for (let step = 1; high > 0; step *= 2) {
      const next = Math.max(high - step, 0);
      if (next === 0 || fits(next)) {
        low = next;
        break;
      }
      high = next;
    }
  }
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (fits(middle)) low = middle;
    else high = middle;
  }
  if (low === total) {
    const whole = join(total);
    return { text: whole, lines, tokens: count(whole) };
  }
  let text = join(low);
  let tokens = count(text);
  if (tokens > maxTokens) {
    // Not even the head and the note fit: the longest prefix that does.
    let short = 0;
    let long = text.length;
    while (long - short > 1) {
      const middle = (short + long) >> 1;
      if (count(text.slice(0, middle)) <= maxTokens) short = middle;
      else long = middle;
    }
    text = text.slice(0, short);
    tokens = count(text);
  }
  return {
    text,
    lines: lines.slice(0, low),
    cut: { shownLines: low, totalLines: lines.length },
    tokens,
  };
}
