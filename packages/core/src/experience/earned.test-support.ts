/** Test support: a prediction as the synthetic environment pays it. */
import type { ExperienceModel, ExperiencePrediction } from './experience-model.js';
import { applyRewardRule, rewardRuleOf } from './outcome-reward.js';

/** `prediction` with `model`'s reward rule applied: the reward, end and success a step gets. */
export function earned(
  model: Pick<ExperienceModel, 'rewardRule'>,
  prediction: ExperiencePrediction,
): ExperiencePrediction & { reward: number } {
  return { ...prediction, ...applyRewardRule(prediction, rewardRuleOf(model)) };
}
