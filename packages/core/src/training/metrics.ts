/**
 * Per-iteration metrics of a DreamGym run, one JSON record per line in
 * `<runDir>/metrics.jsonl`. The loop writes them; `dreamgym report` plots them.
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

export const IterationMetricsSchema = z.object({
  iteration: z.number().int().nonnegative(),
  /** `synthetic` while training in the experience model, `real` during sim-to-real. */
  phase: z.enum(['synthetic', 'real']),
  /** Training rollouts of this iteration. */
  episodes: z.number().int().nonnegative(),
  /** Success of the finished training rollouts (budget-cut ones left out). */
  successRate: z.number().min(0).max(1),
  meanReward: z.number(),
  meanSteps: z.number(),
  /** Training rollouts a limit cut off (step cap or budget). */
  truncatedEpisodes: z.number().int().nonnegative().default(0),
  /** Training rollouts the sim-to-real budget cut mid-way (in neither success nor GRPO groups). */
  budgetCutEpisodes: z.number().int().nonnegative().default(0),
  /** Tasks in the curriculum pool after this iteration, and how many were generated. */
  poolSize: z.number().int().nonnegative(),
  generatedTasks: z.number().int().nonnegative(),
  /** Share of generated tasks in this iteration's batch (bounded by lambda). */
  generatedShare: z.number().min(0).max(1),
  bufferSize: z.number().int().nonnegative(),
  /** Real-environment transitions spent so far (sim-to-real budget). */
  realTransitions: z.number().int().nonnegative(),
  syntheticTransitions: z.number().int().nonnegative(),
  /** Trainer diagnostics (loss parts, KL, entropy, clip fraction...). */
  update: z.record(z.string(), z.number()).default({}),
  evaluations: z.array(EvaluationMetricsSchema).default([]),
  /** Synthetic vs real success on training tasks, at evaluation iterations (`evaluation.gapTasks`). */
  syntheticToRealGap: SyntheticToRealGapSchema.optional(),
  seconds: z.number().nonnegative(),
});
export type IterationMetrics = z.infer<typeof IterationMetricsSchema>;
export type IterationMetricsInput = z.input<typeof IterationMetricsSchema>;

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
