/**
 * Per-iteration metrics of a DreamGym run, one JSON record per line in
 * `<runDir>/metrics.jsonl`. The loop writes them; `dreamgym report` plots them.
 */
import { z } from 'zod';
import { EvaluationMetricsSchema, SyntheticToRealGapSchema } from '../eval/evaluation-metrics.js';
import type { UpdateMetrics } from './policy-gradient-trainer.js';

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
  /**
   * Synthetic steps played so far by forked continuations (`trainer.credit: 'fork'`), not in
   * `syntheticTransitions`; absent with episode credit. The iteration's own are `update.forkSteps`.
   */
  forkTransitions: z.number().int().nonnegative().optional(),
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
 * The trainer's figures an iteration's record keeps under `update`: the loss and its parts, the
 * critic's loss (PPO), and with fork credit the states forked and their continuations' steps.
 */
export function updateRecord(update: UpdateMetrics): Record<string, number> {
  return {
    loss: update.loss,
    policyLoss: update.policyLoss,
    kl: update.kl,
    entropy: update.entropy,
    clipFraction: update.clipFraction,
    gradNorm: update.gradNorm,
    meanAbsAdvantage: update.meanAbsAdvantage,
    behaviourMismatch: update.behaviourMismatch,
    ...(update.valueLoss === undefined ? {} : { valueLoss: update.valueLoss }),
    ...(update.forkSteps === undefined
      ? {}
      : { forkSteps: update.forkSteps, forkStates: update.forkStates ?? 0 }),
  };
}
