/**
 * `LinearValueFunction`: the PPO critic for the embedded policy, V(s) as the mean of the weights
 * of hashed state features (task tokens, state tokens, task x state token pairs, recent
 * actions, a bias), fitted to returns by Adam on the squared error.
 *
 * The mean, not the sum: Adam moves every touched weight by about the learning rate, so a sum
 * over a state's features would move V(s) by the learning rate times the feature count in one
 * step. A web page's accessibility tree gives a state hundreds of features, and a summed critic
 * at 0.05 never settled there (value loss in the hundreds against returns in [-1, 1]); the mean
 * moves V(s) by at most about the learning rate whatever the state's size.
 */
import { ConfigError } from '../errors.js';
import type { Observation, Task } from '../mdp/schemas.js';
import { type AdamConfig, AdamOptimizer, type AdamOptions } from '../policy/adam.js';
import {
  combineHashes,
  FeatureNamespace,
  hashText,
  hashTokens,
  tokenize,
} from '../policy/hashed-features.js';

/** Options of {@link LinearValueFunction}. */
export interface LinearValueFunctionOptions {
  /** 2^hashBits weights. Default 16. */
  hashBits?: number;
  /** Recent actions used as features. Default 2. */
  historyWindow?: number;
  /** Adam hyper-parameters. Default learning rate 0.05. */
  optimizer?: AdamOptions;
}

/** Weights and optimiser state of a value function, for checkpoints. */
export interface LinearValueFunctionState {
  /** How V(s) reads the weights: the mean over the state's features (the only form). */
  prediction: 'mean';
  hashBits: number;
  historyWindow: number;
  optimizer: AdamConfig;
  adamSteps: number;
  weights: Float32Array;
  adamM: Float32Array;
  adamV: Float32Array;
}

/** A linear state-value function over hashed features. */
export class LinearValueFunction {
  readonly hashBits: number;
  readonly historyWindow: number;
  readonly weights: Float32Array;
  private readonly optimizer: AdamOptimizer;
  private readonly gradient: Float64Array;
  private readonly mask: number;
  private readonly cache = new Map<string, Int32Array>();

  constructor(options: LinearValueFunctionOptions = {}) {
    this.hashBits = options.hashBits ?? 16;
    if (!Number.isInteger(this.hashBits) || this.hashBits < 4 || this.hashBits > 26) {
      throw new ConfigError('valueFunction.hashBits must be an integer in [4, 26].', {
        field: 'valueFunction.hashBits',
      });
    }
    this.historyWindow = options.historyWindow ?? 2;
    const size = 1 << this.hashBits;
    this.mask = size - 1;
    this.weights = new Float32Array(size);
    this.gradient = new Float64Array(size);
    this.optimizer = new AdamOptimizer(size, { learningRate: 0.05, ...options.optimizer });
  }

  /** Hashed features of a state (cached). */
  features(task: Task, observation: Observation, previousActions: readonly string[]): Int32Array {
    const recent = previousActions.slice(Math.max(0, previousActions.length - this.historyWindow));
    const key = `${task.instruction}\u0001${observation.text}\u0001${recent.join('\u0002')}`;
    let features = this.cache.get(key);
    if (!features) {
      if (this.cache.size >= 200_000) this.cache.clear();
      const taskTokens = hashTokens(tokenize(task.instruction), FeatureNamespace.task);
      const stateTokens = hashTokens(tokenize(observation.text), FeatureNamespace.state);
      const out: number[] = [FeatureNamespace.bias & this.mask];
      for (const token of taskTokens) out.push(token & this.mask);
      for (const token of stateTokens) {
        out.push(token & this.mask);
        for (const taskToken of taskTokens) {
          out.push(
            combineHashes(combineHashes(taskToken, token), FeatureNamespace.taskState) & this.mask,
          );
        }
      }
      recent.forEach((action, position) => {
        out.push(
          hashText(
            `${recent.length - position}\u0001${action.trim().toLowerCase()}`,
            FeatureNamespace.history,
          ) & this.mask,
        );
      });
      features = Int32Array.from(out);
      this.cache.set(key, features);
    }
    return features;
  }

  /** V(s) for precomputed features: the mean of their weights. */
  predict(features: Int32Array): number {
    let value = 0;
    for (let index = 0; index < features.length; index += 1)
      value += this.weights[features[index]!]!;
    return features.length === 0 ? 0 : value / features.length;
  }

  /**
   * One Adam step on the mean of `0.5 * (V(s) - target)^2` over `batch`; returns that mean
   * before the step.
   */
  fitBatch(batch: readonly { features: Int32Array; target: number }[]): number {
    if (batch.length === 0) return 0;
    const touched = new Set<number>();
    let loss = 0;
    for (const { features, target } of batch) {
      const error = this.predict(features) - target;
      loss += 0.5 * error * error;
      const share = error / (features.length * batch.length);
      for (let index = 0; index < features.length; index += 1) {
        const feature = features[index]!;
        this.gradient[feature] = this.gradient[feature]! + share;
        touched.add(feature);
      }
    }
    this.optimizer.step(this.weights, this.gradient);
    for (const feature of touched) this.gradient[feature] = 0;
    return loss / batch.length;
  }

  /** Weights and optimiser state. */
  exportState(): LinearValueFunctionState {
    return {
      prediction: 'mean',
      hashBits: this.hashBits,
      historyWindow: this.historyWindow,
      optimizer: { ...this.optimizer.config },
      adamSteps: this.optimizer.steps,
      weights: Float32Array.from(this.weights),
      adamM: Float32Array.from(this.optimizer.m),
      adamV: Float32Array.from(this.optimizer.v),
    };
  }

  /** Rebuilds a value function from {@link LinearValueFunction.exportState}. */
  static fromState(state: LinearValueFunctionState): LinearValueFunction {
    if (state.prediction !== 'mean') {
      throw new ConfigError(
        `valueFunction state has prediction ${JSON.stringify(state.prediction)}; only 'mean' (V(s) as the mean of the state's feature weights) is read.`,
        { field: 'valueFunction.prediction' },
      );
    }
    const valueFunction = new LinearValueFunction({
      hashBits: state.hashBits,
      historyWindow: state.historyWindow,
      optimizer: state.optimizer,
    });
    valueFunction.weights.set(state.weights);
    valueFunction.optimizer.restore(state.adamM, state.adamV, state.adamSteps);
    return valueFunction;
  }
}
