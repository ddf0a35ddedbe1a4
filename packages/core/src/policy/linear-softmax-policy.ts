/**
 * `LinearSoftmaxPolicy`: the embedded default policy. A softmax over the candidate actions,
 * each scored by a linear function of hashed sparse features: the `lexical` set of
 * (task-instruction token x action token), (state token x action token),
 * (recent action x action) and the action itself; or the `relational` set
 * (`relational-features.ts`: how the action's arguments relate to the instruction and the
 * episode so far, with no identity of them); or both. Exact log-probabilities, entropies and
 * gradients; Adam; save/load with the optimiser state; trains on a CPU core.
 */
import { join } from 'node:path';
import { CheckpointError, ConfigError } from '../errors.js';
import type { Observation } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import { type AdamConfig, AdamOptimizer, type AdamOptions } from './adam.js';
import { CandidateFeatures, FEATURE_SETS, type PolicyFeatureSet } from './candidate-features.js';
import {
  type LinearSoftmaxPolicyState,
  readLinearSoftmaxPolicyFile,
  writeLinearSoftmaxPolicyFile,
} from './linear-softmax-policy-file.js';
import {
  candidateActionsOf,
  type ImitationMetrics,
  type ImitationOptions,
  type Policy,
  type PolicyContext,
  type PolicyDecision,
  type PolicySample,
  type PolicyUpdateBatch,
  type PolicyUpdateMetrics,
  type PolicyUpdateOptions,
  type TrainablePolicy,
} from './policy.js';
import { ppoStepLoss } from './ppo-loss.js';
import { entropyOf, logSoftmax, softmaxLogitGradient } from './softmax.js';

export type { PolicyFeatureSet } from './candidate-features.js';
export type {
  LinearSoftmaxPolicyHeader,
  LinearSoftmaxPolicyState,
} from './linear-softmax-policy-file.js';

/** Options of {@link LinearSoftmaxPolicy}. */
export interface LinearSoftmaxPolicyOptions {
  /** Seeds weight initialisation and is the default sampling stream. */
  random: SeededRandom;
  /** The weight vector has 2^hashBits entries. Default 18 (262,144 weights, 1 MiB). */
  hashBits?: number;
  /** How many of the most recent actions are features. Default 2. */
  historyWindow?: number;
  /** Standard deviation of the initial weights; 0 (default) starts from the uniform policy. */
  initScale?: number;
  /** Adam hyper-parameters. Default learning rate 0.05. */
  optimizer?: AdamOptions;
  /** Identifies the policy in logs and exports. Default `linear-softmax`. */
  id?: string;
  /** Most (state, action) feature lists kept in the cache before it is cleared. Default 200,000. */
  cacheSize?: number;
  /**
   * Which features score an action. `lexical` (default): the instruction's, the state's and
   * the recent actions' tokens paired with the action's, and the action itself (what it
   * learns is tied to the words of the worlds it saw). `relational`: how the action's
   * arguments relate to the instruction and to the whole episode so far (named in the
   * instruction, seen now or earlier, acted on before, what acting on them revealed), with
   * the instruction x action token pairs; nothing names a particular object or place, so
   * what it learns carries to other worlds. `lexical+relational`: both.
   */
  features?: PolicyFeatureSet;
}

/** Features of every candidate at one decision, and the index of the action taken. */
export interface PreparedDecision {
  /** Hashed feature indices of each candidate action (each feature has value 1). */
  features: readonly Int32Array[];
  /** Index of the action taken among the candidates (-1 when preparing to act). */
  actionIndex: number;
}

/** The file `saveState` writes into its directory. */
const STATE_FILE = 'linear-softmax-policy.bin';

/**
 * The embedded default policy. Besides the batched {@link TrainablePolicy} methods it
 * exposes its exact in-process path (`prepare`, `evaluate`, `accumulateGradient`,
 * `applyGradient`) for tests and custom losses.
 */
export class LinearSoftmaxPolicy implements Policy, TrainablePolicy {
  readonly id: string;
  readonly hashBits: number;
  readonly historyWindow: number;
  /** Which features score an action ({@link LinearSoftmaxPolicyOptions.features}). */
  readonly features: PolicyFeatureSet;
  /** The weights, one per hashed feature. */
  readonly weights: Float32Array;
  private readonly optimizer: AdamOptimizer;
  private readonly random: SeededRandom;
  private readonly candidateFeatures: CandidateFeatures;
  private readonly gradient: Float64Array;
  private readonly touched: number[] = [];
  private readonly touchedMark: Uint8Array;
  private frozen = false;

  constructor(options: LinearSoftmaxPolicyOptions) {
    const hashBits = options.hashBits ?? 18;
    if (!Number.isInteger(hashBits) || hashBits < 4 || hashBits > 26) {
      throw new ConfigError('policy.hashBits must be an integer in [4, 26].', {
        field: 'policy.hashBits',
      });
    }
    const historyWindow = options.historyWindow ?? 2;
    if (!Number.isInteger(historyWindow) || historyWindow < 0) {
      throw new ConfigError('policy.historyWindow must be a non-negative integer.', {
        field: 'policy.historyWindow',
      });
    }
    const features = options.features ?? 'lexical';
    if (!FEATURE_SETS.includes(features)) {
      throw new ConfigError(
        `policy.features must be one of ${FEATURE_SETS.join(', ')}; got ${String(features)}.`,
        { field: 'policy.features' },
      );
    }
    this.features = features;
    this.id = options.id ?? 'linear-softmax';
    this.hashBits = hashBits;
    this.historyWindow = historyWindow;
    const size = 1 << hashBits;
    this.weights = new Float32Array(size);
    this.optimizer = new AdamOptimizer(size, { learningRate: 0.05, ...options.optimizer });
    this.random = options.random;
    this.candidateFeatures = new CandidateFeatures(
      features,
      hashBits,
      historyWindow,
      options.cacheSize ?? 200_000,
      this.id,
    );
    this.gradient = new Float64Array(size);
    this.touchedMark = new Uint8Array(size);
    const initScale = options.initScale ?? 0;
    if (initScale > 0) {
      const init = options.random.fork('linear-softmax-init');
      for (let index = 0; index < size; index += 1) this.weights[index] = initScale * init.normal();
    }
  }

  /** Hyper-parameters of the optimiser. */
  get optimizerConfig(): AdamConfig {
    return this.optimizer.config;
  }

  /** Number of optimiser steps taken so far. */
  get updates(): number {
    return this.optimizer.steps;
  }

  async act(observation: Observation, context: PolicyContext): Promise<PolicyDecision> {
    const { candidates, logProbabilities } = this.distribution(observation, context);
    let index = 0;
    if (context.greedy) {
      for (let other = 1; other < logProbabilities.length; other += 1) {
        if (logProbabilities[other]! > logProbabilities[index]!) index = other;
      }
    } else {
      const probabilities = logProbabilities.map((logp) => Math.exp(logp));
      index = (context.random ?? this.random).weightedIndex(probabilities);
    }
    return { action: candidates[index]!, logprob: logProbabilities[index]! };
  }

  /** pi(.|s) over the candidates at `observation`, as log-probabilities in candidate order. */
  distribution(
    observation: Observation,
    context: Pick<PolicyContext, 'task' | 'history' | 'candidates'>,
  ): { candidates: readonly string[]; logProbabilities: Float64Array } {
    const candidates = candidateActionsOf(observation, context.candidates);
    const features = this.candidateFeatures.of(
      context.task,
      observation,
      context.history.map((step) => step.action),
      context.history.map((step) => step.observation.text),
      candidates,
    );
    return { candidates, logProbabilities: this.logProbabilities({ features, actionIndex: -1 }) };
  }

  prepare(sample: PolicySample): PreparedDecision {
    const features = this.candidateFeatures.of(
      sample.task,
      sample.observation,
      sample.previousActions,
      sample.previousObservations,
      sample.candidates,
    );
    const actionIndex = sample.candidates.indexOf(sample.action);
    if (actionIndex < 0) {
      throw new ConfigError(
        `Action "${sample.action}" of task ${sample.task.id} is not among its candidates (${sample.candidates.join(' | ')}); the embedded policy can only score actions it chose from.`,
        { field: 'action' },
      );
    }
    return { features, actionIndex };
  }

  evaluate(prepared: PreparedDecision): { logprob: number; entropy: number } {
    const logProbabilities = this.logProbabilities(prepared);
    return {
      logprob: logProbabilities[prepared.actionIndex]!,
      entropy: entropyOf(logProbabilities),
    };
  }

  /** log pi(candidate | s) for every candidate of `prepared`. */
  logProbabilities(prepared: PreparedDecision): Float64Array {
    const logits = new Float64Array(prepared.features.length);
    for (let index = 0; index < logits.length; index += 1) {
      const features = prepared.features[index]!;
      let sum = 0;
      for (let position = 0; position < features.length; position += 1) {
        sum += this.weights[features[position]!]!;
      }
      logits[index] = sum;
    }
    return logSoftmax(logits);
  }

  accumulateGradient(prepared: PreparedDecision, dLogprob: number, dEntropy: number): void {
    if (dLogprob === 0 && dEntropy === 0) return;
    const logitGradient = softmaxLogitGradient(
      this.logProbabilities(prepared),
      prepared.actionIndex,
      dLogprob,
      dEntropy,
    );
    for (let index = 0; index < logitGradient.length; index += 1) {
      const g = logitGradient[index]!;
      if (g === 0) continue;
      const features = prepared.features[index]!;
      for (let position = 0; position < features.length; position += 1) {
        const feature = features[position]!;
        this.gradient[feature] = this.gradient[feature]! + g;
        if (this.touchedMark[feature] === 0) {
          this.touchedMark[feature] = 1;
          this.touched.push(feature);
        }
      }
    }
  }

  /** The buffered gradient (dense view; non-zero only at touched features). */
  gradientBuffer(): Float64Array {
    return this.gradient;
  }

  zeroGradient(): void {
    for (const feature of this.touched) {
      this.gradient[feature] = 0;
      this.touchedMark[feature] = 0;
    }
    this.touched.length = 0;
  }

  applyGradient(options: { maxGradNorm?: number; learningRate?: number } = {}): {
    gradNorm: number;
  } {
    this.ensureTrainable();
    let squared = 0;
    for (const feature of this.touched) squared += this.gradient[feature]! ** 2;
    const gradNorm = Math.sqrt(squared);
    if (options.maxGradNorm !== undefined && gradNorm > options.maxGradNorm && gradNorm > 0) {
      const scale = options.maxGradNorm / gradNorm;
      for (const feature of this.touched) this.gradient[feature] = this.gradient[feature]! * scale;
    }
    this.optimizer.step(this.weights, this.gradient, options.learningRate);
    this.zeroGradient();
    return { gradNorm };
  }

  async logprobs(samples: readonly PolicySample[]): Promise<number[]> {
    return samples.map((sample) => this.evaluate(this.prepare(sample)).logprob);
  }

  async update(
    batch: PolicyUpdateBatch,
    options: PolicyUpdateOptions,
  ): Promise<PolicyUpdateMetrics> {
    this.ensureTrainable();
    const { samples, advantages, behaviourLogprobs, referenceLogprobs } = batch;
    if (advantages.length !== samples.length || behaviourLogprobs.length !== samples.length) {
      throw new ConfigError(
        `update(): ${samples.length} samples but ${advantages.length} advantages and ${behaviourLogprobs.length} behaviour log-probabilities.`,
        { field: 'batch' },
      );
    }
    const prepared = samples.map((sample) => this.prepare(sample));
    let mismatch = 0;
    prepared.forEach((entry, index) => {
      mismatch += Math.abs(behaviourLogprobs[index]! - this.evaluate(entry).logprob);
    });
    const totals = { loss: 0, policyLoss: 0, kl: 0, entropy: 0, clipped: 0, evaluations: 0 };
    let gradNormTotal = 0;
    let gradientSteps = 0;
    const order = samples.map((_, index) => index);
    const batchSize = options.miniBatchSize ?? Math.max(1, samples.length);
    for (let epoch = 0; epoch < options.epochs && samples.length > 0; epoch += 1) {
      options.signal?.throwIfAborted();
      options.random.shuffle(order);
      for (let start = 0; start < order.length; start += batchSize) {
        const miniBatch = order.slice(start, start + batchSize);
        this.zeroGradient();
        for (const index of miniBatch) {
          const entry = prepared[index]!;
          const { logprob, entropy } = this.evaluate(entry);
          const stepLoss = ppoStepLoss(
            {
              logprob,
              oldLogprob: behaviourLogprobs[index]!,
              ...(referenceLogprobs ? { referenceLogprob: referenceLogprobs[index]! } : {}),
              advantage: advantages[index]!,
              entropy,
            },
            options.loss,
          );
          // Token-mean style aggregation: every step of the mini-batch weighs the same.
          this.accumulateGradient(
            entry,
            stepLoss.dLogprob / miniBatch.length,
            stepLoss.dEntropy / miniBatch.length,
          );
          totals.loss += stepLoss.loss;
          totals.policyLoss += stepLoss.policyLoss;
          totals.kl += stepLoss.kl;
          totals.entropy += stepLoss.entropy;
          totals.clipped += stepLoss.clipped ? 1 : 0;
          totals.evaluations += 1;
        }
        gradNormTotal += this.applyGradient(gradientOptions(options)).gradNorm;
        gradientSteps += 1;
      }
    }
    const evaluations = Math.max(1, totals.evaluations);
    return {
      loss: totals.loss / evaluations,
      policyLoss: totals.policyLoss / evaluations,
      kl: totals.kl / evaluations,
      entropy: totals.entropy / evaluations,
      clipFraction: totals.clipped / evaluations,
      gradNorm: gradNormTotal / Math.max(1, gradientSteps),
      gradientSteps,
      behaviourMismatch: samples.length === 0 ? 0 : mismatch / samples.length,
    };
  }

  async imitate(
    samples: readonly PolicySample[],
    options: ImitationOptions,
  ): Promise<ImitationMetrics> {
    this.ensureTrainable();
    const prepared = samples.map((sample) => this.prepare(sample));
    const order = samples.map((_, index) => index);
    options.random.shuffle(order);
    const batchSize = options.miniBatchSize ?? Math.max(1, samples.length);
    let negativeLogLikelihood = 0;
    let gradientSteps = 0;
    for (let start = 0; start < order.length; start += batchSize) {
      options.signal?.throwIfAborted();
      const miniBatch = order.slice(start, start + batchSize);
      this.zeroGradient();
      for (const index of miniBatch) {
        const entry = prepared[index]!;
        negativeLogLikelihood -= this.evaluate(entry).logprob;
        // loss = -log pi(a*|s): d loss / d logprob = -1, averaged over the mini-batch.
        this.accumulateGradient(entry, -1 / miniBatch.length, 0);
      }
      this.applyGradient(gradientOptions(options));
      gradientSteps += 1;
    }
    return {
      negativeLogLikelihood: samples.length === 0 ? 0 : negativeLogLikelihood / samples.length,
      gradientSteps,
    };
  }

  /** A frozen copy of the current weights (the KL reference); `applyGradient` on it throws. */
  async snapshot(): Promise<LinearSoftmaxPolicy> {
    const copy = Object.create(LinearSoftmaxPolicy.prototype) as LinearSoftmaxPolicy;
    Object.assign(copy, this, {
      id: `${this.id}@${this.optimizer.steps}`,
      weights: Float32Array.from(this.weights),
      // Zero moments of full size, so the snapshot saves and loads like any policy.
      optimizer: new AdamOptimizer(this.weights.length, this.optimizer.config),
      gradient: new Float64Array(0),
      touched: [],
      touchedMark: new Uint8Array(0),
      frozen: true,
    });
    return copy;
  }

  async resetOptimizer(): Promise<void> {
    this.ensureTrainable();
    this.optimizer.reset();
  }

  async saveState(directory: string): Promise<void> {
    await this.save(join(directory, STATE_FILE));
  }

  async loadState(directory: string): Promise<void> {
    const file = join(directory, STATE_FILE);
    const loaded = await LinearSoftmaxPolicy.load(file);
    if (
      loaded.hashBits !== this.hashBits ||
      loaded.historyWindow !== this.historyWindow ||
      loaded.features !== this.features
    ) {
      throw new CheckpointError(
        `${file} holds a policy with hashBits ${loaded.hashBits}, historyWindow ${loaded.historyWindow} and features ${loaded.features}; this policy has ${this.hashBits}, ${this.historyWindow} and ${this.features}. Build the policy with the run's configuration (policy.features '${loaded.features}' for this file).`,
        { path: file },
      );
    }
    this.weights.set(loaded.weights);
    this.random.setState(loaded.random.getState());
    if (!this.frozen) {
      this.optimizer.restore(loaded.optimizer.m, loaded.optimizer.v, loaded.optimizer.steps);
    }
  }

  private ensureTrainable(): void {
    if (this.frozen) {
      throw new ConfigError(`Policy ${this.id} is a frozen snapshot and cannot be updated.`);
    }
  }

  /** Weights, optimiser moments and configuration, for in-memory checkpoints. */
  exportState(): LinearSoftmaxPolicyState {
    return {
      header: {
        format: 'dreamgym-linear-softmax-policy',
        version: 2,
        id: this.id,
        hashBits: this.hashBits,
        historyWindow: this.historyWindow,
        features: this.features,
        optimizer: { ...this.optimizer.config },
        adamSteps: this.optimizer.steps,
        random: this.random.getState(),
      },
      weights: Float32Array.from(this.weights),
      adamM: Float32Array.from(this.optimizer.m),
      adamV: Float32Array.from(this.optimizer.v),
    };
  }

  /** Rebuilds a policy from {@link LinearSoftmaxPolicy.exportState}, optimiser and RNG included. */
  static fromState(state: LinearSoftmaxPolicyState): LinearSoftmaxPolicy {
    const { header } = state;
    const size = 1 << header.hashBits;
    for (const [name, array] of [
      ['weights', state.weights],
      ['adamM', state.adamM],
      ['adamV', state.adamV],
    ] as const) {
      if (array.length !== size) {
        throw new CheckpointError(
          `Policy state ${name} has ${array.length} values; hashBits ${header.hashBits} needs ${size}.`,
        );
      }
    }
    const policy = new LinearSoftmaxPolicy({
      random: SeededRandom.fromState(header.random),
      hashBits: header.hashBits,
      historyWindow: header.historyWindow,
      optimizer: header.optimizer,
      id: header.id,
      features: header.features,
    });
    policy.weights.set(state.weights);
    policy.optimizer.restore(state.adamM, state.adamV, header.adamSteps);
    return policy;
  }

  /** Writes the policy to one binary file, atomically (the format: `linear-softmax-policy-file.ts`). */
  async save(file: string): Promise<void> {
    await writeLinearSoftmaxPolicyFile(file, this.exportState());
  }

  /** Reads a policy written by {@link LinearSoftmaxPolicy.save}; throws a `CheckpointError` saying what is wrong. */
  static async load(file: string): Promise<LinearSoftmaxPolicy> {
    return LinearSoftmaxPolicy.fromState(await readLinearSoftmaxPolicyFile(file));
  }
}

function gradientOptions(options: { maxGradNorm?: number; learningRate?: number }): {
  maxGradNorm?: number;
  learningRate?: number;
} {
  return {
    ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
    ...(options.learningRate === undefined ? {} : { learningRate: options.learningRate }),
  };
}
