/**
 * Text agreement between a predicted and a real next state: exact match after
 * whitespace normalisation, and token-level F1 (SQuAD-style bag-of-tokens overlap).
 */

/** Collapses runs of whitespace and trims, so layout differences do not count. */
export function normalizeStateText(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

/** True when the texts are equal after {@link normalizeStateText}. */
export function exactMatch(predicted: string, actual: string): boolean {
  return normalizeStateText(predicted) === normalizeStateText(actual);
}

/** Lower-cased word tokens (letters and digits), punctuation dropped. */
export function textTokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * Token F1: the harmonic mean of precision and recall of the predicted tokens against the
 * actual ones, counting repeated tokens as often as they occur. Two empty texts score 1.
 *
 * @example tokenF1('you see a mug 1', 'you see a cup 1') // 0.8 (4 of 5 tokens shared both ways)
 */
export function tokenF1(predicted: string, actual: string): number {
  const predictedTokens = textTokens(predicted);
  const actualTokens = textTokens(actual);
  if (predictedTokens.length === 0 && actualTokens.length === 0) return 1;
  if (predictedTokens.length === 0 || actualTokens.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const token of actualTokens) counts.set(token, (counts.get(token) ?? 0) + 1);
  let shared = 0;
  for (const token of predictedTokens) {
    const left = counts.get(token) ?? 0;
    if (left > 0) {
      shared += 1;
      counts.set(token, left - 1);
    }
  }
  if (shared === 0) return 0;
  const precision = shared / predictedTokens.length;
  const recall = shared / actualTokens.length;
  return (2 * precision * recall) / (precision + recall);
}
