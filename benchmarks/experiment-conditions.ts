/**
 * The paper's experimental conditions as DreamGym loop configurations, shared by the ALFWorld
 * and MiniWoB++ experiments: each starts from the experiments' base configuration.
 */
import type { DreamGymConfigInput } from '@dreamgym/core';

/** The settings of an experiment's base configuration that its command line chooses. */
export interface ExperimentSettings {
  seed: number;
  iterations: number;
  maxSteps: number;
  /** Episodes played in the real environment at once. */
  realConcurrency: number;
  /** The RL trainer's Adam learning rate; without it, the policy's (also behaviour cloning's). */
  rlLearningRate?: number;
}

/** The loop configuration every condition of the ALFWorld and MiniWoB++ experiments starts from. */
export function experimentBaseConfig(settings: ExperimentSettings): DreamGymConfigInput {
  return {
    seed: settings.seed,
    iterations: settings.iterations,
    tasksPerIteration: 16,
    rolloutsPerTask: 4,
    maxSteps: settings.maxSteps,
    concurrency: 8,
    realConcurrency: settings.realConcurrency,
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

/** The conditions every experiment runs. */
export const PAPER_CONDITIONS = ['random', 'bc', 'real-rl', 'dreamgym', 'dreamgym-s2r'] as const;
/** DreamGym with one part switched off. */
export const ABLATION_CONDITIONS = ['no-curriculum', 'no-replay', 'no-retrieval'] as const;

/**
 * What condition `name` trains: a loop configuration, or nothing (`random`, `bc`). `budget` is
 * real-env RL's real-transition budget B (S2R gets B/10); `known` lists the names the
 * experiment accepts.
 */
export function conditionConfig(
  name: string,
  base: DreamGymConfigInput,
  budget: number,
  known: readonly string[],
): DreamGymConfigInput | undefined {
  if (!known.includes(name)) throw new Error(`Unknown condition ${name}.`);
  const simToReal = base.simToReal!;
  switch (name) {
    case 'random':
    case 'bc':
      return undefined;
    case 'dreamgym':
      return base;
    case 'dreamgym-s2r':
      return {
        ...base,
        simToReal: { ...simToReal, realTransitionBudget: Math.round(budget / 10) },
      };
    case 'real-rl':
      return { ...base, iterations: 0, simToReal: { ...simToReal, realTransitionBudget: budget } };
    case 'no-curriculum':
      return { ...base, curriculum: { ...base.curriculum, enabled: false } };
    case 'no-replay':
      return { ...base, replayWriteBack: false };
    case 'no-retrieval':
      return { ...base, retrieval: { enabled: false, k: 8 } };
    default:
      throw new Error(`Unknown condition ${name}.`);
  }
}
