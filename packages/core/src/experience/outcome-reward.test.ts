import { describe, expect, it } from 'vitest';
import { applyRewardRule, RewardRuleSchema } from './outcome-reward.js';

const outcome = RewardRuleSchema.parse({});

describe('applyRewardRule', () => {
  it('rewards success only on the final step under the outcome rule', () => {
    expect(applyRewardRule({ done: true, success: true, reward: 0.3 }, outcome)).toEqual({
      reward: 1,
      done: true,
      success: true,
    });
    expect(applyRewardRule({ done: true, success: false, reward: 1 }, outcome)).toEqual({
      reward: 0,
      done: true,
      success: false,
    });
    expect(applyRewardRule({ done: false, success: true }, outcome)).toEqual({
      reward: 0,
      done: false,
      success: false,
    });
  });

  it('lets success end the episode when asked', () => {
    const rule = RewardRuleSchema.parse({ successEndsEpisode: true, successReward: 10 });
    expect(applyRewardRule({ done: false, success: true }, rule)).toEqual({
      reward: 10,
      done: true,
      success: true,
    });
  });

  it('passes the model reward through in model mode, clamped to the reward range', () => {
    const rule = RewardRuleSchema.parse({ mode: 'model' });
    expect(applyRewardRule({ done: true, success: false, reward: 0.75 }, rule).reward).toBe(0.75);
    expect(applyRewardRule({ done: true, success: false, reward: 3 }, rule).reward).toBe(1);
    expect(applyRewardRule({ done: false, success: false, reward: -2 }, rule).reward).toBe(0);
    expect(applyRewardRule({ done: true, success: true }, rule).reward).toBe(1);
    // A success earns the success reward, whatever the model wrote.
    expect(applyRewardRule({ done: true, success: true, reward: 0.3 }, rule).reward).toBe(1);
    expect(applyRewardRule({ done: false, success: false }, rule).reward).toBe(0);
  });
});
