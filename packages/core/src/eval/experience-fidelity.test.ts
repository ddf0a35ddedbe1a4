import { describe, expect, it } from 'vitest';
import {
  corridorBuffer,
  corridorTrajectories,
} from '../experience/corridor-experience.test-support.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { RetrievalExperienceModel } from '../experience/retrieval-experience-model.js';
import { TaskSchema, type Trajectory } from '../mdp/schemas.js';
import { corridorTasks, createCorridorAdapter } from '../testing/corridor-domain.js';
import { evaluateExperienceModel } from './experience-fidelity.js';

const adapter = createCorridorAdapter();
const task = TaskSchema.parse({ id: 't', domain: 'corridor', instruction: 'open the door' });

/** Two steps, one `go` and one `open`, whose next states are `A` then `B` (final, reward 1). */
const trajectory: Trajectory = {
  id: 'hand',
  task,
  steps: [
    { observation: { text: 'S' }, action: 'go right', reward: 0, done: false },
    { observation: { text: 'A' }, action: 'open door', reward: 1, done: true },
  ],
  finalObservation: { text: 'B' },
  source: 'real',
  success: true,
};

describe('evaluateExperienceModel', () => {
  it('computes the figures of a hand-made case', async () => {
    // Predicts `A` (right after `go`, wrong after `open`), never done, reward 0.
    const constant: ExperienceModel = {
      id: 'constant',
      predict: async () => ({
        reasoning: '',
        observation: { text: 'A' },
        reward: 0,
        done: false,
        success: false,
      }),
    };
    const report = await evaluateExperienceModel(constant, [trajectory], { adapter });
    expect(report.trajectories).toBe(1);
    expect(report.overall).toEqual({
      steps: 2,
      exactMatch: 0.5,
      tokenF1: 0.5,
      rewardAccuracy: 0.5,
      rewardMeanAbsoluteError: 0.5,
      rewardMaxAbsoluteError: 1,
      terminalAgreement: 0.5,
      terminalRecall: 0,
      terminalPrecision: 0,
      falseSuccessRate: 0,
      trueSuccessRecall: 0,
      realSuccesses: 1,
    });
    expect(report.byActionType.go).toMatchObject({ steps: 1, exactMatch: 1, terminalAgreement: 1 });
    expect(report.byActionType.open).toMatchObject({ steps: 1, exactMatch: 0, rewardAccuracy: 0 });
  });

  it('measures the retrieval model on held-out real corridor episodes', async () => {
    const tasks = corridorTasks(4);
    const buffer = await corridorBuffer(await corridorTrajectories(tasks, 12, 1));
    const heldOut = await corridorTrajectories(tasks, 1, 99);
    const model = new RetrievalExperienceModel({ parseAction: adapter.parseAction });
    const report = await evaluateExperienceModel(model, heldOut, {
      retriever: buffer,
      adapter,
      k: 8,
    });
    await buffer.close();
    expect(report.overall.steps).toBe(heldOut.reduce((sum, t) => sum + t.steps.length, 0));
    // The corridor is deterministic and every layout is in the buffer; the misses are states
    // of a layout only its instruction tells apart, which hashed phi separates weakly.
    expect(report.overall.exactMatch).toBeGreaterThan(0.85);
    expect(report.overall.terminalAgreement).toBeGreaterThan(0.9);
    expect(Object.keys(report.byActionType).sort()).toEqual(['go', 'open', 'take']);
  });

  it('counts false successes and recalls true ones, and keeps the worst disagreements', async () => {
    // Predicts `B`, a successful end, after every action: right after `open`, a false success
    // after `go` (reality went on to `A`).
    const eager: ExperienceModel = {
      id: 'eager',
      predict: async () => ({
        reasoning: '',
        observation: { text: 'B' },
        reward: 1,
        done: true,
        success: true,
      }),
    };
    const report = await evaluateExperienceModel(eager, [trajectory], {
      adapter,
      keepDisagreements: 5,
    });
    expect(report.overall).toMatchObject({
      falseSuccessRate: 0.5,
      trueSuccessRecall: 1,
      realSuccesses: 1,
    });
    expect(report.byActionType.go).toMatchObject({ falseSuccessRate: 1, realSuccesses: 0 });
    expect(report.byActionType.open).toMatchObject({ falseSuccessRate: 0, trueSuccessRecall: 1 });
    expect(report.worstDisagreements).toEqual([
      {
        kind: 'false-success',
        trajectoryId: 'hand',
        taskId: 't',
        instruction: 'open the door',
        stepIndex: 0,
        action: 'go right',
        actionType: 'go',
        state: 'S',
        realNextState: 'A',
        predictedNextState: 'B',
        realReward: 0,
        predictedReward: 1,
        realDone: false,
        predictedDone: true,
        tokenF1: 0,
      },
    ]);
    // Without `keepDisagreements`, none are kept.
    expect(
      (await evaluateExperienceModel(eager, [trajectory], { adapter })).worstDisagreements,
    ).toEqual([]);
  });

  it('stops after maxSteps', async () => {
    const report = await evaluateExperienceModel(
      new RetrievalExperienceModel(),
      [trajectory, trajectory],
      { adapter, maxSteps: 3 },
    );
    expect(report.overall.steps).toBe(3);
  });
});
