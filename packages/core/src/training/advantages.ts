/**
 * Advantage estimators as small pure functions.
 *
 * Group-relative methods (GRPO, Dr.GRPO) score each *episode* once, normalise the scores
 * within the group of rollouts of the same task, and broadcast the episode's advantage to
 * every step of the episode, as verl-agent does for multi-turn agents: each step is one
 * training sample carrying its episode's advantage, and an episode counts once in its
 * group's statistics however many steps it has.
 * GAE (Schulman et al., 2016) uses a learned value baseline per step instead.
 */
import { InvalidArgumentError } from '../errors.js';

/** Options of {@link groupNormalizedAdvantages}. */
export interface GroupNormalizationOptions {
  /** Divide by the group's standard deviation (GRPO) or not (Dr.GRPO). Default true. */
  normalizeByStd?: boolean;
  /** Added to the standard deviation before dividing. Default 1e-6. */
  epsilon?: number;
}

/**
 * Group-relative advantages: `(score - mean(group)) / (std(group) + epsilon)`, or
 * `score - mean(group)` without std normalisation. `std` is the sample standard deviation
 * (n - 1 in the denominator, as `torch.std` in verl). A group of one gets advantage 0 (its
 * own mean), and a group whose scores are all equal gets 0 for every member: neither
 * carries a learning signal.
 *
 * @param scores one score per episode (the episode reward)
 * @param groups the group key of each episode (the task id), same length as `scores`
 */
export function groupNormalizedAdvantages(
  scores: readonly number[],
  groups: readonly (string | number)[],
  options: GroupNormalizationOptions = {},
): number[] {
  if (scores.length !== groups.length) {
    throw new InvalidArgumentError(
      `scores (${scores.length}) and groups (${groups.length}) differ in length.`,
      { argument: 'groups' },
    );
  }
  const normalizeByStd = options.normalizeByStd ?? true;
  const epsilon = options.epsilon ?? 1e-6;
  const members = new Map<string | number, number[]>();
  groups.forEach((group, index) => {
    const list = members.get(group);
    if (list) list.push(index);
    else members.set(group, [index]);
  });
  const advantages = new Array<number>(scores.length).fill(0);
  for (const indices of members.values()) {
    if (indices.length === 1) continue;
    const mean = indices.reduce((total, index) => total + scores[index]!, 0) / indices.length;
    let std = 1;
    if (normalizeByStd) {
      const squared = indices.reduce((total, index) => total + (scores[index]! - mean) ** 2, 0);
      std = Math.sqrt(squared / (indices.length - 1));
    }
    for (const index of indices) {
      const centred = scores[index]! - mean;
      advantages[index] = normalizeByStd ? centred / (std + epsilon) : centred;
    }
  }
  return advantages;
}

/** GRPO advantages (Shao et al., 2024): group mean/std normalisation of episode scores. */
export function grpoAdvantages(
  scores: readonly number[],
  groups: readonly (string | number)[],
  epsilon = 1e-6,
): number[] {
  return groupNormalizedAdvantages(scores, groups, { normalizeByStd: true, epsilon });
}

/** Dr.GRPO advantages (Liu et al., 2025): group mean only, no std normalisation. */
export function drGrpoAdvantages(
  scores: readonly number[],
  groups: readonly (string | number)[],
): number[] {
  return groupNormalizedAdvantages(scores, groups, { normalizeByStd: false });
}

/** Repeats each episode's value for each of its `stepCounts[i]` steps, in order. */
export function broadcastToSteps(
  episodeValues: readonly number[],
  stepCounts: readonly number[],
): number[] {
  if (episodeValues.length !== stepCounts.length) {
    throw new InvalidArgumentError(
      `episodeValues (${episodeValues.length}) and stepCounts (${stepCounts.length}) differ in length.`,
      { argument: 'stepCounts' },
    );
  }
  const out: number[] = [];
  episodeValues.forEach((value, episode) => {
    for (let step = 0; step < stepCounts[episode]!; step += 1) out.push(value);
  });
  return out;
}

/** Discounted returns `G_t = r_t + gamma * G_{t+1}` of one episode, with `G_T = bootstrap`. */
export function discountedReturns(
  rewards: readonly number[],
  gamma: number,
  bootstrap = 0,
): number[] {
  const returns = new Array<number>(rewards.length);
  let running = bootstrap;
  for (let step = rewards.length - 1; step >= 0; step -= 1) {
    running = rewards[step]! + gamma * running;
    returns[step] = running;
  }
  return returns;
}

/** Inputs of {@link gaeAdvantages} for one episode (or several laid end to end). */
export interface GaeInput {
  /** r_{t+1} per step. */
  rewards: readonly number[];
  /** V(s_t) per step. */
  values: readonly number[];
  /** True where the episode ended after the step: no bootstrapping across it. */
  dones: readonly boolean[];
  /**
   * V(s_T) after the last step, used only when the last step is not done (an episode cut
   * off by a step limit). Default 0.
   */
  lastValue?: number;
  gamma: number;
  lambda: number;
}

/**
 * Generalised advantage estimation:
 * `delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t)`,
 * `A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}`, returns `A_t + V(s_t)`.
 * A step with `done` neither bootstraps from the next value nor receives later advantages,
 * so several episodes can be laid end to end.
 */
export function gaeAdvantages(input: GaeInput): { advantages: number[]; returns: number[] } {
  const { rewards, values, dones, gamma, lambda } = input;
  if (values.length !== rewards.length || dones.length !== rewards.length) {
    throw new InvalidArgumentError(
      `rewards (${rewards.length}), values (${values.length}) and dones (${dones.length}) must have the same length.`,
      { argument: 'values' },
    );
  }
  const advantages = new Array<number>(rewards.length);
  const returns = new Array<number>(rewards.length);
  let nextValue = input.lastValue ?? 0;
  let nextAdvantage = 0;
  for (let step = rewards.length - 1; step >= 0; step -= 1) {
    const live = dones[step] ? 0 : 1;
    const delta = rewards[step]! + gamma * nextValue * live - values[step]!;
    const advantage = delta + gamma * lambda * live * nextAdvantage;
    advantages[step] = advantage;
    returns[step] = advantage + values[step]!;
    nextValue = values[step]!;
    nextAdvantage = advantage;
  }
  return { advantages, returns };
}

/** Mean 0, standard deviation 1 (population std, plus epsilon); all-equal inputs map to 0. */
export function whiten(values: readonly number[], epsilon = 1e-8): number[] {
  if (values.length === 0) return [];
  const mean = values.reduce((total, value) => total + value, 0) / values.length;
  const variance = values.reduce((total, value) => total + (value - mean) ** 2, 0) / values.length;
  const std = Math.sqrt(variance);
  return values.map((value) => (value - mean) / (std + epsilon));
}

/**
 * Spreads each episode's advantage over its steps so that every episode weighs alike in a
 * step-mean loss: `advantage * meanLength / length` (the batch's mean length keeps the overall
 * scale). A 10-step episode at +1 and a 30-step one at -1 (mean length 20) become +2 and
 * -2/3 per step: 20 and -20 summed over their steps.
 */
export function weighEpisodesAlike(
  advantages: readonly number[],
  lengths: readonly number[],
): number[] {
  if (advantages.length !== lengths.length) {
    throw new InvalidArgumentError(
      `advantages (${advantages.length}) and lengths (${lengths.length}) differ in length.`,
      { argument: 'lengths' },
    );
  }
  if (lengths.length === 0) return [];
  const meanLength = lengths.reduce((sum, length) => sum + length, 0) / lengths.length;
  return advantages.map(
    (advantage, index) => (advantage * meanLength) / Math.max(1, lengths[index]!),
  );
}
