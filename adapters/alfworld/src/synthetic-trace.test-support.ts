/**
 * Test support: a seeded random walk through the synthetic ALFWorld environment (retrieval
 * model, HNSW buffer of the stored expert games) as one digest of every step it took: the
 * action, the predicted state, reward and end, and the demonstrations retrieved. Given the
 * core to play with, so that a speed-up can be checked against the code before it.
 */
import { createHash } from 'node:crypto';
import type * as Core from '@dreamgym/core';
import { parseAlfworldAction } from './action-grammar.js';
import { createAlfworldAdapter } from './adapter.js';
import { alfworldExperienceHints } from './experience-hints.js';

/** What of `@dreamgym/core` the walk uses. */
export type TraceCore = Pick<
  typeof Core,
  | 'HashingEmbedder'
  | 'ReplayBuffer'
  | 'RetrievalExperienceModel'
  | 'SeededRandom'
  | 'SyntheticEnvironment'
  | 'trajectoryToTransitions'
>;

/**
 * The digest of `steps` steps of a seeded uniform policy over the candidate actions, in episodes
 * of held-out games (30 steps at most), with k = 8 demonstrations from an HNSW index (m 16,
 * efSearch 64) over the stored games' transitions.
 */
export async function syntheticTrace(
  core: TraceCore,
  stored: readonly Core.Trajectory[],
  heldOut: readonly Core.Trajectory[],
  steps: number,
): Promise<{ digest: string; episodes: number; steps: number }> {
  const buffer = core.ReplayBuffer.create({
    embedder: new core.HashingEmbedder({ dimension: 256 }),
    index: { type: 'hnsw', m: 16, efConstruction: 40, efSearch: 64 },
    threads: 1,
  });
  await buffer.add(stored.flatMap((trajectory) => core.trajectoryToTransitions(trajectory)));
  const adapter = createAlfworldAdapter();
  const environment = new core.SyntheticEnvironment({
    model: new core.RetrievalExperienceModel({
      parseAction: parseAlfworldAction,
      hints: alfworldExperienceHints,
    }),
    retriever: buffer,
    adapter,
    k: 8,
    maxSteps: 30,
  });
  const random = new core.SeededRandom(7);
  const digest = createHash('sha256');
  let episodes = 0;
  let done = true;
  let observation: Core.Observation | undefined;
  for (let step = 0; step < steps; step += 1) {
    if (done || !observation) {
      observation = await environment.reset(heldOut[random.int(heldOut.length)]!.task);
      episodes += 1;
    }
    const action = random.choice(observation.actions ?? ['look']);
    const result = await environment.step(action);
    const demos = (result.info.demoIds as string[]).join(',');
    digest.update(
      `${action}\u0000${result.observation.text}\u0000${result.reward}\u0000${result.done}\u0000${demos}\n`,
    );
    observation = result.observation;
    done = result.done;
  }
  await buffer.close();
  return { digest: digest.digest('hex'), episodes, steps };
}
