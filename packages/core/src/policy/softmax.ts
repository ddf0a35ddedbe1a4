/**
 * Softmax arithmetic over candidate-action logits, numerically stable, in float64.
 */

/** log softmax(logits): log-probabilities that sum (in probability) to one. */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < logits.length; index += 1) max = Math.max(max, logits[index]!);
  let total = 0;
  for (let index = 0; index < logits.length; index += 1) total += Math.exp(logits[index]! - max);
  const logNormaliser = max + Math.log(total);
  const result = new Float64Array(logits.length);
  for (let index = 0; index < logits.length; index += 1) {
    result[index] = logits[index]! - logNormaliser;
  }
  return result;
}

/** Entropy -sum p log p of the distribution given by its log-probabilities. */
export function entropyOf(logProbabilities: ArrayLike<number>): number {
  let entropy = 0;
  for (let index = 0; index < logProbabilities.length; index += 1) {
    const logp = logProbabilities[index]!;
    if (logp > Number.NEGATIVE_INFINITY) entropy -= Math.exp(logp) * logp;
  }
  return entropy;
}

/**
 * d/dz_i of `dLogprob * log p_a + dEntropy * H` for logits z, where p = softmax(z):
 * d log p_a / dz_i = 1[i = a] - p_i and dH / dz_i = -p_i (log p_i + H).
 */
export function softmaxLogitGradient(
  logProbabilities: ArrayLike<number>,
  actionIndex: number,
  dLogprob: number,
  dEntropy: number,
): Float64Array {
  const entropy = dEntropy === 0 ? 0 : entropyOf(logProbabilities);
  const gradient = new Float64Array(logProbabilities.length);
  for (let index = 0; index < logProbabilities.length; index += 1) {
    const logp = logProbabilities[index]!;
    const p = Math.exp(logp);
    let g = dLogprob * ((index === actionIndex ? 1 : 0) - p);
    if (dEntropy !== 0 && p > 0) g += dEntropy * -p * (logp + entropy);
    gradient[index] = g;
  }
  return gradient;
}
