import { SeededRandom } from '@dreamgym/core';
import { applyRewardRule, rewardRuleOf } from '@dreamgym/core/experience';
import type { GoalCheckInput } from '@dreamgym/core/mdp';

import { corridorTasks, createCorridorAdapter, playCorridor } from '@dreamgym/core/testing';
import { describe, expect, it } from 'vitest';
import { embeddedExperienceModel } from './experience-model.js';

describe('the embedded experience model', () => {
  it("asks the domain's goal check about every judged step", async () => {
    const random = new SeededRandom(3);
    const tasks = corridorTasks(5);
    const trajectories = [];
    for (const task of tasks) {
      for (const noise of [0, 0.5]) trajectories.push(await playCorridor(task, random, { noise }));
    }
    const seen: GoalCheckInput[] = [];
    // A domain that knows taking the key is enough (a goal the corridor's data never pays).
    const adapter = {
      ...createCorridorAdapter(),
      goalCheck: (step: GoalCheckInput) => {
        seen.push(step);
        return step.action === 'take key' ? true : undefined;
      },
    };
    const { experienceModel } = embeddedExperienceModel(adapter, trajectories);
    const task = tasks[0]!;
    const state = { text: 'You enter the corridor. You are in room 0. You see a key.' };
    const step = await experienceModel.predict({
      task,
      history: [],
      state,
      action: 'take key',
      demos: [],
    });
    // What the step earns: the model's reward rule, as the synthetic environment applies it.
    expect(applyRewardRule(step, rewardRuleOf(experienceModel))).toEqual({
      done: true,
      success: true,
      reward: 1,
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ task: { id: task.id }, action: 'take key', history: [] });
    expect(seen[0]!.nextState.text).toEqual(expect.any(String));
  });

  it('keeps the partial rewards of graded endings where the offline data carries them', async () => {
    const random = new SeededRandom(5);
    const trajectories = [];
    for (const task of corridorTasks(5)) {
      for (const noise of [0, 1]) trajectories.push(await playCorridor(task, random, { noise }));
    }
    const logs: string[] = [];
    embeddedExperienceModel(createCorridorAdapter(), trajectories, {}, (line) => logs.push(line));
    expect(logs.some((line) => line.startsWith('rewards:'))).toBe(false);
    // The failures end with partial credit (a graded domain's score).
    const graded = trajectories.map((trajectory) =>
      trajectory.success
        ? trajectory
        : {
            ...trajectory,
            steps: trajectory.steps.map((step, index) =>
              index === trajectory.steps.length - 1 ? { ...step, reward: 0.25 } : step,
            ),
          },
    );
    const failures = graded.filter((trajectory) => !trajectory.success).length;
    expect(failures).toBeGreaterThan(0);
    embeddedExperienceModel(createCorridorAdapter(), graded, {}, (line) => logs.push(line));
    expect(logs).toContain(
      `rewards: ${failures} offline episodes end with a partial reward, so a synthetic episode judged to end in failure earns its neighbours' mean reward`,
    );
  });
});
