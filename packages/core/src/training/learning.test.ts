/**
 * Both trainers must learn the corridor: key in room 1-3, locked door in room 5-7 of a
 * 9-room corridor, 14 steps allowed (the optimum takes doorRoom + 2 <= 9). Walking at random
 * almost never gets the key to the door in time; the optimal policy (take the key when it is
 * there, open the door when it is there, else go right) always does.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../mdp/schemas.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import { collectRollouts } from '../rollout/rollout.js';
import { CorridorEnvironment, corridorTask } from '../testing/corridor-domain.js';
import { GrpoTrainer } from './grpo-trainer.js';
import type { PolicyGradientTrainer, UpdateMetrics } from './policy-gradient-trainer.js';
import { PpoTrainer } from './ppo-trainer.js';

const MAX_STEPS = 14;
const ITERATIONS = 12;

function corridorTasks(): Task[] {
  const tasks: Task[] = [];
  for (let keyRoom = 1; keyRoom <= 3; keyRoom += 1) {
    for (let doorRoom = 5; doorRoom <= 7; doorRoom += 1) {
      tasks.push(corridorTask({ length: 9, keyRoom, doorRoom }));
    }
  }
  return tasks;
}

const environmentFactory = () => new CorridorEnvironment({ maxSteps: MAX_STEPS });

/** Success rate of the sampling (not greedy) policy over 20 episodes per task. */
async function successRate(
  policy: LinearSoftmaxPolicy,
  tasks: Task[],
  seed: number,
): Promise<number> {
  const rollouts = await collectRollouts({
    policy,
    tasks,
    rolloutsPerTask: 20,
    random: new SeededRandom(seed),
    environmentFactory,
    maxSteps: MAX_STEPS,
    concurrency: 8,
  });
  return rollouts.filter((rollout) => rollout.success).length / rollouts.length;
}

function makeTrainer(
  kind: 'grpo' | 'ppo',
  policy: LinearSoftmaxPolicy,
  seed: number,
): PolicyGradientTrainer {
  const common = {
    policy,
    tasks: corridorTasks(),
    environmentFactory,
    maxSteps: MAX_STEPS,
    random: new SeededRandom(seed),
    concurrency: 8,
  };
  return kind === 'grpo'
    ? new GrpoTrainer({
        ...common,
        rolloutsPerTask: 8,
        epochs: 2,
        miniBatchSize: 256,
        loss: { klCoefficient: 0.001, entropyCoefficient: 0.001, dualClip: 3 },
      })
    : new PpoTrainer({ ...common, rolloutsPerTask: 4, epochs: 4, miniBatchSize: 64 });
}

describe('trainers learn the corridor', () => {
  for (const kind of ['grpo', 'ppo'] as const) {
    it(`${kind} lifts success from <= 20% to >= 90% in ${ITERATIONS} iterations`, async () => {
      const tasks = corridorTasks();
      const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 16 });
      const before = await successRate(policy, tasks, 2);
      const trainer = makeTrainer(kind, policy, 3);
      const metrics: UpdateMetrics[] = [];
      try {
        await trainer.train(ITERATIONS, (update) => {
          metrics.push(update);
        });
      } finally {
        await trainer.close();
      }
      const after = await successRate(policy, tasks, 4);
      expect(before).toBeLessThanOrEqual(0.2);
      expect(after).toBeGreaterThanOrEqual(0.9);
      expect(metrics.map((update) => update.iteration)).toEqual(
        Array.from({ length: ITERATIONS }, (_, index) => index + 1),
      );
      const first = metrics[0]!;
      const last = metrics.at(-1)!;
      expect(last.successRate).toBeGreaterThan(first.successRate);
      expect(last.entropy).toBeLessThan(first.entropy);
      for (const update of metrics) {
        for (const value of [
          update.loss,
          update.kl,
          update.entropy,
          update.clipFraction,
          update.gradNorm,
        ]) {
          expect(Number.isFinite(value)).toBe(true);
        }
        expect(update.episodes).toBe(kind === 'grpo' ? 72 : 36);
      }
      if (kind === 'grpo') expect(metrics.some((update) => update.kl > 0)).toBe(true);
      if (kind === 'ppo') {
        // Returns are all 0 until the first success; the critic's error peaks then falls.
        const valueLosses = metrics.map((update) => update.valueLoss!);
        expect(last.valueLoss).toBeLessThan(Math.max(...valueLosses) / 2);
      }
    });
  }

  it('is reproducible for a seed', async () => {
    const run = async (seed: number) => {
      const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
      const trainer = makeTrainer('grpo', policy, seed);
      const metrics = await trainer.train(2);
      await trainer.close();
      return {
        weights: Array.from(policy.weights),
        rewards: metrics.map((update) => update.meanReward),
      };
    };
    const first = await run(5);
    expect(await run(5)).toEqual(first);
    expect((await run(6)).weights).not.toEqual(first.weights);
  });
});
