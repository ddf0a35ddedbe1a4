/**
 * phi(s, a): what the replay buffer embeds for a transition or a query.
 *
 * A state text is usually far longer than its action ("On the countertop 1, you see ..."
 * vs "take apple 1 from countertop 1"), so one embedding of the concatenation would be
 * dominated by the state. phi therefore embeds the parts separately and combines them:
 *
 *   phi(s, a) = normalise(w_s * E(s.text) + w_a * E("action: " + a) [+ w_i * E("task: " + instruction)])
 *
 * With unit embeddings E, the cosine of two phi vectors is a weighted mean of the state,
 * action (and instruction) similarities, up to small cross terms.
 */
import type { EmbeddingModel } from '../models/embedding-model.js';

/** Weights of the parts of phi(s, a); a zero weight leaves the part out (and unembedded). */
export interface PhiWeights {
  state: number;
  action: number;
  /** Weight of the task instruction; 0 (the default) ignores instructions. */
  instruction: number;
}

/** Default weights: state and action count equally, the instruction not at all. */
export const DEFAULT_PHI_WEIGHTS: Readonly<PhiWeights> = { state: 1, action: 1, instruction: 0 };

/** The inputs of phi for one transition or query. */
export interface PhiInput {
  stateText: string;
  action: string;
  instruction?: string | undefined;
}

/** The texts phi embeds for one input, in the order state, action, instruction (when weighted). */
export function phiTexts(input: PhiInput, weights: PhiWeights): string[] {
  const texts: string[] = [];
  if (weights.state > 0) texts.push(input.stateText);
  if (weights.action > 0) texts.push(`action: ${input.action}`);
  if (weights.instruction > 0) texts.push(`task: ${input.instruction ?? ''}`);
  return texts;
}

/**
 * Combines part embeddings (as laid out by {@link phiTexts}) into a unit phi vector in
 * `target`: the weighted sum, L2-normalised. A zero sum (opposite parts) stays zero.
 */
export function combinePhi(
  parts: readonly Float32Array[],
  weights: PhiWeights,
  target: Float32Array,
): void {
  target.fill(0);
  const active = [weights.state, weights.action, weights.instruction].filter(
    (weight) => weight > 0,
  );
  parts.forEach((part, index) => {
    const weight = active[index]!;
    for (let dimension = 0; dimension < target.length; dimension += 1) {
      target[dimension]! += weight * part[dimension]!;
    }
  });
  let squares = 0;
  for (let dimension = 0; dimension < target.length; dimension += 1)
    squares += target[dimension]! ** 2;
  const norm = Math.sqrt(squares);
  if (norm > 0)
    for (let dimension = 0; dimension < target.length; dimension += 1) target[dimension]! /= norm;
}

/**
 * Embeds phi for many inputs with ONE call to the embedding model (all parts of all inputs
 * in one request list), writing row i of `target` (row-major, `inputs.length * dimension`).
 */
export async function embedPhi(
  embedder: EmbeddingModel,
  inputs: readonly PhiInput[],
  weights: PhiWeights,
  target: Float32Array,
): Promise<void> {
  const perInput = phiTexts({ stateText: '', action: '' }, weights).length;
  const texts: string[] = [];
  for (const input of inputs) texts.push(...phiTexts(input, weights));
  const embeddings = texts.length === 0 ? [] : await embedder.embed(texts);
  if (embeddings.length !== texts.length) {
    throw new RangeError(
      `the embedding model returned ${embeddings.length} vectors for ${texts.length} texts`,
    );
  }
  const width = embedder.dimension;
  for (let row = 0; row < inputs.length; row += 1) {
    const parts = embeddings.slice(row * perInput, (row + 1) * perInput);
    for (const part of parts) {
      if (part.length !== width) {
        throw new RangeError(
          `the embedding model returned a vector of ${part.length} floats, expected ${width}`,
        );
      }
    }
    combinePhi(parts, weights, target.subarray(row * width, (row + 1) * width));
  }
}
