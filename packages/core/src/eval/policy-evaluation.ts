/**
 * Success rate of a policy on any `Environment`, real or synthetic, with a 95% interval.
 */
import type { Environment } from '../mdp/environment.js';
import type { Observation, Step, Task } from '../mdp/schemas.js';
import type { Policy } from '../policy/policy.js';
import type { SeededRandom } from '../random/seeded-random.js';
import { type Rollout, RolloutCollector } from '../rollout/rollout.js';
import { type EvaluationMetrics, wilsonInterval95 } from './evaluation-metrics.js';

export interface PolicyEvaluationOptions {
  policy: Policy;
  environmentFactory: () => Environment | Promise<Environment>;
  /** Which kind of environment this is, for the report. */
  environment: 'synthetic' | 'real';
  tasks: readonly Task[];
  /** Episodes per task. Default 1. */
  episodesPerTask?: number;
  maxSteps: number;
  /** Take the most likely action (default true), or sample. */
  greedy?: boolean;
  /** Environments stepping at once. Default 4. */
  concurrency?: number;
  /** Randomness for sampling; evaluation draws from a fork and never advances it. */
  random: SeededRandom;
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[];
  signal?: AbortSignal;
  /** Called as each episode ends, with how many of all have ended (progress of a long evaluation). */
  onEpisode?: (rollout: Rollout, progress: { done: number; total: number }) => void;
}

/** The evaluation's figures and its episodes. */
export interface PolicyEvaluation {
  metrics: EvaluationMetrics;
  rollouts: Rollout[];
}

/** Plays every task and reports success rate (with its 95% Wilson interval), reward and length. */
export async function evaluatePolicy(options: PolicyEvaluationOptions): Promise<PolicyEvaluation> {
  const collector = new RolloutCollector({
    environmentFactory: options.environmentFactory,
    maxSteps: options.maxSteps,
    concurrency: options.concurrency ?? 4,
    ...(options.candidateActions ? { candidateActions: options.candidateActions } : {}),
  });
  try {
    const rollouts = await collector.collect({
      policy: options.policy,
      tasks: options.tasks,
      rolloutsPerTask: options.episodesPerTask ?? 1,
      random: options.random.fork(`evaluation:${options.environment}`),
      greedy: options.greedy ?? true,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onEpisode ? { onEpisode: options.onEpisode } : {}),
    });
    const successes = rollouts.filter((rollout) => rollout.success).length;
    const episodes = rollouts.length;
    const mean = (values: number[]) =>
      values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
    return {
      rollouts,
      metrics: {
        environment: options.environment,
        mode: (options.greedy ?? true) ? 'greedy' : 'sampled',
        episodes,
        successRate: episodes === 0 ? 0 : successes / episodes,
        successInterval95: wilsonInterval95(successes, episodes),
        meanReward: mean(rollouts.map((rollout) => rollout.totalReward)),
        meanSteps: mean(rollouts.map((rollout) => rollout.steps.length)),
        truncatedEpisodes: rollouts.filter((rollout) => rollout.truncated).length,
      },
    };
  } finally {
    await collector.close();
  }
}
