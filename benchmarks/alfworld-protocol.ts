/**
 * What the ALFWorld experiment (`alfworld-experiment.ts`) and its RL step-size selection
 * (`alfworld-step-size.ts`) share: the loop configuration every condition starts from, and
 * the behaviour cloning that gives every trained condition its starting policy.
 */
import type { DomainSetup } from '@dreamgym/cli';
import {
  cloneBehaviour,
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  parseDreamGymConfig,
  SeededRandom,
} from '@dreamgym/core';

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
  return {
    seed: settings.seed,
    iterations: settings.iterations,
    tasksPerIteration: 16,
    rolloutsPerTask: 4,
    maxSteps: settings.maxSteps,
    concurrency: 8,
    realConcurrency: settings.servers,
    algorithm: 'grpo',
    trainer: {
      epochs: 2,
      ...(settings.rlLearningRate === undefined ? {} : { learningRate: settings.rlLearningRate }),
    },
    policy: { hashBits: 18, learningRate: 0.05 },
    curriculum: { lambda: 0.3, tasksToExpand: 4, variantsPerTask: 2 },
    retrieval: { k: 8 },
    evaluation: { every: 0, environments: [] },
    simToReal: { realTransitionBudget: 0, tasksPerIteration: 8, rolloutsPerTask: 4 },
  };
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
