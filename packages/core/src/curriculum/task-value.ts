/**
 * Task value (paper Eq. 7): the reward variance of a group of n rollouts of one task,
 * `V_tau = 1/n * sum_i (r_i - mean(r))^2`. Tasks the policy always solves or always
 * fails have value 0; tasks it solves about half the time have the most, since they
 * carry the most learning signal for group-relative RL. With outcome rewards in {0, 1}
 * and success rate p the value is p(1 - p).
 */
import { ConfigError, InvalidArgumentError } from '../errors.js';
import type { Step, Task } from '../mdp/schemas.js';

/** The rewards of a group of rollouts of one task (one reward per rollout: its return). */
export interface TaskRolloutGroup {
  taskId: string;
  /** One reward per rollout, e.g. 1 for a success and 0 for a failure. */
  rewards: readonly number[];
}

/** A task's value computed from one group of rollouts. */
export interface TaskValue {
  taskId: string;
  /** Population variance of the group's rewards (Eq. 7); 0 when all rewards are equal. */
  variance: number;
  /** Mean reward of the group (the success rate, with binary rewards). */
  meanReward: number;
  /** Number of rollouts n in the group. */
  rollouts: number;
}

/**
 * Population variance `1/n * sum_i (r_i - mean(r))^2` of `rewards` (paper Eq. 7).
 * Exactly 0 when all rewards are equal, so float rounding never makes a solved task
 * look informative. Throws an `InvalidArgumentError` on an empty group or a non-finite reward.
 */
export function rewardVariance(rewards: readonly number[]): number {
  if (rewards.length === 0) {
    throw new InvalidArgumentError('rewardVariance() needs at least one reward.', {
      argument: 'rewards',
    });
  }
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const reward of rewards) {
    if (!Number.isFinite(reward)) {
      throw new InvalidArgumentError(`rewardVariance() got a non-finite reward (${reward}).`, {
        argument: 'rewards',
      });
    }
    sum += reward;
    min = Math.min(min, reward);
    max = Math.max(max, reward);
  }
  if (min === max) return 0;
  const mean = sum / rewards.length;
  let squares = 0;
  for (const reward of rewards) squares += (reward - mean) ** 2;
  return squares / rewards.length;
}

/**
 * The value of each task from its rollout group, in input order. A task id that appears
 * in several groups has them merged into one group first (a group is all rollouts of a
 * task in one iteration). Throws a `ConfigError` naming the group for an empty one.
 */
export function taskValues(groups: Iterable<TaskRolloutGroup>): TaskValue[] {
  const merged = new Map<string, number[]>();
  let position = 0;
  for (const group of groups) {
    if (group.rewards.length === 0) {
      throw new ConfigError(
        `Rollout group ${position} (task ${group.taskId}) has no rewards; a task value needs at least one rollout.`,
        { field: `groups.${position}.rewards` },
      );
    }
    const rewards = merged.get(group.taskId);
    if (rewards) rewards.push(...group.rewards);
    else merged.set(group.taskId, [...group.rewards]);
    position += 1;
  }
  return [...merged].map(([taskId, rewards]) => ({
    taskId,
    variance: rewardVariance(rewards),
    meanReward: rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length,
    rollouts: rewards.length,
  }));
}

/**
 * The rewards of an iteration's rollouts, grouped by task as they finish, for
 * `Curriculum.observe`: the one place rollout groups are built (the loop, the served run and
 * {@link rolloutGroupsFromTrajectories} add to one). Groups come in order of each task's first
 * rollout; `toJSON` is what a checkpoint keeps of an iteration in progress.
 */
export class RewardGroups {
  private readonly rewards = new Map<string, number[]>();

  /** Groups saved with `toJSON`. */
  static fromJSON(groups: Iterable<TaskRolloutGroup>): RewardGroups {
    const restored = new RewardGroups();
    for (const group of groups) {
      for (const reward of group.rewards) restored.add(group.taskId, reward);
    }
    return restored;
  }

  /** Adds one rollout's reward to its task's group. */
  add(taskId: string, reward: number): void {
    const rewards = this.rewards.get(taskId);
    if (rewards) rewards.push(reward);
    else this.rewards.set(taskId, [reward]);
  }

  /** The groups so far. */
  toJSON(): TaskRolloutGroup[] {
    return [...this.rewards].map(([taskId, rewards]) => ({ taskId, rewards: [...rewards] }));
  }
}

/**
 * Groups rollouts by task id, each rollout's reward being its return (the sum of its
 * step rewards: 1 on success with DreamGym's outcome reward). Groups come in order of
 * each task's first rollout. Takes `Trajectory` records and the trainers' `Rollout`s alike.
 */
export function rolloutGroupsFromTrajectories(
  trajectories: Iterable<{
    task: Pick<Task, 'id'>;
    steps: readonly Pick<Step, 'reward'>[];
  }>,
): TaskRolloutGroup[] {
  const groups = new RewardGroups();
  for (const trajectory of trajectories) {
    groups.add(
      trajectory.task.id,
      trajectory.steps.reduce((sum, step) => sum + step.reward, 0),
    );
  }
  return groups.toJSON();
}
