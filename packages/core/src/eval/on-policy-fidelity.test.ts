import { describe, expect, it } from 'vitest';
import type { ExperienceModel } from '../experience/experience-model.js';
import { SyntheticEnvironment } from '../experience/synthetic-environment.js';
import type { Task } from '../mdp/schemas.js';
import type { Policy } from '../policy/policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import type { TransitionRetriever } from '../replay/retriever.js';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
} from '../testing/corridor-domain.js';
import { measureOnPolicyFidelity, type OnPolicyFidelityProgress } from './on-policy-fidelity.js';

const adapter = createCorridorAdapter();
const LOCKED = 'The door is locked.';
const OPENED = 'You unlock and open the door.';

/**
 * The real corridor, replayed from the history, with two faults: it opens a locked door
 * (paying for what reality refuses), and it never opens a door in room 2 (missing a real
 * success).
 */
const faultyModel: ExperienceModel = {
  id: 'faulty-corridor',
  async predict({ task, history, action }) {
    const corridor = new CorridorEnvironment({ maxSteps: 100 });
    await corridor.reset(task);
    for (const step of history) await corridor.step(step.action);
    const real = await corridor.step(action);
    const { doorRoom } = task.meta as { doorRoom: number };
    if (action === 'open door' && real.observation.text.startsWith(LOCKED)) {
      return {
        reasoning: 'the door opens',
        observation: { ...real.observation, text: real.observation.text.replace(LOCKED, OPENED) },
        reward: 1,
        done: true,
        success: true,
      };
    }
    if (action === 'open door' && doorRoom === 2) {
      return {
        reasoning: 'doors in room 2 stay shut',
        observation: { ...real.observation, text: real.observation.text.replace(OPENED, LOCKED) },
        reward: 0,
        done: false,
        success: false,
      };
    }
    return {
      reasoning: 'as the corridor does',
      observation: real.observation,
      reward: real.reward,
      done: real.done,
      success: real.info.success === true,
    };
  },
};

/** Takes a key it sees, else walks to the door and opens it: with or without the key. */
const lazyPolicy: Policy = {
  id: 'lazy',
  async act(observation, { task }) {
    const { doorRoom } = task.meta as { doorRoom: number };
    const room = Number(/You are in room (\d+)/.exec(observation.text)![1]);
    if (/You see a key/.test(observation.text)) return { action: 'take key' };
    if (room < doorRoom) return { action: 'go right' };
    if (room > doorRoom) return { action: 'go left' };
    return { action: 'open door' };
  },
};

const noRetrieval: TransitionRetriever = { search: async () => [] };

/**
 * - key 0, door 1: take, go, open: succeeds in both.
 * - key 2, door 1: go, open: a synthetic success; really locked, opened again until the limit.
 * - key 2, door 0: open: a synthetic success; really locked four times.
 * - key 0, door 2: take, go, go, open: a real success the model misses (synthetic: cut off).
 */
const tasks: Task[] = [
  corridorTask({ length: 3, keyRoom: 0, doorRoom: 1 }),
  corridorTask({ length: 3, keyRoom: 2, doorRoom: 1 }),
  corridorTask({ length: 3, keyRoom: 2, doorRoom: 0 }),
  corridorTask({ length: 3, keyRoom: 0, doorRoom: 2 }),
];

async function measure(onProgress?: (progress: OnPolicyFidelityProgress) => void) {
  let realEnvironments = 0;
  const report = await measureOnPolicyFidelity({
    policy: lazyPolicy,
    tasks,
    adapter,
    syntheticEnvironment: () =>
      new SyntheticEnvironment({ model: faultyModel, retriever: noRetrieval, adapter, k: 0 }),
    realEnvironment: async () => {
      realEnvironments += 1;
      return new CorridorEnvironment({ maxSteps: 100 });
    },
    experienceModel: faultyModel,
    maxSteps: 4,
    random: new SeededRandom(1),
    concurrency: 2,
    realConcurrency: 2,
    ...(onProgress ? { onProgress } : {}),
  });
  return { report, realEnvironments };
}

describe('measureOnPolicyFidelity', () => {
  it('finds the synthetic successes reality refuses, on the policy own episodes', async () => {
    const phases: OnPolicyFidelityProgress[] = [];
    const { report, realEnvironments } = await measure((progress) => phases.push(progress));
    expect(report).toMatchObject({
      experienceModelId: 'faulty-corridor',
      policyId: 'lazy',
      tasks: 4,
      maxSteps: 4,
      greedy: true,
    });
    expect(report.syntheticSuccess).toMatchObject({ rate: 0.75, successes: 3, episodes: 4 });
    expect(report.realSuccess).toMatchObject({ rate: 0.5, successes: 2, episodes: 4 });
    expect(report.realSuccess.interval95[0]).toBeLessThan(0.5);
    expect(report.realSuccess.interval95[1]).toBeGreaterThan(0.5);
    expect(report.episodes.map((pair) => [pair.synthetic, pair.real])).toEqual([
      [
        { success: true, steps: 3 },
        { success: true, steps: 3 },
      ],
      [
        { success: true, steps: 2 },
        { success: false, steps: 4 },
      ],
      [
        { success: true, steps: 1 },
        { success: false, steps: 4 },
      ],
      [
        { success: false, steps: 4 },
        { success: true, steps: 4 },
      ],
    ]);

    // Three synthetic successes replayed; only the one that took the key opens the door.
    const precision = report.syntheticSuccessPrecision;
    expect(precision).toMatchObject({ replayed: 3, reallySucceeded: 1 });
    expect(precision.rate).toBeCloseTo(1 / 3, 12);
    expect(precision.replays.map((replay) => replay.taskId)).toEqual([
      tasks[0]!.id,
      tasks[1]!.id,
      tasks[2]!.id,
    ]);
    expect(precision.replays[0]).toMatchObject({
      actions: ['take key', 'go right', 'open door'],
      stepsReplayed: 3,
      realEnded: true,
      realSuccess: true,
    });
    expect(precision.replays[0]!.firstDisagreement).toBeUndefined();
    expect(precision.replays[1]).toMatchObject({
      actions: ['go right', 'open door'],
      stepsReplayed: 2,
      realEnded: false,
      realSuccess: false,
      firstDisagreement: {
        stepIndex: 1,
        action: 'open door',
        syntheticNextState: `${OPENED} You are in room 1. You see a door.`,
        realNextState: `${LOCKED} You are in room 1. You see a door.`,
        syntheticReward: 1,
        realReward: 0,
        syntheticDone: true,
        realDone: false,
      },
    });
    expect(precision.replays[2]!.firstDisagreement).toMatchObject({ stepIndex: 0 });

    // Teacher-forced on the 3 + 4 + 4 + 4 = 15 real steps: 3 + 4 locked opens predicted as
    // successes; of the 2 real successes the model predicts 1; 3 + 1 + 0 + 3 next states exact.
    expect(report.teacherForced.steps).toBe(15);
    expect(report.falseSuccessRate).toBeCloseTo(7 / 15, 12);
    expect(report.trueSuccessRecall).toBe(0.5);
    expect(report.nextStateExact).toBeCloseTo(7 / 15, 12);
    expect(Object.keys(report.byActionType)).toEqual(['go', 'open', 'take']);
    expect(report.byActionType.open).toMatchObject({ steps: 9, realSuccesses: 2 });
    expect(report.byActionType.open!.falseSuccessRate).toBeCloseTo(7 / 9, 12);
    expect(report.byActionType.open!.trueSuccessRecall).toBe(0.5);
    expect(report.byActionType.go).toMatchObject({
      steps: 4,
      falseSuccessRate: 0,
      exactMatch: 1,
      realSuccesses: 0,
    });
    expect(report.byActionType.take).toMatchObject({ steps: 2, falseSuccessRate: 0 });

    // The worst: the seven false successes in replay order, then the missed success.
    expect(report.worstDisagreements.map((step) => step.kind)).toEqual([
      ...Array(7).fill('false-success'),
      'missed-success',
    ]);
    expect(report.worstDisagreements[0]).toMatchObject({
      taskId: tasks[1]!.id,
      instruction: tasks[1]!.instruction,
      stepIndex: 1,
      action: 'open door',
      actionType: 'open',
      realNextState: `${LOCKED} You are in room 1. You see a door.`,
      predictedNextState: `${OPENED} You are in room 1. You see a door.`,
      realReward: 0,
      predictedReward: 1,
    });
    expect(report.worstDisagreements[7]).toMatchObject({
      taskId: tasks[3]!.id,
      stepIndex: 3,
      realReward: 1,
      predictedReward: 0,
    });

    // The real episodes and the replays share the two real environments.
    expect(realEnvironments).toBe(2);
    expect([...new Set(phases.map((progress) => progress.phase))]).toEqual([
      'synthetic',
      'real',
      'replay',
      'teacher-forced',
    ]);
    expect(phases.filter((progress) => progress.phase === 'replay').at(-1)).toMatchObject({
      done: 3,
      total: 3,
    });
    expect(phases.at(-1)).toEqual({ phase: 'teacher-forced', done: 15, total: 15 });
  });

  it("counts no end where the real environment's own step limit cut the episode", async () => {
    // The real corridor stops after 2 actions, below the measurement's 4 (as MiniWoB++'s pages
    // stop at 10 below a run's 30): take key, go right, cut. The model, like the real
    // corridor without the cut, ends neither step; that is no disagreement.
    const { teacherForced, episodes, realSuccess } = await measureOnPolicyFidelity({
      policy: lazyPolicy,
      tasks: [tasks[3]!],
      adapter,
      syntheticEnvironment: () =>
        new SyntheticEnvironment({ model: faultyModel, retriever: noRetrieval, adapter, k: 0 }),
      realEnvironment: () => new CorridorEnvironment({ maxSteps: 2 }),
      experienceModel: faultyModel,
      maxSteps: 4,
      random: new SeededRandom(1),
    });
    expect(episodes[0]!.real).toEqual({ success: false, steps: 2 });
    expect(realSuccess.successes).toBe(0);
    expect(teacherForced).toMatchObject({
      steps: 2,
      terminalAgreement: 1,
      exactMatch: 1,
      falseSuccessRate: 0,
      realSuccesses: 0,
    });
  });

  it('keeps at most the asked number of disagreements, the most serious first', async () => {
    const { report } = await measureOnPolicyFidelity({
      policy: lazyPolicy,
      tasks: [tasks[3]!, tasks[1]!],
      adapter,
      syntheticEnvironment: () =>
        new SyntheticEnvironment({ model: faultyModel, retriever: noRetrieval, adapter, k: 0 }),
      realEnvironment: () => new CorridorEnvironment({ maxSteps: 100 }),
      experienceModel: faultyModel,
      maxSteps: 4,
      random: new SeededRandom(1),
      worstDisagreements: 2,
    }).then((report) => ({ report }));
    // The missed success comes first in replay order, yet ranks after the false successes.
    expect(
      report.worstDisagreements.map((step) => [step.kind, step.taskId, step.stepIndex]),
    ).toEqual([
      ['false-success', tasks[1]!.id, 1],
      ['false-success', tasks[1]!.id, 2],
    ]);
  });
});
