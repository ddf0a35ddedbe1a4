/**
 * The clipped PPO objective per step, as a loss to minimise, with its derivatives with
 * respect to the step's log-probability and the policy entropy, so that any policy that can
 * back-propagate through log pi(a|s) and H(pi(.|s)) can be trained with it.
 *
 * - Clipped surrogate (Schulman et al., 2017) with separate low and high clip ranges
 *   ("clip-higher", DAPO): `max(-A r, -A clip(r, 1 - clipLow, 1 + clipHigh))`, `r = exp(logp - old)`.
 * - Dual clip (Ye et al., 2020): for `A < 0`, the loss is capped at `-A c` (c > 1), so a
 *   very large ratio on a bad action cannot blow up the update.
 * - KL to a frozen reference with the low-variance k3 estimator (Schulman, 2020):
 *   `exp(ref - logp) - (ref - logp) - 1`, non-negative, unbiased for KL(pi || ref).
 * - Entropy bonus: `- entropyCoefficient * H`.
 */
import { ConfigError } from '../errors.js';

/** Coefficients of the PPO loss. */
export interface PpoLossOptions {
  /** Lower clip range epsilon_low: the ratio is clipped below at 1 - clipLow. Default 0.2. */
  clipLow?: number;
  /** Upper clip range epsilon_high (clip-higher): clipped above at 1 + clipHigh. Default 0.28. */
  clipHigh?: number;
  /** Dual-clip constant c > 1 for negative advantages; off when undefined. */
  dualClip?: number;
  /** Weight beta of the k3 KL term to the reference policy. Default 0 (no reference needed). */
  klCoefficient?: number;
  /** Weight of the entropy bonus. Default 0. */
  entropyCoefficient?: number;
}

/** Resolved PPO loss coefficients. */
export interface PpoLossConfig {
  clipLow: number;
  clipHigh: number;
  dualClip: number | undefined;
  klCoefficient: number;
  entropyCoefficient: number;
}

/** Validates and fills in PPO loss options. */
export function resolvePpoLossOptions(options: PpoLossOptions = {}): PpoLossConfig {
  const config: PpoLossConfig = {
    clipLow: options.clipLow ?? 0.2,
    clipHigh: options.clipHigh ?? 0.28,
    dualClip: options.dualClip,
    klCoefficient: options.klCoefficient ?? 0,
    entropyCoefficient: options.entropyCoefficient ?? 0,
  };
  if (!(config.clipLow > 0 && config.clipLow < 1)) {
    throw new ConfigError('clipLow must be in (0, 1).', { field: 'clipLow' });
  }
  if (!(config.clipHigh > 0))
    throw new ConfigError('clipHigh must be positive.', { field: 'clipHigh' });
  if (config.dualClip !== undefined && !(config.dualClip > 1)) {
    throw new ConfigError('dualClip must be greater than 1 (3 is usual).', { field: 'dualClip' });
  }
  if (!(config.klCoefficient >= 0)) {
    throw new ConfigError('klCoefficient must be non-negative.', { field: 'klCoefficient' });
  }
  if (!(config.entropyCoefficient >= 0)) {
    throw new ConfigError('entropyCoefficient must be non-negative.', {
      field: 'entropyCoefficient',
    });
  }
  return config;
}

/** The clipped surrogate of one step and its derivative with respect to logp. */
export interface SurrogateTerm {
  /** The surrogate loss (to minimise). */
  loss: number;
  /** d loss / d logp. */
  dLogprob: number;
  /** The probability ratio exp(logp - oldLogprob). */
  ratio: number;
  /** The clip (or dual clip) was active, so the step gives no gradient. */
  clipped: boolean;
}

/** Clipped (and optionally dual-clipped) PPO surrogate loss of one step. */
export function clippedSurrogate(
  logprob: number,
  oldLogprob: number,
  advantage: number,
  config: Pick<PpoLossConfig, 'clipLow' | 'clipHigh' | 'dualClip'>,
): SurrogateTerm {
  const ratio = Math.exp(logprob - oldLogprob);
  const clippedRatio = Math.min(Math.max(ratio, 1 - config.clipLow), 1 + config.clipHigh);
  const unclippedLoss = -advantage * ratio;
  const clippedLoss = -advantage * clippedRatio;
  let loss = Math.max(unclippedLoss, clippedLoss);
  let clipped = clippedLoss > unclippedLoss;
  if (config.dualClip !== undefined && advantage < 0) {
    const cap = -advantage * config.dualClip;
    if (cap < loss) {
      loss = cap;
      clipped = true;
    }
  }
  return { loss, dLogprob: clipped ? 0 : unclippedLoss, ratio, clipped };
}

/** k3 estimate of KL(pi || ref) at one sampled action, and its derivative with respect to logp. */
export function k3KlDivergence(
  logprob: number,
  referenceLogprob: number,
): { kl: number; dLogprob: number } {
  const difference = referenceLogprob - logprob;
  const exponent = Math.exp(difference);
  return { kl: exponent - difference - 1, dLogprob: 1 - exponent };
}

/** One step as the PPO loss sees it. */
export interface PpoStepInput {
  /** log pi_theta(a|s) under the weights being updated. */
  logprob: number;
  /** log pi_old(a|s) under the weights that collected the rollout. */
  oldLogprob: number;
  /** log pi_ref(a|s) under the frozen reference; needed when klCoefficient > 0. */
  referenceLogprob?: number;
  advantage: number;
  /** H(pi_theta(.|s)). */
  entropy: number;
}

/** The loss of one step, its parts, and its derivatives. */
export interface PpoStepLoss {
  /** policyLoss + klCoefficient * kl - entropyCoefficient * entropy. */
  loss: number;
  policyLoss: number;
  kl: number;
  entropy: number;
  ratio: number;
  clipped: boolean;
  /** d loss / d logprob. */
  dLogprob: number;
  /** d loss / d entropy. */
  dEntropy: number;
}

/** The full per-step PPO loss: clipped surrogate + beta * k3 KL - entropy bonus. */
export function ppoStepLoss(input: PpoStepInput, config: PpoLossConfig): PpoStepLoss {
  const surrogate = clippedSurrogate(input.logprob, input.oldLogprob, input.advantage, config);
  let kl = 0;
  let dLogprob = surrogate.dLogprob;
  if (config.klCoefficient > 0) {
    if (input.referenceLogprob === undefined) {
      throw new ConfigError(
        'klCoefficient > 0 needs the reference log-probability of every step.',
        {
          field: 'klCoefficient',
        },
      );
    }
    const term = k3KlDivergence(input.logprob, input.referenceLogprob);
    kl = term.kl;
    dLogprob += config.klCoefficient * term.dLogprob;
  }
  return {
    loss: surrogate.loss + config.klCoefficient * kl - config.entropyCoefficient * input.entropy,
    policyLoss: surrogate.loss,
    kl,
    entropy: input.entropy,
    ratio: surrogate.ratio,
    clipped: surrogate.clipped,
    dLogprob,
    dEntropy: -config.entropyCoefficient,
  };
}
