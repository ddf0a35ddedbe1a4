import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import type { Observation, StepResult, Task } from '../mdp/schemas.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { candidateActionsOf, type Policy } from '../policy/policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import { RolloutCollector } from '../rollout/rollout.js';
import { CorridorEnvironment, corridorTask } from '../testing/corridor-domain.js';
import { discountedReturns } from './advantages.js';
import { ForkedStates, forkAdvantages } from './fork-credit.js';
import { GrpoTrainer } from './grpo-trainer.js';
import { PpoTrainer } from './ppo-trainer.js';

/**
 * A random walk on rooms 0..4, starting in room 2: reaching room 4 ends the episode with reward
 * 1, reaching room 0 ends it with nothing. An MDP whose values a dynamic programme gives
 * exactly, and that can fork (its whole state is the room and the steps taken).
 */
class WalkEnvironment implements Environment {
  static readonly rooms = 5;
  room = 2;
  taken = 0;
  done = false;
  task: Task | undefined;

  async reset(task: Task): Promise<Observation> {
    Object.assign(this, { room: 2, taken: 0, done: false, task });
    return this.observe();
  }

  async step(action: string): Promise<StepResult> {
    if (this.done) throw new Error('step after done');
    this.room += action === 'right' ? 1 : -1;
    this.taken += 1;
    const won = this.room === WalkEnvironment.rooms - 1;
    this.done = won || this.room === 0;
    return {
      observation: this.observe(),
      reward: won ? 1 : 0,
      done: this.done,
      truncated: false,
      info: { success: won },
    };
  }

  async close(): Promise<void> {}

  async fork(): Promise<WalkEnvironment> {
    const fork = new WalkEnvironment();
    Object.assign(fork, { room: this.room, taken: this.taken, done: this.done, task: this.task });
    return fork;
  }

  private observe(): Observation {
    return { text: `You are in room ${this.room}.`, actions: ['left', 'right'] };
  }
}

const HORIZON = 6;
const walkTask: Task = {
  id: 'walk',
  instruction: 'Reach room 4.',
  domain: 'walk',
  origin: 'seed',
  meta: {},
};

/** V(room, steps taken) of the uniform policy, exactly, within the step limit. */
function exactValue(room: number, taken: number): number {
  if (room === 0 || room === WalkEnvironment.rooms - 1 || taken >= HORIZON) return 0;
  return 0.5 * exactQ(room, taken, 'left') + 0.5 * exactQ(room, taken, 'right');
}

/** Q(room, steps taken, action) of the uniform policy, exactly. */
function exactQ(room: number, taken: number, action: string): number {
  const next = room + (action === 'right' ? 1 : -1);
  return (next === WalkEnvironment.rooms - 1 ? 1 : 0) + exactValue(next, taken + 1);
}

/** Picks uniformly among the candidates. */
const uniform: Policy = {
  id: 'uniform',
  async act(observation, context) {
    const candidates = candidateActionsOf(observation, context.candidates);
    return { action: context.random!.choice(candidates), logprob: -Math.log(candidates.length) };
  },
};

function roomOf(observation: Observation): number {
  return Number(/room (\d+)/.exec(observation.text)![1]);
}

describe('fork credit', () => {
  it('values every state of the walk by its forks as the dynamic programme does, and credits each step its own advantage', async () => {
    const continuations = 200;
    const forked = new ForkedStates({ continuations, every: 1 });
    const collector = new RolloutCollector({
      environmentFactory: () => new WalkEnvironment(),
      maxSteps: HORIZON,
      concurrency: 4,
    });
    const random = new SeededRandom(3);
    const rollouts = await collector.collect({
      policy: uniform,
      tasks: [walkTask],
      rolloutsPerTask: 300,
      random,
      onState: forked.onState,
    });
    const { values, steps, states } = await forked.values(rollouts, {
      policy: uniform,
      random,
      maxSteps: HORIZON,
      concurrency: 4,
      gamma: 1,
    });
    const stepCount = rollouts.reduce((total, rollout) => total + rollout.steps.length, 0);
    expect(states).toBe(stepCount);
    expect(steps).toBeGreaterThan(stepCount * continuations);

    // Each state's Monte-Carlo value (200 continuations: standard error <= 0.036) is the exact
    // one within five standard errors, and the values of a kind of state agree on average.
    const byState = new Map<string, { exact: number; estimates: number[] }>();
    const { advantages } = forkAdvantages(rollouts, values, 1);
    const byAction = new Map<string, { exact: number; advantages: number[] }>();
    let position = 0;
    rollouts.forEach((rollout, episode) => {
      rollout.steps.forEach((step, taken) => {
        const room = roomOf(step.observation);
        const exact = exactValue(room, taken);
        expect(Math.abs(values[episode]![taken]! - exact)).toBeLessThan(0.18);
        const key = `${room}@${taken}`;
        const entry = byState.get(key) ?? { exact, estimates: [] };
        entry.estimates.push(values[episode]![taken]!);
        byState.set(key, entry);
        const actionKey = `${key}:${step.action}`;
        const credited = byAction.get(actionKey) ?? {
          exact: exactQ(room, taken, step.action) - exact,
          advantages: [],
        };
        credited.advantages.push(advantages[position]!);
        byAction.set(actionKey, credited);
        position += 1;
      });
    });
    const mean = (list: number[]) => list.reduce((sum, value) => sum + value, 0) / list.length;
    for (const [key, { exact, estimates }] of byState) {
      expect(Math.abs(mean(estimates) - exact), key).toBeLessThan(0.03);
    }
    // A step's advantage is its own return-to-go against its state's value: on average over the
    // n steps that took one action in one state, Q(s, a) - V(s), within four standard errors
    // (a return's deviation is at most 0.5).
    let checked = 0;
    for (const [key, { exact, advantages: credited }] of byAction) {
      if (credited.length < 40) continue;
      checked += 1;
      const tolerance = (4 * 0.5) / Math.sqrt(credited.length) + 0.01;
      expect(Math.abs(mean(credited) - exact), key).toBeLessThan(tolerance);
    }
    expect(checked).toBeGreaterThanOrEqual(4);
    // Within an episode the steps are credited apart: both actions from room 2 at the start
    // are credited with opposite signs on average.
    expect(mean(byAction.get('2@0:right')!.advantages)).toBeGreaterThan(0.15);
    expect(mean(byAction.get('2@0:left')!.advantages)).toBeLessThan(-0.15);
    await collector.close();
  });

  it('forks only every n-th state when asked, and values the steps between by the state before them', async () => {
    const forked = new ForkedStates({ continuations: 2, every: 2 });
    const collector = new RolloutCollector({
      environmentFactory: () => new WalkEnvironment(),
      maxSteps: HORIZON,
    });
    const random = new SeededRandom(5);
    const rollouts = await collector.collect({
      policy: uniform,
      tasks: [walkTask],
      rolloutsPerTask: 20,
      random,
      onState: forked.onState,
    });
    const { values, states } = await forked.values(rollouts, {
      policy: uniform,
      random,
      maxSteps: HORIZON,
      concurrency: 2,
      gamma: 1,
    });
    const chosen = rollouts.reduce(
      (total, rollout) => total + Math.ceil(rollout.steps.length / 2),
      0,
    );
    expect(states).toBe(chosen);
    for (const episodeValues of values) {
      for (let step = 1; step < episodeValues.length; step += 2)
        expect(episodeValues[step]).toBe(episodeValues[step - 1]);
    }
    await collector.close();
  });

  it('GRPO and PPO: each step its own advantage, the forks counted; the same seed gives the same update', async () => {
    for (const Trainer of [GrpoTrainer, PpoTrainer]) {
      const run = async () => {
        const trainer = new Trainer({
          policy: linearPolicy(),
          environmentFactory: () => new WalkEnvironment(),
          tasks: [walkTask],
          random: new SeededRandom(8),
          maxSteps: HORIZON,
          rolloutsPerTask: 6,
          credit: 'fork',
          forks: { continuations: 3 },
        });
        const step = await trainer.step();
        await trainer.close();
        return step;
      };
      const { metrics, scored } = await run();
      const steps = scored.reduce((total, entry) => total + entry.rollout.steps.length, 0);
      expect(metrics.forkStates).toBe(steps);
      expect(metrics.forkSteps).toBeGreaterThanOrEqual(steps * 3);
      const gamma = Trainer === PpoTrainer ? 0.99 : 1;
      for (const entry of scored) {
        const toGo = discountedReturns(
          entry.rollout.steps.map((step) => step.reward),
          gamma,
        );
        if (entry.returns) expect(entry.returns).toEqual(toGo);
      }
      // Some episode's steps are credited apart (not one advantage broadcast to all of them).
      expect(
        scored.some((entry) => new Set(entry.advantages.map((value) => value.toFixed(9))).size > 1),
      ).toBe(true);
      const again = await run();
      expect(again.scored.map((entry) => entry.advantages)).toEqual(
        scored.map((entry) => entry.advantages),
      );
    }
  });

  it('says clearly that a real environment cannot fork', async () => {
    const task = corridorTask({ length: 4, keyRoom: 2, doorRoom: 1 });
    const trainer = new GrpoTrainer({
      policy: linearPolicy(),
      environmentFactory: () => new CorridorEnvironment({ maxSteps: 8 }),
      tasks: [task],
      random: new SeededRandom(1),
      maxSteps: 8,
      rolloutsPerTask: 2,
      credit: 'fork',
    });
    const failure = trainer.step().catch((error: unknown) => error);
    const error = await failure;
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /the training environment cannot fork: it has no fork\(\).*SyntheticEnvironment/,
    );
    await trainer.close();
    expect(
      () => new GrpoTrainer({ ...trainerBase(task), credit: 'fork', forks: { continuations: 0 } }),
    ).toThrow(/trainer.forks.continuations must be a positive integer, got 0/);
  });
});

function trainerBase(task: Task) {
  return {
    policy: linearPolicy(),
    environmentFactory: () => new CorridorEnvironment({ maxSteps: 8 }),
    tasks: [task],
    random: new SeededRandom(1),
    maxSteps: 8,
  };
}

function linearPolicy(): LinearSoftmaxPolicy {
  return new LinearSoftmaxPolicy({ random: new SeededRandom(2), hashBits: 10 });
}
