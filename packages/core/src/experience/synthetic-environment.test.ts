import { afterAll, describe, expect, it } from 'vitest';
import { EnvironmentError } from '../errors.js';
import { TaskSchema } from '../mdp/schemas.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import type { TransitionRetriever } from '../replay/retriever.js';
import { corridorTask, corridorTasks, createCorridorAdapter } from '../testing/corridor-domain.js';
import { describeEnvironmentConformance } from '../testing/describe-conformance.js';
import { corridorBuffer, corridorTrajectories } from './corridor-experience.test-support.js';
import type { ExperienceInput, ExperienceModel } from './experience-model.js';
import { RetrievalExperienceModel } from './retrieval-experience-model.js';
import { SyntheticEnvironment, type SyntheticEnvironmentOptions } from './synthetic-environment.js';
import { WorldMemory } from './world-memory.js';

const adapter = createCorridorAdapter();
const tasks = corridorTasks(4);
let bufferPromise: Promise<ReplayBuffer> | undefined;
/** Built once, on first use, from 4 real episodes of each of the 16 layouts. */
function buffer(): Promise<ReplayBuffer> {
  bufferPromise ??= corridorTrajectories(tasks, 4, 1).then(corridorBuffer);
  return bufferPromise;
}
afterAll(async () => {
  await (await buffer()).close();
});

const model = new RetrievalExperienceModel({ parseAction: adapter.parseAction });
async function environment(options: Partial<SyntheticEnvironmentOptions> = {}) {
  return new SyntheticEnvironment({
    model,
    retriever: await buffer(),
    adapter,
    maxSteps: 30,
    ...options,
  });
}

const task = corridorTask({ length: 4, keyRoom: 2, doorRoom: 1 });
const withStart = {
  ...task,
  initialObservation: {
    text: 'You enter the corridor. You are in room 0. The room is empty.',
    actions: ['go right'],
  },
};

describeEnvironmentConformance('synthetic corridor (retrieval experience model)', {
  createEnvironment: () => environment(),
  // The second task has no initial state: the model retrieves one of a similar stored task.
  tasks: [withStart, corridorTask({ length: 4, keyRoom: 0, doorRoom: 3 })],
  solution: ['go right', 'go right', 'take key', 'go left', 'open door'],
});

describe('SyntheticEnvironment', () => {
  it('steps the experience model: entity-consistent states, outcome reward, reasoning and demo ids', async () => {
    const env = await environment();
    expect(await env.reset(withStart)).toEqual(withStart.initialObservation);
    const first = await env.step('Go Right');
    expect(first.observation.text).toBe('You walk to room 1. You are in room 1. You see a door.');
    expect(first.observation.actions).toEqual(adapter.candidateActions(first.observation, []));
    expect(first).toMatchObject({
      truncated: false,
      info: { invalidAction: false, success: false },
    });
    expect(first.info.demoIds).toHaveLength(4);
    expect(typeof first.info.reasoning).toBe('string');
    for (const action of ['go right', 'take key', 'go left']) {
      expect((await env.step(action)).done).toBe(false);
    }
    const last = await env.step('open door');
    expect(last).toMatchObject({ reward: 1, done: true, info: { success: true } });
    expect(env.steps.map((step) => step.action)).toEqual([
      'go right',
      'go right',
      'take key',
      'go left',
      'open door',
    ]);
    await env.close();
  });

  it('decides every reward once, by its reward rule: the model declares the rule, an option overrides it', async () => {
    /** A model that writes reward 0.6 on every step, ending the episode on the third without success. */
    const graded = (rewardRule?: ExperienceModel['rewardRule']): ExperienceModel => ({
      id: 'graded',
      ...(rewardRule ? { rewardRule } : {}),
      predict: async (input) => ({
        reasoning: 'scripted',
        observation: { text: `step ${input.history.length + 1}`, actions: ['go right'] },
        reward: 0.6,
        done: input.history.length === 2,
        success: false,
      }),
    });
    const rewardsOf = async (options: Partial<SyntheticEnvironmentOptions>) => {
      const env = await environment(options);
      await env.reset(withStart);
      const rewards: number[] = [];
      for (let step = 0; step < 3; step += 1) rewards.push((await env.step('go right')).reward);
      return rewards;
    };
    // The outcome reward by default: the model's own number earns nothing.
    expect(await rewardsOf({ model: graded() })).toEqual([0, 0, 0]);
    // A model of graded data declares model mode: its number, clamped, on every step that is not a success.
    const declared = graded({ mode: 'model', successReward: 1, failureReward: 0 });
    expect(await rewardsOf({ model: declared })).toEqual([0.6, 0.6, 0.6]);
    expect(await rewardsOf({ model: graded({ mode: 'model', successReward: 0.5 }) })).toEqual([
      0.5, 0.5, 0.5,
    ]);
    // The environment's own option wins over the model's declaration.
    expect(await rewardsOf({ model: declared, reward: { mode: 'outcome' } })).toEqual([0, 0, 0]);
  });

  it('answers invalid actions without calling the model, with the optional penalty', async () => {
    let calls = 0;
    const counting: ExperienceModel = {
      id: 'counting',
      predict: (input) => {
        calls += 1;
        return model.predict(input);
      },
    };
    await expect(environment({ model: counting, invalidActionPenalty: 0.1 })).rejects.toThrow(
      /invalidActionPenalty must be zero or negative/,
    );
    const env = await environment({ model: counting, invalidActionPenalty: -0.1 });
    await env.reset(withStart);
    const result = await env.step('fly away');
    expect(result.observation.text).toMatch(
      /^Nothing happens\. "fly away" is not a corridor action/,
    );
    expect(result).toMatchObject({ reward: -0.1, done: false, info: { invalidAction: true } });
    expect(result.observation.actions).toEqual(withStart.initialObservation.actions);
    expect(calls).toBe(0);
  });

  it('forks: the fork plays on from the forked state (history, world, curriculum task) and leaves the parent untouched', async () => {
    const trajectories = await corridorTrajectories([task], 2, 1);
    const inputs: ExperienceInput[] = [];
    const worldModel = new RetrievalExperienceModel({
      parseAction: adapter.parseAction,
      worldMemory: WorldMemory.fromTrajectories(trajectories, { parseAction: adapter.parseAction }),
    });
    const spy: ExperienceModel = {
      id: 'spy',
      predict: (input) => {
        inputs.push({ ...input, history: [...input.history] });
        return worldModel.predict(input);
      },
    };
    // A curriculum's variation of the seed task, played in its parent's world.
    const generated = TaskSchema.parse({
      ...withStart,
      id: `${task.id}~variant`,
      origin: 'generated',
      parentId: task.id,
      meta: { ...task.meta, world: task.id },
    });
    const parent = await environment({ model: spy });
    await parent.reset(generated);
    await parent.step('go right');
    const before = await parent.step('go right');
    const fork = await parent.fork();
    expect(fork.steps).toEqual(parent.steps);
    expect(fork.steps).not.toBe(parent.steps);

    inputs.length = 0;
    const forked = await fork.step('take key');
    expect(inputs[0]!.task).toBe(generated);
    expect(inputs[0]!.state).toEqual(before.observation);
    expect(inputs[0]!.history.map((step) => step.action)).toEqual(['go right', 'go right']);
    await fork.step('go left');
    const opened = await fork.step('open door');
    expect(opened).toMatchObject({ done: true, reward: 1 });
    await expect(fork.step('go left')).rejects.toThrow(/after the episode ended/);
    // The parent is where the fork left it, and steps as the fork did from there.
    expect(parent.steps.map((step) => step.action)).toEqual(['go right', 'go right']);
    expect(await parent.step('take key')).toEqual(forked);
    expect(fork.steps).toHaveLength(5);
    expect(parent.steps).toHaveLength(3);
    // Closing the fork leaves the parent open; forking a closed environment refuses.
    await fork.close();
    expect((await parent.step('go left')).done).toBe(false);
    await expect(fork.fork()).rejects.toThrow(/fork\(\) on a closed SyntheticEnvironment/);
    await parent.close();
  });

  it('truncates at maxSteps', async () => {
    const env = await environment({ maxSteps: 2 });
    await env.reset(withStart);
    expect((await env.step('go right')).done).toBe(false);
    const second = await env.step('go left');
    expect(second).toMatchObject({ done: true, truncated: true, reward: 0 });
  });

  it('ablates retrieval (k = 0) and history', async () => {
    const seen: Array<{ demos: number; history: number }> = [];
    const spy: ExperienceModel = {
      id: 'spy',
      predict: async (input) => {
        seen.push({ demos: input.demos.length, history: input.history.length });
        return model.predict(input);
      },
    };
    const env = await environment({ model: spy, k: 0, useHistory: false });
    await env.reset(withStart);
    await env.step('go right');
    const second = await env.step('go right');
    expect(seen).toEqual([
      { demos: 0, history: 0 },
      { demos: 0, history: 0 },
    ]);
    // Without demonstrations the embedded model can only say nothing happens.
    expect(second.observation.text).toBe('Nothing happens.');
  });

  it('ends the episode at a predicted state with no candidate action', async () => {
    // A domain whose actions come from the elements in its state text, as on a web page.
    const elements = { ...adapter, candidateActions: () => [] };
    const env = await environment({ adapter: elements, k: 0 });
    await env.reset(withStart);
    const step = await env.step('go right');
    expect(step.observation).toEqual({ text: 'Nothing happens.', actions: [] });
    expect(step).toMatchObject({ done: true, truncated: false, reward: 0 });
    expect(step.info.success).toBe(false);
    expect(env.steps.at(-1)?.done).toBe(true);
  });

  it('refuses tasks it cannot start', async () => {
    const searchOnly: TransitionRetriever = { search: async () => [] };
    const noInitial: ExperienceModel = { id: 'plain', predict: (input) => model.predict(input) };
    const env = new SyntheticEnvironment({ model: noInitial, retriever: searchOnly, adapter });
    await expect(
      env.reset(TaskSchema.parse({ id: 't', domain: 'corridor', instruction: 'x' })),
    ).rejects.toSatisfy(EnvironmentError.isInstance);
  });
});
