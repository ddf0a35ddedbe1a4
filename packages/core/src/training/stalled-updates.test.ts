import { describe, expect, it } from 'vitest';
import type { IterationMetrics } from './metrics.js';
import { STALLED_ITERATIONS, stalledUpdateWarning } from './stalled-updates.js';

function record(iteration: number, meanAbsAdvantage: number, episodes = 8): IterationMetrics {
  return {
    iteration,
    phase: 'synthetic',
    episodes,
    successRate: 0.5,
    meanReward: 0,
    meanSteps: 2,
    truncatedEpisodes: 0,
    budgetCutEpisodes: 0,
    poolSize: 4,
    generatedTasks: 0,
    generatedShare: 0,
    bufferSize: 0,
    realTransitions: 0,
    syntheticTransitions: 16,
    update: {
      loss: 0,
      policyLoss: 0,
      kl: 0,
      entropy: 0.004,
      clipFraction: 0,
      gradNorm: 0,
      meanAbsAdvantage,
      behaviourMismatch: 0,
    },
    evaluations: [],
    seconds: 0.1,
  };
}

/** The warnings a run whose iterations had these mean |advantage| values would log, by iteration. */
function warnings(advantages: number[]): number[] {
  const records = advantages.map((advantage, iteration) => record(iteration, advantage));
  return records.flatMap((_, index) =>
    stalledUpdateWarning(records.slice(0, index + 1)) ? [index] : [],
  );
}

describe('stalledUpdateWarning', () => {
  it('warns once when the updates have had no advantage for the stall length, again after learning resumes', () => {
    const stall = Array<number>(STALLED_ITERATIONS + 3).fill(0);
    expect(warnings([0.3, 0.1, ...stall, 0.2, ...stall])).toEqual([
      1 + STALLED_ITERATIONS,
      2 + stall.length + STALLED_ITERATIONS,
    ]);
    const message = stalledUpdateWarning(
      [0.3, ...Array<number>(STALLED_ITERATIONS).fill(0)].map((advantage, iteration) =>
        record(iteration, advantage),
      ),
    );
    expect(message).toContain(`iterations 1-${STALLED_ITERATIONS}`);
    expect(message).toContain('entropy 0.004');
    expect(message).toContain('trainer.loss.entropyCoefficient');
  });

  it('says nothing for a shorter stall, for a run that starts stalled only once, or for iterations without episodes', () => {
    expect(warnings([0.3, ...Array<number>(STALLED_ITERATIONS - 1).fill(0), 0.1])).toEqual([]);
    expect(warnings(Array<number>(STALLED_ITERATIONS * 2).fill(0))).toEqual([
      STALLED_ITERATIONS - 1,
    ]);
    const idle = Array.from({ length: STALLED_ITERATIONS }, (_, iteration) =>
      record(iteration, 0, 0),
    );
    expect(stalledUpdateWarning(idle)).toBeUndefined();
  });
});
