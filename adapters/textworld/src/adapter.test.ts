/**
 * The TextWorld adapter against core's conformance suite, on the real engine: a small data
 * directory generated here (`test-data-directory.ts`), raw engine answers recorded from it
 * (`__fixtures__/raw-observations.json`), and the real environment's conformance checks.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Task } from '@dreamgym/core';
import {
  describeAdapterConformance,
  describeEnvironmentConformance,
} from '@dreamgym/core/testing/vitest';
import { describe, expect, it } from 'vitest';
import { createTextworldAdapter } from './adapter.js';
import type { TextworldRawObservation } from './state-mapper.js';
import { textworldTestDataset } from './test-data-directory.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '__fixtures__');
const raw = JSON.parse(readFileSync(join(fixtures, 'raw-observations.json'), 'utf8'))
  .observations as (TextworldRawObservation & { note: string })[];

const { dir: dataDir } = await textworldTestDataset();
const adapter = createTextworldAdapter({ dataDir });
const tasks: Task[] = [];
for await (const task of adapter.datasets.tasks.load(dataDir, {
  splits: ['train', 'valid', 'test'],
})) {
  tasks.push(task);
}
const task = tasks[0]!;
const taskLine = JSON.stringify(task);
const trajectoryLine = readFileSync(join(dataDir, 'expert_trajectories.jsonl'), 'utf8').split(
  '\n',
)[0]!;
const trajectory = JSON.parse(trajectoryLine);
const walkthrough = (trajectory.steps as { action: string }[]).map((step) => step.action);

describeAdapterConformance('textworld', {
  adapter,
  validActions: [
    'look',
    'inventory',
    'go north',
    'examine cookbook',
    'take knife',
    'take red potato from counter',
    'put knife on table',
    'insert carrot into fridge',
    'open fridge',
    'cook carrot with stove',
    'Slice the Carrot with knife',
    'dice block of cheese with knife',
    'unlock plain door with key',
    'prepare meal',
    'eat meal',
  ],
  invalidActions: [
    '',
    'go up',
    'fly north',
    'slice carrot',
    'cook with stove',
    'take',
    'put knife',
  ],
  rawObservations: [...raw, raw[0]!.text],
  tasks,
  malformedDatasets: [
    {
      description: 'a task line that is not JSON',
      loader: 'tasks',
      files: { 'tasks.jsonl': `${taskLine}\n{"id": \n` },
      expected: { file: 'tasks.jsonl', line: 2 },
    },
    {
      description: 'a task without its ingredients',
      loader: 'tasks',
      files: {
        'tasks.jsonl': `${taskLine}\n${JSON.stringify({ ...task, meta: { ...task.meta, ingredients: undefined } })}\n`,
      },
      expected: { file: 'tasks.jsonl', line: 2, field: 'meta.ingredients' },
    },
    {
      description: 'a task of another domain',
      loader: 'tasks',
      files: { 'tasks.jsonl': `${JSON.stringify({ ...task, domain: 'alfworld' })}\n` },
      expected: { file: 'tasks.jsonl', line: 1, field: 'domain' },
    },
    {
      description: 'a trajectory line that is not JSON',
      loader: 'trajectories',
      files: { 'expert_trajectories.jsonl': `${trajectoryLine}\n{"task": \n` },
      expected: { file: 'expert_trajectories.jsonl', line: 2 },
    },
    {
      description: 'a trajectory step with an action outside the grammar',
      loader: 'trajectories',
      files: {
        'expert_trajectories.jsonl': `${trajectoryLine}\n${JSON.stringify({ ...trajectory, steps: [{ ...trajectory.steps[0], action: 'fly away' }] })}\n`,
      },
      expected: { file: 'expert_trajectories.jsonl', line: 2, field: 'steps.0.action' },
    },
  ],
  datasetDirectory: dataDir,
});

describeEnvironmentConformance(
  'textworld real engine',
  {
    createEnvironment: () => adapter.connectReal({}),
    tasks,
    solution: walkthrough,
  },
  { timeout: 60_000 },
);

describe('createTextworldAdapter', () => {
  it('plays a game of each recipe size to a win with its walkthrough, reward 1 on the last step only', async () => {
    const environment = await adapter.connectReal({});
    try {
      const trajectories = [];
      for await (const recorded of adapter.datasets.trajectories.load(dataDir)) {
        trajectories.push(recorded);
      }
      expect(trajectories.map((entry) => entry.task.meta.ingredientCount)).toEqual([1, 2, 3, 4]);
      for (const recorded of trajectories) {
        const first = await environment.reset(recorded.task);
        expect(first).toEqual(recorded.task.initialObservation);
        const rewards: number[] = [];
        let last: Awaited<ReturnType<typeof environment.step>> | undefined;
        for (const step of recorded.steps) {
          last = await environment.step(step.action);
          expect(last.info.invalidAction).toBe(false);
          rewards.push(last.reward);
        }
        expect(last).toMatchObject({
          done: true,
          truncated: false,
          reward: 1,
          info: { won: true, lost: false, success: true },
        });
        expect(rewards.slice(0, -1).every((reward) => reward === 0)).toBe(true);
        expect(last!.observation.text).toContain('*** The End ***');
      }
    } finally {
      await environment.close();
    }
  }, 120_000);

  it('ends a game lost when an ingredient burns, and truncates at the step limit', async () => {
    const environment = await adapter.connectReal({ maxSteps: 3 });
    try {
      const oneIngredient = tasks.find((entry) => entry.meta.ingredientCount === 1)!;
      await environment.reset(oneIngredient);
      const results = [];
      for (const action of ['look', 'inventory', 'look']) {
        results.push(await environment.step(action));
      }
      expect(results.map((result) => [result.done, result.truncated])).toEqual([
        [false, false],
        [false, false],
        [true, true],
      ]);
    } finally {
      await environment.close();
    }
    const burning = await adapter.connectReal({});
    try {
      const recorded = adapter.datasets.trajectories.load(dataDir, { limit: 1 });
      for await (const { task: game, steps } of recorded) {
        await burning.reset(game);
        const actions = steps.map((step) => step.action);
        const cook = actions.find((action) => action.startsWith('cook '))!;
        let result: Awaited<ReturnType<typeof burning.step>> | undefined;
        for (const action of actions.slice(0, actions.indexOf(cook) + 1)) {
          result = await burning.step(action);
        }
        expect(result!.done).toBe(false);
        result = await burning.step(cook);
        expect(result).toMatchObject({
          done: true,
          truncated: false,
          reward: 0,
          info: { won: false, lost: true, success: false },
        });
        expect(result.observation.text).toMatch(/You burned the .+!\n\n\*\*\* You lost! \*\*\*/);
      }
    } finally {
      await burning.close();
    }
  }, 120_000);

  it('answers commands Inform would take outside the game without reaching the engine', async () => {
    const environment = await adapter.connectReal({});
    try {
      const first = await environment.reset(task);
      for (const action of ['restart', 'quit', 'take all', 'undo']) {
        const result = await environment.step(action);
        expect(result.info.invalidAction).toBe(true);
        expect(result.done).toBe(false);
      }
      // The game goes on as if nothing happened.
      const result = await environment.step(walkthrough[0]!);
      expect(result.info.invalidAction).toBe(false);
      expect(first.actions).toContain(walkthrough[0]);
    } finally {
      await environment.close();
    }
  }, 60_000);

  it('reads training tasks unless others are named, with counted multi-entity instructions', async () => {
    const train: Task[] = [];
    for await (const entry of adapter.datasets.tasks.load(dataDir)) train.push(entry);
    expect(train.map((entry) => entry.id)).toEqual([
      'train/cooking-r1-s0',
      'train/cooking-r2-s1',
      'train/cooking-r3-s2',
      'train/cooking-r4-s3',
    ]);
    expect(tasks.map((entry) => entry.meta.split)).toEqual([
      'train',
      'train',
      'train',
      'train',
      'valid',
      'test',
    ]);
    for (const entry of train) {
      const count = entry.meta.ingredientCount as number;
      expect(entry.instruction).toContain(`Ingredients (${count}): `);
      expect(entry.instruction).toMatch(/prepare meal, eat meal\.$/);
      expect(entry.initialObservation!.text).toMatch(/^-= Kitchen =-/);
    }
    expect(adapter.defaults).toEqual({ evaluationSplit: 'valid', evaluationEnvironment: 'real' });
  });

  it('rejects invalid options with a ConfigError naming the field', () => {
    expect(() => createTextworldAdapter({ real: { maxSteps: 0 } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'real.maxSteps' }),
    );
  });

  it('explores its data folder, refusing a setting its exploration does not take', async () => {
    const output = join(dataDir, 'never-written.jsonl');
    await expect(createTextworldAdapter().explore!({ output })).rejects.toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'dataDir' }),
    );
    await expect(
      adapter.explore!({ output, settings: { expertPolicy: 'planner' } }),
    ).rejects.toThrow(/Invalid TextWorld exploration option.*expertPolicy/);
  });
});
