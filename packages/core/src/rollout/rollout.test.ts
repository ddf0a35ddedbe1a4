import { describe, expect, it } from 'vitest';
import { EnvironmentError } from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import { TrajectorySchema } from '../mdp/schemas.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
} from '../testing/corridor-domain.js';
import { collectRollouts, RolloutCollector, rolloutToTrajectory } from './rollout.js';

const tasks = [
  corridorTask({ length: 5, keyRoom: 1, doorRoom: 3 }),
  corridorTask({ length: 5, keyRoom: 2, doorRoom: 4 }),
];

/** A corridor whose observations do not list their actions, like a synthetic environment. */
class UnlistedCorridor implements Environment {
  private readonly inner = new CorridorEnvironment({ maxSteps: 50 });
  async reset(task: Parameters<Environment['reset']>[0]) {
    const { actions: _actions, ...observation } = await this.inner.reset(task);
    return observation;
  }
  async step(action: string) {
    const result = await this.inner.step(action);
    const { actions: _actions, ...observation } = result.observation;
    return { ...result, observation };
  }
  close() {
    return this.inner.close();
  }
}

describe('rollout collection', () => {
  it('records every step and groups n rollouts per task', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
    let created = 0;
    const rollouts = await collectRollouts({
      policy,
      tasks,
      rolloutsPerTask: 3,
      random: new SeededRandom(2),
      environmentFactory: () => {
        created += 1;
        return new CorridorEnvironment({ maxSteps: 8 });
      },
      maxSteps: 8,
      concurrency: 4,
    });
    expect(created).toBe(4);
    expect(rollouts.map((rollout) => rollout.id)).toEqual([
      `${tasks[0]!.id}#0`,
      `${tasks[0]!.id}#1`,
      `${tasks[0]!.id}#2`,
      `${tasks[1]!.id}#0`,
      `${tasks[1]!.id}#1`,
      `${tasks[1]!.id}#2`,
    ]);
    for (const rollout of rollouts) {
      expect(rollout.groupId).toBe(rollout.task.id);
      expect(rollout.steps.length).toBeGreaterThan(0);
      expect(rollout.steps.length).toBeLessThanOrEqual(8);
      expect(rollout.steps.at(-1)!.done || rollout.truncated).toBe(true);
      expect(rollout.totalReward).toBe(
        rollout.steps.reduce((total, step) => total + step.reward, 0),
      );
      expect(rollout.success).toBe(rollout.totalReward > 0);
      for (const step of rollout.steps) {
        expect(step.candidates).toContain(step.action);
        expect(step.logprob).toBeCloseTo(-Math.log(step.candidates.length), 12);
        expect(step.actSeconds).toBeGreaterThanOrEqual(0);
        expect(step.stepSeconds).toBeGreaterThanOrEqual(0);
      }
      const trajectory = TrajectorySchema.parse(
        rolloutToTrajectory(rollout, 'real', (index) => ({ advantage: index })),
      );
      expect(trajectory.steps[0]!.info).toMatchObject({
        advantage: 0,
        candidates: rollout.steps[0]!.candidates,
      });
      expect(trajectory.steps[0]!.info!.logprob).toBe(rollout.steps[0]!.logprob);
    }
  });

  it('gives the same rollouts for a seed whatever the concurrency', async () => {
    const policy = new LinearSoftmaxPolicy({
      random: new SeededRandom(1),
      hashBits: 12,
      initScale: 0.1,
    });
    const run = (concurrency: number, seed: number) =>
      collectRollouts({
        policy,
        tasks,
        rolloutsPerTask: 4,
        random: new SeededRandom(seed),
        environmentFactory: () => new CorridorEnvironment({ maxSteps: 10 }),
        maxSteps: 10,
        concurrency,
      }).then((rollouts) =>
        rollouts.map((rollout) => rollout.steps.map((step) => [step.action, step.logprob])),
      );
    const serial = await run(1, 7);
    expect(await run(5, 7)).toEqual(serial);
    expect(await run(5, 8)).not.toEqual(serial);
  });

  it('advances the random stream so successive collections differ', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
    const collector = new RolloutCollector({
      environmentFactory: () => new CorridorEnvironment(),
      maxSteps: 10,
    });
    const random = new SeededRandom(3);
    const first = await collector.collect({ policy, tasks, rolloutsPerTask: 2, random });
    const second = await collector.collect({ policy, tasks, rolloutsPerTask: 2, random });
    expect(second.map((rollout) => rollout.steps.map((step) => step.action))).not.toEqual(
      first.map((rollout) => rollout.steps.map((step) => step.action)),
    );
    await collector.close();
    await expect(collector.collect({ policy, tasks, random })).rejects.toThrow(/closed/);
  });

  it('truncates at maxSteps and uses the adapter candidates when observations list none', async () => {
    const adapter = createCorridorAdapter();
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
    const [rollout] = await collectRollouts({
      policy,
      tasks: [corridorTask({ length: 9, keyRoom: 7, doorRoom: 8 })],
      random: new SeededRandom(2),
      environmentFactory: () => new UnlistedCorridor(),
      candidateActions: (observation, history) => adapter.candidateActions(observation, history),
      maxSteps: 3,
    });
    expect(rollout!.truncated).toBe(true);
    expect(rollout!.steps).toHaveLength(3);
    // In room 0 of an empty corridor start, the corridor adapter proposes only walking right.
    expect(rollout!.steps[0]!.candidates).toEqual(['go right']);
    expect(rollout!.steps[1]!.candidates).toEqual(
      adapter.candidateActions(rollout!.steps[1]!.observation, []),
    );
  });

  it('wraps reset failures in an EnvironmentError naming the task and the attempts', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
    const broken = { ...tasks[0]!, id: 'broken', meta: {} };
    const failure = collectRollouts({
      policy,
      tasks: [broken],
      random: new SeededRandom(2),
      environmentFactory: () => new CorridorEnvironment(),
      maxSteps: 3,
      episodeRetries: 2,
    });
    await expect(failure).rejects.toThrow(EnvironmentError);
    await expect(failure).rejects.toThrow(/task broken.*failed 3 times; episodeRetries is 2/);
  });

  it('plays an episode again from reset when the environment fails, with the same random stream', async () => {
    /** A corridor whose engine "crashes" once: the first step of the `failAt`-th episode. */
    class CrashingCorridor implements Environment {
      private readonly inner = new CorridorEnvironment({ maxSteps: 20 });
      private episodes = 0;
      constructor(private readonly failAt: number) {}
      async reset(task: Parameters<Environment['reset']>[0]) {
        this.episodes += 1;
        return this.inner.reset(task);
      }
      async step(action: string) {
        if (this.episodes === this.failAt) {
          this.episodes += 1;
          throw new EnvironmentError('the engine died during the episode; it was restarted');
        }
        return this.inner.step(action);
      }
      close() {
        return this.inner.close();
      }
    }
    const collect = (failAt: number, episodeRetries?: number) =>
      collectRollouts({
        policy: new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 }),
        tasks,
        rolloutsPerTask: 2,
        random: new SeededRandom(5),
        environmentFactory: () => new CrashingCorridor(failAt),
        concurrency: 1,
        maxSteps: 12,
        ...(episodeRetries === undefined ? {} : { episodeRetries }),
      });
    const clean = await collect(0);
    const recovered = await collect(2);
    expect(recovered.map((rollout) => rollout.retries)).toEqual([0, 1, 0, 0]);
    expect(recovered.map((rollout) => rollout.steps.map((step) => step.action))).toEqual(
      clean.map((rollout) => rollout.steps.map((step) => step.action)),
    );
    await expect(collect(2, 0)).rejects.toThrow(/the engine died/);
  });
});
