/**
 * `PpoTrainer`: PPO with generalised advantage estimation over a linear value function of
 * hashed state features, fitted to the GAE returns after each policy update. With
 * `credit: 'fork'` the advantages come from forked continuations instead (a step's discounted
 * return-to-go against its state's Monte-Carlo value), and the critic is fitted to those
 * returns.
 */
import { ConfigError } from '../errors.js';
import type { Rollout } from '../rollout/rollout.js';
import { gaeAdvantages, whiten } from './advantages.js';
import { forkAdvantages } from './fork-credit.js';
import { LinearValueFunction } from './linear-value-function.js';
import {
  type AdvantageEstimate,
  PolicyGradientTrainer,
  type PolicyGradientTrainerOptions,
  type StepValues,
  type TrainingSample,
  type UpdateMetrics,
} from './policy-gradient-trainer.js';

/** Options of {@link PpoTrainer}. */
export interface PpoTrainerOptions extends PolicyGradientTrainerOptions {
  /** Discount. Default 0.99. */
  gamma?: number;
  /** GAE lambda. Default 0.95. */
  lambda?: number;
  /** The critic. Default: a new `LinearValueFunction` with 2^16 weights. */
  valueFunction?: LinearValueFunction;
  /** Passes over the iteration's steps when fitting the value function. Default 4. */
  valueEpochs?: number;
  /** Steps per value-function step. Default 64. */
  valueMiniBatchSize?: number;
  /** Whiten advantages over the iteration's batch (mean 0, std 1). Default true. */
  normalizeAdvantages?: boolean;
}

/** PPO with GAE and a linear critic. */
export class PpoTrainer extends PolicyGradientTrainer {
  /** The critic V(s). */
  readonly valueFunction: LinearValueFunction;
  private readonly gamma: number;
  private readonly lambda: number;
  private readonly valueEpochs: number;
  private readonly valueMiniBatchSize: number;
  private readonly normalizeAdvantages: boolean;
  private features: Int32Array[] = [];

  constructor(options: PpoTrainerOptions) {
    super(options, 1);
    this.gamma = options.gamma ?? 0.99;
    this.lambda = options.lambda ?? 0.95;
    for (const [field, value] of [
      ['gamma', this.gamma],
      ['lambda', this.lambda],
    ] as const) {
      if (!(value >= 0 && value <= 1)) {
        throw new ConfigError(`${field} must be in [0, 1].`, { field });
      }
    }
    this.valueFunction = options.valueFunction ?? new LinearValueFunction();
    this.valueEpochs = options.valueEpochs ?? 4;
    this.valueMiniBatchSize = options.valueMiniBatchSize ?? 64;
    this.normalizeAdvantages = options.normalizeAdvantages ?? true;
  }

  /** Every rollout: one the budget cut still teaches the critic-based update, by bootstrapping. */
  protected override rolloutsForUpdate(rollouts: readonly Rollout[]): Rollout[] {
    return [...rollouts];
  }

  protected override creditDiscount(): number {
    return this.gamma;
  }

  protected estimateAdvantages(
    rollouts: readonly Rollout[],
    samples: readonly TrainingSample[],
    values?: StepValues,
  ): AdvantageEstimate {
    this.features = samples.map(({ sample }) =>
      this.valueFunction.features(sample.task, sample.observation, sample.previousActions),
    );
    if (values) {
      const estimate = forkAdvantages(rollouts, values, this.gamma);
      return {
        advantages: this.normalizeAdvantages ? whiten(estimate.advantages) : estimate.advantages,
        returns: estimate.returns,
      };
    }
    const advantages: number[] = [];
    const returns: number[] = [];
    let offset = 0;
    for (const rollout of rollouts) {
      const count = rollout.steps.length;
      const values = this.features
        .slice(offset, offset + count)
        .map((features) => this.valueFunction.predict(features));
      // An episode a limit cut (step cap, budget) bootstraps from V(s_T); one the task ended
      // does not (Gymnasium's truncated / terminated).
      const lastValue = rollout.truncated
        ? this.valueFunction.predict(
            this.valueFunction.features(
              rollout.task,
              rollout.finalObservation,
              rollout.steps.map((step) => step.action),
            ),
          )
        : 0;
      const estimate = gaeAdvantages({
        rewards: rollout.steps.map((step) => step.reward),
        values,
        dones: rollout.steps.map((step) => step.done && !step.truncated),
        lastValue,
        gamma: this.gamma,
        lambda: this.lambda,
      });
      advantages.push(...estimate.advantages);
      returns.push(...estimate.returns);
      offset += count;
    }
    return { advantages: this.normalizeAdvantages ? whiten(advantages) : advantages, returns };
  }

  protected override afterPolicyUpdate(
    _samples: readonly TrainingSample[],
    estimate: AdvantageEstimate,
  ): Partial<UpdateMetrics> {
    const targets = estimate.returns ?? [];
    const order = targets.map((_, index) => index);
    let loss = 0;
    let batches = 0;
    for (let epoch = 0; epoch < this.valueEpochs; epoch += 1) {
      this.random.shuffle(order);
      for (let start = 0; start < order.length; start += this.valueMiniBatchSize) {
        const batch = order
          .slice(start, start + this.valueMiniBatchSize)
          .map((index) => ({ features: this.features[index]!, target: targets[index]! }));
        loss += this.valueFunction.fitBatch(batch);
        batches += 1;
      }
    }
    return { valueLoss: batches === 0 ? 0 : loss / batches };
  }
}
