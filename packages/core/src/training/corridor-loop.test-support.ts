/**
 * Test support (not exported): a complete DreamGym run on the corridor domain with the
 * embedded defaults, shared by the loop test and its crash child.
 */

import {
  corridorBuffer,
  corridorTrajectories,
} from '../experience/corridor-experience.test-support.js';
import { RetrievalExperienceModel } from '../experience/retrieval-experience-model.js';
import type { Task, Trajectory } from '../mdp/schemas.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
} from '../testing/corridor-domain.js';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  parseDreamGymConfig,
} from './dreamgym-config.js';
import { type DreamGymComponents, DreamGymLoop } from './dreamgym-loop.js';

/** Seed tasks: corridors of 8 rooms with the key and the door far from the entrance. */
export function corridorSeedTasks(): Task[] {
  const layouts = [
    [5, 3],
    [4, 6],
    [6, 2],
    [3, 5],
    [5, 7],
    [6, 4],
  ] as const;
  return layouts.map(([keyRoom, doorRoom]) => corridorTask({ length: 8, keyRoom, doorRoom }));
}

export const corridorLoopConfig: DreamGymConfigInput = {
  seed: 11,
  iterations: 8,
  tasksPerIteration: 6,
  rolloutsPerTask: 4,
  maxSteps: 16,
  concurrency: 4,
  algorithm: 'grpo',
  trainer: { epochs: 2 },
  policy: { hashBits: 14, learningRate: 0.1 },
  curriculum: { lambda: 0.34, tasksToExpand: 2, variantsPerTask: 2 },
  retrieval: { k: 4 },
  evaluation: { every: 4, environments: ['synthetic', 'real'] },
  simToReal: { realTransitionBudget: 120, tasksPerIteration: 3, rolloutsPerTask: 2 },
  checkpointEvery: 2,
};

/** The loop's offline corridor experience (random and near-optimal play), and a buffer of it. */
export async function corridorOfflineBuffer(): Promise<{
  offline: Trajectory[];
  replayBuffer: ReplayBuffer;
}> {
  const offline = await corridorTrajectories(corridorSeedTasks(), 3, 5);
  const replayBuffer = await corridorBuffer(
    offline.map((trajectory) => ({ ...trajectory, source: 'offline' })),
  );
  return { offline, replayBuffer };
}

/**
 * The loop with a fresh buffer of offline corridor experience (random and near-optimal play)
 * and a fresh embedded policy; `config` overrides fields of {@link corridorLoopConfig}.
 */
export async function corridorLoop(
  runDirectory: string,
  overrides: Partial<DreamGymComponents> = {},
  config: DreamGymConfigInput = {},
): Promise<DreamGymLoop> {
  const merged = { ...corridorLoopConfig, ...config };
  const seedTasks = corridorSeedTasks();
  const { offline, replayBuffer } = await corridorOfflineBuffer();
  return new DreamGymLoop({
    config: merged,
    components: {
      adapter: createCorridorAdapter(),
      policy: createLinearSoftmaxPolicy(parseDreamGymConfig(merged)),
      experienceModel: new RetrievalExperienceModel(),
      replayBuffer,
      seedTasks,
      evaluationTasks: seedTasks,
      demonstrations: offline,
      realEnvironment: () => new CorridorEnvironment({ maxSteps: merged.maxSteps }),
      ...overrides,
    },
    runDirectory,
  });
}
