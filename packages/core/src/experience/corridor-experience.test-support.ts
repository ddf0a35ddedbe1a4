/**
 * Test support (not exported): real corridor trajectories, played on `CorridorEnvironment`
 * by a seeded mix of the optimal policy and random play, and a replay buffer of them.
 */

import type { Step, Task, Trajectory } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { SeededRandom } from '../random/seeded-random.js';
import { ReplayBuffer } from '../replay/replay-buffer.js';
import { CorridorEnvironment, corridorTask } from '../testing/corridor-domain.js';

/** The optimal action in the corridor from `position`, holding the key or not. */
function optimalAction(task: Task, position: number, holdsKey: boolean): string {
  const { keyRoom, doorRoom } = task.meta as { keyRoom: number; doorRoom: number };
  const goal = holdsKey ? doorRoom : keyRoom;
  if (position < goal) return 'go right';
  if (position > goal) return 'go left';
  return holdsKey ? 'open door' : 'take key';
}

/** Plays one episode of `task`: optimal with probability `1 - noise` per step, else random. */
export async function playCorridor(
  task: Task,
  random: SeededRandom,
  noise: number,
  maxSteps = 20,
): Promise<Trajectory> {
  const environment = new CorridorEnvironment({ maxSteps });
  let observation = await environment.reset(task);
  const steps: Step[] = [];
  let position = 0;
  let holdsKey = false;
  let success = false;
  for (;;) {
    const action =
      random.float() < noise
        ? random.choice(observation.actions ?? ['go right'])
        : optimalAction(task, position, holdsKey);
    const result = await environment.step(action);
    steps.push({ observation, action, reward: result.reward, done: result.done });
    const room = /You are in room (\d+)/.exec(result.observation.text);
    position = Number(room?.[1] ?? position);
    holdsKey ||= result.observation.text.includes('You carry the key');
    observation = result.observation;
    if (result.done) {
      success = result.info.success === true;
      break;
    }
  }
  await environment.close();
  return { task, steps, finalObservation: observation, source: 'real', success };
}

/** Every corridor layout of `length` rooms. */
export function corridorTasks(length: number): Task[] {
  const tasks: Task[] = [];
  for (let keyRoom = 0; keyRoom < length; keyRoom += 1) {
    for (let doorRoom = 0; doorRoom < length; doorRoom += 1) {
      tasks.push(corridorTask({ length, keyRoom, doorRoom }));
    }
  }
  return tasks;
}

/** `perTask` episodes of every task, with ids `<task>/<n>`. */
export async function corridorTrajectories(
  tasks: readonly Task[],
  perTask: number,
  seed: number,
): Promise<Trajectory[]> {
  const random = new SeededRandom(seed);
  const trajectories: Trajectory[] = [];
  for (const task of tasks) {
    for (let episode = 0; episode < perTask; episode += 1) {
      const trajectory = await playCorridor(task, random, episode % 2 === 0 ? 0.1 : 0.5);
      trajectories.push({ ...trajectory, id: `${task.id}/${seed}-${episode}` });
    }
  }
  return trajectories;
}

/**
 * An in-memory replay buffer (flat index) holding `trajectories`. phi includes the
 * instruction: corridor states do not show where the key and door are, the task does.
 */
export async function corridorBuffer(trajectories: readonly Trajectory[]): Promise<ReplayBuffer> {
  const buffer = ReplayBuffer.create({
    embedder: new HashingEmbedder({ dimension: 256 }),
    phiWeights: { instruction: 1 },
  });
  await buffer.add(trajectories.flatMap((trajectory) => trajectoryToTransitions(trajectory)));
  return buffer;
}
