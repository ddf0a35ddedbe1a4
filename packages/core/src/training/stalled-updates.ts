/**
 * A loop whose updates have stopped changing the policy. A group-relative update (GRPO) scores
 * each episode against the other episodes of its task: when every group's episodes got the same
 * return, every advantage is zero and the update changes nothing, and a policy that no longer
 * explores (its entropy near zero, so a task's rollouts all act alike) never leaves that state on
 * its own. Measured on MiniWoB++ with the linear policy at learning rate 0.05: the entropy fell
 * from 0.73 to under 0.05 nats by iteration 12, and 1,174 of the run's 1,230 iterations had every
 * advantage 0.
 */
import type { IterationMetrics } from './metrics.js';

/** Consecutive iterations with no advantage after which the loop says the updates stalled. */
export const STALLED_ITERATIONS = 5;

/**
 * The warning for a stall that `metrics` (a run's records, oldest first) has just reached: the
 * last {@link STALLED_ITERATIONS} iterations played episodes and every advantage was zero, and
 * the iteration before them was not stalled (so each stall is reported once). Otherwise nothing.
 */
export function stalledUpdateWarning(metrics: readonly IterationMetrics[]): string | undefined {
  const stalled = (record: IterationMetrics | undefined) =>
    record !== undefined && record.episodes > 0 && record.update.meanAbsAdvantage === 0;
  const streak = metrics.slice(-STALLED_ITERATIONS);
  if (streak.length < STALLED_ITERATIONS || !streak.every(stalled)) return undefined;
  if (stalled(metrics.at(-STALLED_ITERATIONS - 1))) return undefined;
  const first = streak[0]!.iteration;
  const last = streak.at(-1)!.iteration;
  const entropy = streak.at(-1)!.update.entropy;
  return (
    `iterations ${first}-${last}: every task's rollouts got the same return, so every advantage was 0 and the policy did not change` +
    `${entropy === undefined ? '' : ` (entropy ${entropy.toFixed(3)} nats)`}. A policy that no longer explores stays so: raise trainer.loss.entropyCoefficient, ` +
    'lower trainer.learningRate, or play more rolloutsPerTask.'
  );
}
