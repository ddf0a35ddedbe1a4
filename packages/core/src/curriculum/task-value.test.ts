import { describe, expect, it } from 'vitest';
import { ConfigError, InvalidArgumentError } from '../errors.js';
import { corridorTask } from '../testing/corridor-domain.js';
import { rewardVariance, rolloutGroupsFromTrajectories, taskValues } from './task-value.js';

describe('rewardVariance (paper Eq. 7)', () => {
  it('is 0 for a group of one rollout and for all-equal rewards, exactly', () => {
    expect(rewardVariance([1])).toBe(0);
    expect(rewardVariance([0.7])).toBe(0);
    expect(rewardVariance([0, 0, 0, 0])).toBe(0);
    expect(rewardVariance([1, 1, 1])).toBe(0);
    // 0.1 * 3 / 3 is not 0.1 in floating point; equal rewards must still give exactly 0.
    expect(rewardVariance([0.1, 0.1, 0.1])).toBe(0);
  });

  it('equals p(1 - p) for binary rewards', () => {
    expect(rewardVariance([1, 0, 0, 0])).toBe(0.1875); // p = 1/4: 1/4 * 3/4
    expect(rewardVariance([1, 1, 0, 0])).toBe(0.25); // p = 1/2
    expect(rewardVariance([1, 1, 1, 0, 0])).toBeCloseTo(0.24, 15); // p = 3/5: 3/5 * 2/5
    expect(rewardVariance([0, 1, 1, 1, 1, 1, 1, 1])).toBeCloseTo(7 / 64, 15); // p = 7/8
  });

  it('matches hand-computed population variances of graded rewards', () => {
    // mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5; 5 / 4
    expect(rewardVariance([1, 2, 3, 4])).toBe(1.25);
    // mean 0.5; (0.25 + 0 + 0.25) / 3
    expect(rewardVariance([0, 0.5, 1])).toBeCloseTo(1 / 6, 15);
    // mean 0; (4 + 4) / 2: the population (1/n), not the sample (1/(n-1)), variance
    expect(rewardVariance([-2, 2])).toBe(4);
  });

  it('rejects an empty group and non-finite rewards', () => {
    expect(() => rewardVariance([])).toThrow(/at least one reward/);
    expect(() => rewardVariance([1, Number.NaN])).toThrow(/non-finite reward \(NaN\)/);
    expect(() => rewardVariance([Number.POSITIVE_INFINITY])).toThrow(InvalidArgumentError);
  });
});

describe('taskValues', () => {
  it('gives variance, mean and group size per task, merging groups of the same task', () => {
    const values = taskValues([
      { taskId: 'a', rewards: [1, 0] },
      { taskId: 'b', rewards: [1, 1, 1, 1] },
      { taskId: 'a', rewards: [0, 0] },
    ]);
    expect(values).toEqual([
      { taskId: 'a', variance: 0.1875, meanReward: 0.25, rollouts: 4 },
      { taskId: 'b', variance: 0, meanReward: 1, rollouts: 4 },
    ]);
  });

  it('names the empty group', () => {
    let error: unknown;
    try {
      taskValues([
        { taskId: 'a', rewards: [1] },
        { taskId: 'b', rewards: [] },
      ]);
    } catch (caught) {
      error = caught;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).field).toBe('groups.1.rewards');
    expect((error as Error).message).toMatch(/task b/);
  });
});

describe('rolloutGroupsFromTrajectories', () => {
  it('groups returns by task in order of first appearance', () => {
    const a = corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 });
    const b = corridorTask({ length: 3, keyRoom: 0, doorRoom: 2 });
    const step = (reward: number) => ({
      observation: { text: 'room' },
      action: 'go right',
      reward,
      done: reward > 0,
    });
    const groups = rolloutGroupsFromTrajectories([
      { task: b, steps: [step(0), step(1)] },
      { task: a, steps: [step(0)] },
      { task: b, steps: [step(0), step(0)] },
      { task: a, steps: [] },
    ]);
    expect(groups).toEqual([
      { taskId: b.id, rewards: [1, 0] },
      { taskId: a.id, rewards: [0, 0] },
    ]);
  });
});
