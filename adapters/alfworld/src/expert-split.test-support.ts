/**
 * Test support: the expert games split 80/20 by task directory, with a replay buffer of the
 * 80%, for the tests that measure an experience model on games it never stored.
 */
import { createHash } from 'node:crypto';
import {
  HashingEmbedder,
  ReplayBuffer,
  type Trajectory,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { loadAlfworldExpertTrajectories } from './datasets/expert-trajectories.js';
import { alfworldDataDirectory } from './test-data-directory.js';

/**
 * The deterministic split by task directory (`train/<task directory>/<trial>`): no held-out
 * game shares its scene, objects and goal with a stored one.
 */
export function isHeldOutGame(trajectory: { task: { id: string } }): boolean {
  const directory = trajectory.task.id.split('/')[1]!;
  return createHash('sha256').update(directory).digest()[0]! % 5 === 0;
}

/** The expert trajectories, split, and a flat-index buffer of the stored (train) ones. */
export async function loadExpertSplit(): Promise<{
  train: Trajectory[];
  heldOut: Trajectory[];
  buffer: ReplayBuffer;
}> {
  const train: Trajectory[] = [];
  const heldOut: Trajectory[] = [];
  for await (const trajectory of loadAlfworldExpertTrajectories(alfworldDataDirectory())) {
    (isHeldOutGame(trajectory) ? heldOut : train).push(trajectory);
  }
  const buffer = ReplayBuffer.create({
    embedder: new HashingEmbedder({ dimension: 256 }),
    index: { type: 'flat' },
  });
  await buffer.add(train.flatMap((trajectory) => trajectoryToTransitions(trajectory)));
  return { train, heldOut, buffer };
}
