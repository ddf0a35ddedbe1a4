import { describe, expect, it } from 'vitest';
import { type Trajectory, TrajectorySchema } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import { cloneBehaviour } from './behaviour-cloning.js';
import {
  BehaviourCloningConfigSchema,
  createLinearSoftmaxPolicy,
  parseDreamGymConfig,
} from './dreamgym-config.js';

/** One successful one-step episode of task `id` (`kind:seed`), and a failed one of every fourth. */
function demonstrations(): Trajectory[] {
  const trajectories: Trajectory[] = [];
  for (const kind of ['left', 'right', 'up']) {
    for (let seed = 0; seed < 20; seed += 1) {
      const task = {
        id: `${kind}:${seed}`,
        domain: 'toy',
        instruction: `go ${kind}`,
        origin: 'seed' as const,
        meta: {},
      };
      const step = (action: string, reward: number) => ({
        observation: { text: `room ${seed}`, actions: ['go left', 'go right', 'go up'] },
        action,
        reward,
        done: true,
      });
      trajectories.push(
        TrajectorySchema.parse({
          task,
          steps: [step(`go ${kind}`, 1)],
          source: 'offline',
          success: true,
        }),
      );
      if (seed % 4 === 0)
        trajectories.push(
          TrajectorySchema.parse({
            task,
            steps: [step('go left', 0)],
            source: 'offline',
            success: false,
          }),
        );
    }
  }
  return trajectories;
}

async function clone(taskShare: number | undefined, seed = 3) {
  return cloneBehaviour({
    policy: createLinearSoftmaxPolicy(parseDreamGymConfig({ seed: 1 })),
    trajectories: demonstrations(),
    config: BehaviourCloningConfigSchema.parse({ epochs: 1, heldOutShare: 0.2, taskShare }),
    random: new SeededRandom(seed),
  });
}

describe('cloneBehaviour taskShare', () => {
  it('clones the successes of a seeded share of the demonstrating tasks', async () => {
    const all = await clone(undefined);
    expect(all.trainTasks + all.heldOutTasks).toBe(60);
    const sixth = await clone(1 / 6);
    expect(sixth.trainTasks + sixth.heldOutTasks).toBe(10);
    expect(sixth.trainSamples + sixth.heldOutSamples).toBe(10);
    // The same seed draws the same tasks; another seed other ones, as many.
    expect(await clone(1 / 6)).toEqual(sixth);
    const other = await clone(1 / 6, 4);
    expect(other.trainTasks + other.heldOutTasks).toBe(10);
  });

  it('refuses a share outside (0, 1]', () => {
    expect(() => BehaviourCloningConfigSchema.parse({ taskShare: 0 })).toThrow();
    expect(() => BehaviourCloningConfigSchema.parse({ taskShare: 1.5 })).toThrow();
  });
});
