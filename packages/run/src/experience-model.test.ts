import { SeededRandom } from '@dreamgym/core';
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
    expect(step).toMatchObject({ done: true, success: true, reward: 1 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ task: { id: task.id }, action: 'take key', history: [] });
    expect(seen[0]!.nextState.text).toEqual(expect.any(String));
  });
});
