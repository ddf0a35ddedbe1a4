/**
 * Adam (Kingma & Ba, 2015) over a dense Float32Array of weights. Its moments and step
 * count are part of a checkpoint, so training resumes exactly where it stopped.
 */
import { ConfigError } from '../errors.js';

/** Hyper-parameters of {@link AdamOptimizer}. */
export interface AdamOptions {
  /** Step size. Default 0.01. */
  learningRate?: number;
  /** Decay of the first moment. Default 0.9. */
  beta1?: number;
  /** Decay of the second moment. Default 0.999. */
  beta2?: number;
  /** Added to the root of the second moment. Default 1e-8. */
  epsilon?: number;
}

/** Resolved hyper-parameters, as saved in checkpoints. */
export interface AdamConfig {
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
}

/** Validates and fills in Adam hyper-parameters; `field` prefixes error locations. */
export function resolveAdamOptions(options: AdamOptions = {}, field = 'optimizer'): AdamConfig {
  const config: AdamConfig = {
    learningRate: options.learningRate ?? 0.01,
    beta1: options.beta1 ?? 0.9,
    beta2: options.beta2 ?? 0.999,
    epsilon: options.epsilon ?? 1e-8,
  };
  if (!(config.learningRate > 0) || !Number.isFinite(config.learningRate)) {
    throw new ConfigError(`${field}.learningRate must be a positive number.`, {
      field: `${field}.learningRate`,
    });
  }
  for (const key of ['beta1', 'beta2'] as const) {
    if (!(config[key] >= 0 && config[key] < 1)) {
      throw new ConfigError(`${field}.${key} must be in [0, 1).`, { field: `${field}.${key}` });
    }
  }
  if (!(config.epsilon > 0)) {
    throw new ConfigError(`${field}.epsilon must be positive.`, { field: `${field}.epsilon` });
  }
  return config;
}

/** Adam with bias correction. */
export class AdamOptimizer {
  /** First-moment estimates, one per weight. */
  readonly m: Float32Array;
  /** Second-moment estimates, one per weight. */
  readonly v: Float32Array;
  /** Number of steps taken (for bias correction). */
  steps = 0;
  readonly config: AdamConfig;

  constructor(size: number, options: AdamOptions = {}) {
    this.config = resolveAdamOptions(options);
    this.m = new Float32Array(size);
    this.v = new Float32Array(size);
  }

  /** Restores moments and step count saved from another optimiser of the same size. */
  restore(m: ArrayLike<number>, v: ArrayLike<number>, steps: number): void {
    this.m.set(m);
    this.v.set(v);
    this.steps = steps;
  }

  /** Zero moments and step count: the state of a new optimiser. */
  reset(): void {
    this.m.fill(0);
    this.v.fill(0);
    this.steps = 0;
  }

  /** Moves `weights` against `gradient` (of a loss to minimise): one dense Adam step. */
  step(
    weights: Float32Array,
    gradient: ArrayLike<number>,
    learningRate = this.config.learningRate,
  ): void {
    this.steps += 1;
    const { beta1, beta2, epsilon } = this.config;
    const correction1 = 1 - beta1 ** this.steps;
    const correction2 = 1 - beta2 ** this.steps;
    for (let index = 0; index < weights.length; index += 1) {
      const g = gradient[index]!;
      if (g === 0 && this.m[index] === 0 && this.v[index] === 0) continue;
      const m = beta1 * this.m[index]! + (1 - beta1) * g;
      const v = beta2 * this.v[index]! + (1 - beta2) * g * g;
      this.m[index] = m;
      this.v[index] = v;
      weights[index] =
        weights[index]! -
        (learningRate * (m / correction1)) / (Math.sqrt(v / correction2) + epsilon);
    }
  }
}
