/**
 * What an evaluation pass measures (success with its 95% Wilson interval, reward, steps), and
 * the synthetic-to-real gap of one policy on the same tasks in both environments.
 */
import { z } from 'zod';

/** Success and reward of an evaluation pass. */
export const EvaluationMetricsSchema = z.object({
  /** Which environment: `synthetic` (held-out tasks in the experience model) or `real`. */
  environment: z.enum(['synthetic', 'real']),
  /** How actions were chosen: the most likely one, or sampled from the policy. */
  mode: z.enum(['greedy', 'sampled']).default('greedy'),
  episodes: z.number().int().nonnegative(),
  successRate: z.number().min(0).max(1),
  /** The 95% Wilson interval [low, high] of the success rate. */
  successInterval95: z.tuple([z.number(), z.number()]),
  meanReward: z.number(),
  meanSteps: z.number(),
  /** Episodes the step limit cut off (counted as failures). */
  truncatedEpisodes: z.number().int().nonnegative().default(0),
});
export type EvaluationMetrics = z.infer<typeof EvaluationMetricsSchema>;
export type EvaluationMetricsInput = z.input<typeof EvaluationMetricsSchema>;

/**
 * The same policy on the same training tasks in the synthetic and in the real environment:
 * the gap between the two success rates is what the paper's Theorem 1 bounds (through the
 * experience model's reward and transition errors).
 */
export const SyntheticToRealGapSchema = z.object({
  tasks: z.number().int().nonnegative(),
  syntheticSuccessRate: z.number().min(0).max(1),
  realSuccessRate: z.number().min(0).max(1),
  /** syntheticSuccessRate - realSuccessRate. */
  gap: z.number(),
});
export type SyntheticToRealGap = z.infer<typeof SyntheticToRealGapSchema>;

/**
 * The 95% Wilson score interval of a success rate: better than the normal approximation
 * for the small evaluation sets and rates near 0 or 1 typical of agent benchmarks.
 */
export function wilsonInterval95(successes: number, trials: number): [number, number] {
  if (trials === 0) return [0, 1];
  const z95 = 1.959963984540054;
  const p = successes / trials;
  const denominator = 1 + (z95 * z95) / trials;
  const centre = (p + (z95 * z95) / (2 * trials)) / denominator;
  const half =
    (z95 * Math.sqrt((p * (1 - p)) / trials + (z95 * z95) / (4 * trials * trials))) / denominator;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}
