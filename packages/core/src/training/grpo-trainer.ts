/**
 * `GrpoTrainer`: group-relative policy optimisation. Each task is rolled out n times per
 * iteration; an episode's reward is normalised within its group (GRPO) or only centred
 * (Dr.GRPO) and broadcast to every step of the episode; no value function.
 */
import { broadcastToSteps, groupNormalizedAdvantages } from './advantages.js';
import {
  type AdvantageEstimate,
  PolicyGradientTrainer,
  type PolicyGradientTrainerOptions,
  type TrainingSample,
} from './policy-gradient-trainer.js';
import type { Rollout } from './rollout.js';

/** Options of {@link GrpoTrainer}. */
export interface GrpoTrainerOptions extends PolicyGradientTrainerOptions {
  /** `grpo` divides by the group's std; `dr-grpo` only subtracts the group mean. Default `grpo`. */
  estimator?: 'grpo' | 'dr-grpo';
  /** Added to the group std. Default 1e-6. */
  epsilon?: number;
}

/** GRPO (or Dr.GRPO) over groups of rollouts per task. */
export class GrpoTrainer extends PolicyGradientTrainer {
  private readonly estimator: 'grpo' | 'dr-grpo';
  private readonly epsilon: number;

  constructor(options: GrpoTrainerOptions) {
    super(options, 8);
    this.estimator = options.estimator ?? 'grpo';
    this.epsilon = options.epsilon ?? 1e-6;
  }

  protected estimateAdvantages(
    rollouts: readonly Rollout[],
    _samples: readonly TrainingSample[],
  ): AdvantageEstimate {
    const episodeAdvantages = groupNormalizedAdvantages(
      rollouts.map((rollout) => rollout.totalReward),
      rollouts.map((rollout) => rollout.groupId),
      { normalizeByStd: this.estimator === 'grpo', epsilon: this.epsilon },
    );
    return {
      advantages: broadcastToSteps(
        episodeAdvantages,
        rollouts.map((rollout) => rollout.steps.length),
      ),
    };
  }
}
