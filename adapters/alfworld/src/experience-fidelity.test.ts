/**
 * The embedded experience model on real ALFWorld data: a replay buffer of the expert
 * trajectories of 80% of the train games, evaluated with teacher forcing on the other
 * 20% (split by task directory, so no held-out game shares its scene, objects and goal
 * with a stored one), and the synthetic environment's conformance on ALFWorld.
 */
import {
  type ReplayBuffer,
  RetrievalExperienceModel,
  SyntheticEnvironment,
  type Trajectory,
} from '@dreamgym/core';
import { evaluateExperienceModel, type FidelityFigures } from '@dreamgym/core/eval';
import { describeEnvironmentConformance } from '@dreamgym/core/testing/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAlfworldAction } from './action-grammar.js';
import { createAlfworldAdapter } from './adapter.js';
import { alfworldExperienceHints } from './experience-hints.js';
import { loadExpertSplit } from './expert-split.test-support.js';

/**
 * Every third held-out game is evaluated (about 3,000 steps): the file is ordered by task
 * type, so a stride, not a prefix, covers all six types.
 */
const EVALUATED_STRIDE = 3;
/** The actions whose outcome the engine writes from a template. */
const TEMPLATED = ['take', 'put', 'heat', 'cool', 'clean', 'use', 'inventory'];

interface Data {
  train: Trajectory[];
  heldOut: Trajectory[];
  buffer: ReplayBuffer;
}
let data: Promise<Data> | undefined;
function load(): Promise<Data> {
  data ??= loadExpertSplit();
  return data;
}
afterAll(async () => {
  if (data) await (await data).buffer.close();
});

const adapter = createAlfworldAdapter();
const model = new RetrievalExperienceModel({
  parseAction: parseAlfworldAction,
  hints: alfworldExperienceHints,
});

function line(name: string, figures: FidelityFigures): string {
  const percent = (value: number) => `${(100 * value).toFixed(1)}%`;
  return `${name.padEnd(10)} steps ${String(figures.steps).padStart(5)}  exact ${percent(figures.exactMatch)}  F1 ${figures.tokenF1.toFixed(3)}  reward acc ${percent(figures.rewardAccuracy)}  |r-r^| mean ${figures.rewardMeanAbsoluteError.toFixed(3)} max ${figures.rewardMaxAbsoluteError}  done agree ${percent(figures.terminalAgreement)}  done recall ${percent(figures.terminalRecall)}  precision ${percent(figures.terminalPrecision)}`;
}

describe('RetrievalExperienceModel on held-out ALFWorld games', () => {
  it('predicts templated transitions exactly and reports every figure', async () => {
    const { train, heldOut, buffer } = await load();
    expect(heldOut.length).toBeGreaterThan(0.15 * (train.length + heldOut.length));
    const stored = new Set(train.map((trajectory) => trajectory.task.id.split('/')[1]));
    for (const trajectory of heldOut)
      expect(stored.has(trajectory.task.id.split('/')[1])).toBe(false);

    const evaluated = heldOut.filter((_, index) => index % EVALUATED_STRIDE === 0);
    const report = await evaluateExperienceModel(model, evaluated, {
      retriever: buffer,
      adapter,
      k: 8,
    });
    const templated = Object.entries(report.byActionType).filter(([type]) =>
      TEMPLATED.includes(type),
    );
    const templatedSteps = templated.reduce((sum, [, figures]) => sum + figures.steps, 0);
    const templatedExact =
      templated.reduce((sum, [, figures]) => sum + figures.exactMatch * figures.steps, 0) /
      templatedSteps;
    console.log(
      [
        `ALFWorld experience-model fidelity: buffer of ${buffer.stats().size} transitions from ${train.length} train games; ${report.overall.steps} steps of ${report.trajectories} held-out games (k = 8, flat index)`,
        line('overall', report.overall),
        ...Object.entries(report.byActionType).map(([type, figures]) => line(type, figures)),
        `templated (${templated.map(([type]) => type).join(', ')}): ${templatedSteps} steps, exact ${(100 * templatedExact).toFixed(1)}%`,
      ].join('\n'),
    );
    expect(report.trajectories).toBe(evaluated.length);
    expect(new Set(evaluated.map((trajectory) => trajectory.task.meta.taskType)).size).toBe(6);
    expect(templatedSteps).toBeGreaterThan(300);
    expect(templatedExact).toBeGreaterThanOrEqual(0.9);
    // The buffer counts how often each transition occurred and ranks equally similar ones
    // by that count, and the model votes with it: 69.3% overall exact (54.3% when
    // duplicates were dropped and neighbours voted once each).
    expect(report.overall.exactMatch).toBeGreaterThanOrEqual(0.66);
    for (const [type, figures] of templated) {
      if (figures.steps >= 10) expect(figures.exactMatch, type).toBeGreaterThanOrEqual(0.9);
    }
  }, 240_000);
});

// A look-at-in-light game: its last command (`use desklamp 1`) is the only terminal one.
async function conformanceGame(): Promise<Trajectory> {
  const { heldOut } = await load();
  return heldOut.find((trajectory) => trajectory.task.meta.taskType === 'look_at_obj_in_light')!;
}
const game = await conformanceGame();

describeEnvironmentConformance(
  'synthetic ALFWorld (retrieval experience model over the expert buffer)',
  {
    createEnvironment: async () =>
      new SyntheticEnvironment({ model, retriever: (await load()).buffer, adapter, k: 8 }),
    tasks: [game.task, (await load()).heldOut[1]!.task],
    solution: game.steps.map((step) => step.action),
  },
  { timeout: 120_000 },
);
