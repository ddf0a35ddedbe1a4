/**
 * The paper's experimental conditions as DreamGym loop configurations, shared by the ALFWorld
 * and MiniWoB++ experiments: each starts from the experiment's base configuration.
 */
import type { DreamGymConfigInput } from '@dreamgym/core';

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
