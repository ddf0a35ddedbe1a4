/**
 * What the ALFWorld experiment (`alfworld-experiment.ts`) and its RL step-size selection
 * (`alfworld-step-size.ts`) share: the loop configuration every condition starts from, and
 * the behaviour cloning that gives every trained condition its starting policy.
 */
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  HashingEmbedder,
  parseDreamGymConfig,
  ReplayBuffer,
  SeededRandom,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { cloneBehaviour } from '@dreamgym/core/training';
import type { DomainSetup } from '@dreamgym/run';
import { experimentBaseConfig } from './experiment-conditions.js';

/** A progress line on stderr, prefixed with the time of day. */
export const log = (message: string) =>
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);

/** A success rate with its 95% interval, in percent: `56.3% [39.3, 71.8]` (`–` for none). */
export const percent = (
  metrics: { successRate: number; successInterval95: readonly [number, number] } | undefined,
) =>
  metrics === undefined
    ? '–'
    : `${(100 * metrics.successRate).toFixed(1)}% [${(100 * metrics.successInterval95[0]).toFixed(1)}, ${(100 * metrics.successInterval95[1]).toFixed(1)}]`;

/** The settings of the experiment's base configuration that its command line chooses. */
export interface AlfworldProtocolSettings {
  seed: number;
  iterations: number;
  maxSteps: number;
  /** Real-engine servers: episodes played on the real engine at once. */
  servers: number;
  /** The RL trainer's Adam learning rate; without it, the policy's (also behaviour cloning's). */
  rlLearningRate?: number;
}

/** The loop configuration every condition of the ALFWorld experiment starts from. */
export function alfworldBaseConfig(settings: AlfworldProtocolSettings): DreamGymConfigInput {
  return experimentBaseConfig({ ...settings, realConcurrency: settings.servers });
}

/**
 * Behaviour cloning on the domain's expert trajectories for `settings.seed`, saved into
 * `directory`; resolves the seconds it took.
 */
export async function cloneAlfworldPolicy(
  setup: DomainSetup,
  settings: AlfworldProtocolSettings,
  directory: string,
  log: (message: string) => void,
): Promise<number> {
  const { seed } = settings;
  const cloned = createLinearSoftmaxPolicy(parseDreamGymConfig(alfworldBaseConfig(settings)));
  const started = performance.now();
  const cloning = await cloneBehaviour({
    policy: cloned,
    trajectories: setup.offlineTrajectories,
    candidateActions: (observation, history) =>
      setup.adapter.candidateActions(observation, history),
    config: { epochs: 20, miniBatchSize: 256, heldOutShare: 0.1, patience: 3 },
    random: new SeededRandom(seed).fork('behaviour-cloning'),
    onEpoch: (epoch) =>
      log(
        `seed ${seed} bc epoch ${epoch.epoch}: held-out NLL ${epoch.heldOutNegativeLogLikelihood.toFixed(3)}`,
      ),
  });
  const cloningSeconds = (performance.now() - started) / 1000;
  log(
    `seed ${seed} bc: epoch ${cloning.bestEpoch}, held-out NLL ${cloning.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${cloning.bestHeldOutNegativeLogLikelihood.toFixed(3)} (${cloningSeconds.toFixed(0)} s)`,
  );
  await cloned.saveState(directory);
  return cloningSeconds;
}

/**
 * The replay buffer of the domain's offline trajectories, written once into
 * `scratch/offline-buffer`; `fresh(name)` opens a copy of it for one run (the loop adds the
 * run's experience to the copy).
 */
export async function writeOfflineBuffer(
  setup: DomainSetup,
  scratch: string,
): Promise<{ size: number; fresh(name: string): Promise<ReplayBuffer> }> {
  const embedder = new HashingEmbedder({ dimension: 256 });
  const open = (directory: string) =>
    ReplayBuffer.open(directory, { embedder, index: { type: 'flat' } });
  const offline = join(scratch, 'offline-buffer');
  // A kept scratch folder may hold the buffer of an earlier run: it is written again whole.
  await rm(offline, { recursive: true, force: true });
  const buffer = await open(offline);
  await buffer.add(
    setup.offlineTrajectories.flatMap((trajectory, index) =>
      trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id ?? `offline:${index}` }),
    ),
  );
  const size = buffer.size;
  await buffer.close();
  return {
    size,
    async fresh(name) {
      const directory = join(scratch, `buffer-${name}`);
      await rm(directory, { recursive: true, force: true });
      await cp(offline, directory, { recursive: true });
      return open(directory);
    },
  };
}
