/**
 * `GrpoTrainer`: group-relative policy optimisation. Each task is rolled out n times per
 * iteration; an episode's reward is normalised within its group (GRPO) or only centred
 * (Dr.GRPO) and broadcast to every step of the episode; no value function. With
 * `credit: 'fork'` each step gets its own advantage instead: its return-to-go against its
 * state's value from forked continuations.
 */

import type { Rollout } from '../rollout/rollout.js';
import { broadcastToSteps, groupNormalizedAdvantages, weighEpisodesAlike } from './advantages.js';
import { forkAdvantages } from './fork-credit.js';
import {
  type AdvantageEstimate,
  PolicyGradientTrainer,
  type PolicyGradientTrainerOptions,
  type StepValues,
  type TrainingSample,
} from './policy-gradient-trainer.js';

/** Options of {@link GrpoTrainer}. */
export interface GrpoTrainerOptions extends PolicyGradientTrainerOptions {
  /** `grpo` divides by the group's std; `dr-grpo` only subtracts the group mean. Default `grpo`. */
  estimator?: 'grpo' | 'dr-grpo';
  /** Added to the group std. Default 1e-6. */
  epsilon?: number;
  /**
   * How episodes weigh in the update. `step` (default): every step counts once, so a long
   * episode weighs as much as its length (the token-mean of most GRPO code). `episode`: each
   * episode's steps share its advantage in proportion 1/length (scaled by the batch's mean
   * length), so every episode weighs the same; in agent tasks, where failures run to the step
   * limit and successes end early, `step` lets the failures' push-down on the actions both
   * share outweigh the success's push-up, and the policy drifts towards random.
   */
  episodeWeighting?: 'step' | 'episode';
}

/** GRPO (or Dr.GRPO) over groups of rollouts per task. */
export class GrpoTrainer extends PolicyGradientTrainer {
  private readonly estimator: 'grpo' | 'dr-grpo';
  private readonly epsilon: number;
  private readonly episodeWeighting: 'step' | 'episode';

  constructor(options: GrpoTrainerOptions) {
    super(options, 8);
    this.estimator = options.estimator ?? 'grpo';
    this.epsilon = options.epsilon ?? 1e-6;
    this.episodeWeighting = options.episodeWeighting ?? 'step';
  }

  protected estimateAdvantages(
    rollouts: readonly Rollout[],
    _samples: readonly TrainingSample[],
    values?: StepValues,
  ): AdvantageEstimate {
    const lengths = rollouts.map((rollout) => rollout.steps.length);
    if (values) {
      // Fork credit: each step's own advantage, G_t - V(s_t), undiscounted as GRPO's reward.
      const { advantages } = forkAdvantages(rollouts, values, 1);
      if (this.episodeWeighting === 'step') return { advantages };
      const weights = broadcastToSteps(
        weighEpisodesAlike(
          lengths.map(() => 1),
          lengths,
        ),
        lengths,
      );
      return { advantages: advantages.map((advantage, step) => advantage * weights[step]!) };
    }
    const episodeAdvantages = groupNormalizedAdvantages(
      rollouts.map((rollout) => rollout.totalReward),
      rollouts.map((rollout) => rollout.groupId),
      { normalizeByStd: this.estimator === 'grpo', epsilon: this.epsilon },
    );
    const weighted =
      this.episodeWeighting === 'episode'
        ? weighEpisodesAlike(episodeAdvantages, lengths)
        : episodeAdvantages;
    return { advantages: broadcastToSteps(weighted, lengths) };
  }
}
