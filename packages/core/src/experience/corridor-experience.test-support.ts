/**
 * Test support (not exported): real corridor trajectories, played on `CorridorEnvironment`
 * by a seeded mix of the optimal policy and random play (`playCorridor`), and a replay
 * buffer of them.
 */

import type { Task, Trajectory } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { SeededRandom } from '../random/seeded-random.js';
import { ReplayBuffer } from '../replay/replay-buffer.js';
import { playCorridor } from '../testing/corridor-domain.js';

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
      const trajectory = await playCorridor(task, random, {
        noise: episode % 2 === 0 ? 0.1 : 0.5,
        source: 'real',
      });
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
