/**
 * The reward rule: how the synthetic environment turns what an experience model predicted
 * (termination, success, its own reward estimate) into r_{t+1}, once per step and nowhere
 * else. The paper's outcome reward (1 at the final step on success, else 0) by default, or
 * the model's own reward for domains with graded rewards.
 */
import { z } from 'zod';

/** How a judged outcome becomes r_{t+1} and `done`. */
export const RewardRuleSchema = z.object({
  /**
   * `outcome` (default): `successReward` only on the step that ends the episode with
   * success, `failureReward` on every other step, whatever reward the model wrote.
   * `model`: `successReward` on a successful final step; on every other step the model's own
   * reward number (absent: `failureReward`), clamped to [`failureReward`, `successReward`]
   * (for domains with graded rewards such as WebShop's attribute match).
   */
  mode: z.enum(['outcome', 'model']).default('outcome'),
  /** Reward of a successful final step. Default 1. */
  successReward: z.number().finite().default(1),
  /** Reward of every other step. Default 0. */
  failureReward: z.number().finite().default(0),
  /**
   * What a judged success on a step the model did not mark `done` means. `false`
   * (default): nothing; the step earns `failureReward` and the episode goes on, so only a
   * final step can be rewarded. `true`: success ends the episode (done, `successReward`).
   */
  successEndsEpisode: z.boolean().default(false),
});

/** A reward rule as written by users (every field optional). */
export type RewardRuleInput = z.input<typeof RewardRuleSchema>;
/** A reward rule with defaults applied. */
export type RewardRule = z.output<typeof RewardRuleSchema>;

/** What the model judged for one step. */
export interface JudgedOutcome {
  done: boolean;
  success: boolean;
  /** The model's own reward, used in `model` mode (absent: the failure reward). */
  reward?: number;
}

/**
 * Applies `rule` to a judged outcome.
 *
 * @example
 * applyRewardRule({ done: true, success: true }, RewardRuleSchema.parse({})) // { reward: 1, done: true, success: true }
 * applyRewardRule({ done: false, success: true }, RewardRuleSchema.parse({})) // { reward: 0, done: false, success: false }
 */
export function applyRewardRule(
  judged: JudgedOutcome,
  rule: RewardRule,
): { reward: number; done: boolean; success: boolean } {
  const done = judged.done || (judged.success && rule.successEndsEpisode);
  const success = judged.success && done;
  if (rule.mode === 'model' && !success) {
    const raw = judged.reward ?? rule.failureReward;
    const low = Math.min(rule.successReward, rule.failureReward);
    const high = Math.max(rule.successReward, rule.failureReward);
    return { reward: Math.min(high, Math.max(low, raw)), done, success };
  }
  return { reward: success ? rule.successReward : rule.failureReward, done, success };
}

/**
 * The reward rule a synthetic environment applies to `model`'s predictions: `override` (the
 * environment's own option) if given, else the rule the model declares, else the outcome reward.
 */
export function rewardRuleOf(
  model: { readonly rewardRule?: RewardRuleInput },
  override?: RewardRuleInput,
): RewardRule {
  return RewardRuleSchema.parse(override ?? model.rewardRule ?? {});
}
