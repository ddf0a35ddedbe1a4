/**
 * Gymnasium's episode semantics in training: an episode a limit cut (`truncated`) is not an
 * episode the task ended. PPO bootstraps from V(s_T) on truncation; an episode the
 * sim-to-real budget cut mid-way has no outcome, so it stays out of GRPO groups and success
 * rates, and the action the budget refused is never recorded.
 */
import { describe, expect, it } from 'vitest';
import type { Environment } from '../mdp/environment.js';
import type { Observation, StepResult, Task } from '../mdp/schemas.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import { collectRollouts } from '../rollout/rollout.js';
import { CorridorEnvironment, corridorTask } from '../testing/corridor-domain.js';
import { GrpoTrainer } from './grpo-trainer.js';
import { LinearValueFunction } from './linear-value-function.js';
import { PpoTrainer } from './ppo-trainer.js';
import { BudgetedEnvironment, RealTransitionBudget } from './sim-to-real.js';

const task = corridorTask({ length: 9, keyRoom: 3, doorRoom: 7 });

/** Three steps of reward 0, then the episode ends: cut by a limit, or ended by the task. */
class ThreeStepEnvironment implements Environment {
  private steps = 0;
  constructor(private readonly truncates: boolean) {}
  async reset(_task: Task): Promise<Observation> {
    this.steps = 0;
    return { text: 'You are in room 0.', actions: ['wait', 'walk'] };
  }
  async step(action: string): Promise<StepResult> {
    this.steps += 1;
    const over = this.steps === 3;
    return {
      observation: {
        text: `You ${action}ed. You are in room ${this.steps}.`,
        actions: ['wait', 'walk'],
      },
      reward: 0,
      done: over,
      truncated: over && this.truncates,
      info: { success: false },
    };
  }
  async close(): Promise<void> {}
}

/** A critic that predicts about 1 at the states of {@link ThreeStepEnvironment}. */
function optimisticCritic(): LinearValueFunction {
  const critic = new LinearValueFunction({ optimizer: { learningRate: 0.05 } });
  const states = [0, 1, 2, 3].flatMap((room) =>
    ['wait', 'walk'].map((action) =>
      critic.features(
        task,
        { text: `You ${action}ed. You are in room ${room}.` },
        Array.from({ length: room }, () => action),
      ),
    ),
  );
  for (let step = 0; step < 400; step += 1)
    critic.fitBatch(states.map((features) => ({ features, target: 1 })));
  return critic;
}

async function lastReturn(truncates: boolean): Promise<number> {
  const trainer = new PpoTrainer({
    policy: new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 10 }),
    environmentFactory: () => new ThreeStepEnvironment(truncates),
    tasks: [task],
    random: new SeededRandom(2),
    maxSteps: 10,
    gamma: 0.9,
    lambda: 1,
    valueFunction: optimisticCritic(),
    normalizeAdvantages: false,
  });
  const {
    scored: [scored],
  } = await trainer.step();
  expect(scored!.rollout.steps).toHaveLength(3);
  expect(scored!.rollout.truncated).toBe(truncates);
  return scored!.returns!.at(-1)!;
}

describe('truncation', () => {
  it('PPO bootstraps from V(s_T) when a limit cut the episode, not when the task ended it', async () => {
    // Reward 0 at every step: the last step's return is gamma * V(s_T) ~ 0.9 when truncated,
    // and exactly 0 when the episode terminated.
    expect(await lastReturn(true)).toBeGreaterThan(0.6);
    expect(await lastReturn(false)).toBe(0);
  });

  it('an episode the budget cuts ends without the refused action, truncated and budget-cut', async () => {
    const budget = new RealTransitionBudget(3);
    const rollouts = await collectRollouts({
      policy: new LinearSoftmaxPolicy({ random: new SeededRandom(3), hashBits: 10 }),
      tasks: [task],
      rolloutsPerTask: 2,
      random: new SeededRandom(4),
      environmentFactory: () =>
        new BudgetedEnvironment(new CorridorEnvironment({ maxSteps: 20 }), budget),
      maxSteps: 20,
      concurrency: 1,
    });
    expect(budget.spent).toBe(3);
    expect(rollouts.map((rollout) => rollout.steps.length)).toEqual([3, 0]);
    for (const rollout of rollouts) {
      expect(rollout).toMatchObject({ budgetExhausted: true, truncated: true, success: false });
    }
  });

  it('GRPO keeps budget-cut episodes out of its groups and of the success rate', async () => {
    const budget = new RealTransitionBudget(40);
    const trainer = new GrpoTrainer({
      policy: new LinearSoftmaxPolicy({ random: new SeededRandom(5), hashBits: 10 }),
      environmentFactory: () =>
        new BudgetedEnvironment(new CorridorEnvironment({ maxSteps: 30 }), budget),
      tasks: [task],
      random: new SeededRandom(6),
      maxSteps: 30,
      rolloutsPerTask: 4,
      concurrency: 1,
    });
    const { metrics, rollouts, scored } = await trainer.step();
    const cut = rollouts.filter((rollout) => rollout.budgetExhausted);
    expect(cut.length).toBeGreaterThan(0);
    expect(metrics.budgetCutEpisodes).toBe(cut.length);
    expect(scored.every((entry) => !entry.rollout.budgetExhausted)).toBe(true);
    expect(scored).toHaveLength(4 - cut.length);
    const finished = rollouts.filter((rollout) => !rollout.budgetExhausted);
    const expected =
      finished.length === 0
        ? 0
        : finished.filter((rollout) => rollout.success).length / finished.length;
    expect(metrics.successRate).toBe(expected);
  });
});
