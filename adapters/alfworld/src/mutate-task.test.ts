import { ConfigError, SeededRandom, type Task, TaskSchema, type Trajectory } from '@dreamgym/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createAlfworldAdapter } from './adapter.js';
import { loadAlfworldExpertTrajectories } from './datasets/expert-trajectories.js';
import { loadAlfworldGameTasks } from './datasets/game-files.js';
import { mutateAlfworldTask } from './mutate-task.js';
import { ALFWORLD_INSTRUCTION_TEMPLATES, ALFWORLD_TASK_TYPES } from './task-types.js';
import { alfworldDataDirectory } from './test-data-directory.js';
import { type AlfworldVocabulary, buildAlfworldVocabulary } from './vocabulary.js';

let trajectories: Trajectory[];
let vocabulary: AlfworldVocabulary;
let tasks: Task[];

beforeAll(async () => {
  const directory = alfworldDataDirectory();
  trajectories = [];
  for await (const trajectory of loadAlfworldExpertTrajectories(directory))
    trajectories.push(trajectory);
  vocabulary = buildAlfworldVocabulary(trajectories);
  tasks = [];
  for await (const task of loadAlfworldGameTasks(directory)) tasks.push(task);
});

describe('buildAlfworldVocabulary', () => {
  it('collects the pairs of every task type and the contents of every scene', () => {
    for (const type of ALFWORLD_TASK_TYPES)
      expect(vocabulary.pairs[type]!.length).toBeGreaterThan(5);
    expect(vocabulary.pairs.look_at_obj_in_light!.every(([, lamp]) => /lamp$/.test(lamp))).toBe(
      true,
    );
    expect(vocabulary.pairs.pick_heat_then_place_in_recep).toContainEqual(['apple', 'fridge']);
    const kitchen = vocabulary.scenes['1']!;
    expect(kitchen.receptacles).toContain('fridge');
    expect(kitchen.objects).toContain('apple');
    expect(kitchen.objects).not.toContain('fridge');
  });

  it('refuses evaluation data from valid_unseen', () => {
    const unseen = {
      ...trajectories[0]!,
      task: { ...trajectories[0]!.task, meta: { split: 'valid_unseen' } },
    };
    expect(() => buildAlfworldVocabulary([unseen])).toThrow(/valid_unseen/);
  });
});

describe('mutateAlfworldTask', () => {
  it('makes a same-type task in the same room, phrased like ALFWorld', () => {
    const random = new SeededRandom(3);
    let made = 0;
    for (const task of tasks) {
      const child = mutateAlfworldTask(task, random, vocabulary);
      if (child === undefined) continue;
      made += 1;
      expect(TaskSchema.safeParse(child).success).toBe(true);
      expect(child).toMatchObject({ origin: 'generated', parentId: task.id, domain: 'alfworld' });
      expect(child.id).not.toBe(task.id);
      expect(child.meta.taskType).toBe(task.meta.taskType);
      expect([child.meta.objectType, child.meta.receptacleType]).not.toEqual([
        task.meta.objectType,
        task.meta.receptacleType,
      ]);
      expect(child.meta.game).toBeUndefined();
      expect(child.meta.baseGame).toBe(task.id);
      const phrasings = ALFWORLD_INSTRUCTION_TEMPLATES[
        child.meta.taskType as 'pick_and_place_simple'
      ].map((template) =>
        template
          .replace('{object}', String(child.meta.objectType))
          .replace('{receptacle}', String(child.meta.receptacleType)),
      );
      expect(phrasings).toContain(child.instruction);
      // Same room: the receptacle is listed there, and s_0 carries the new task line.
      expect(child.initialObservation?.text).toBe(task.initialObservation?.text);
      expect(child.initialObservation?.meta?.task).toBe(child.instruction);
      if (child.meta.taskType !== 'look_at_obj_in_light') {
        expect(child.initialObservation?.text).toContain(` ${child.meta.receptacleType} `);
      }
    }
    console.log(`mutateTask made a variation for ${made} of ${tasks.length} train tasks`);
    expect(made).toBeGreaterThanOrEqual(0.9 * tasks.length);
  });

  it('is deterministic for a seed and returns undefined for a non-ALFWorld task', () => {
    const task = tasks[10]!;
    expect(mutateAlfworldTask(task, new SeededRandom(5), vocabulary)).toEqual(
      mutateAlfworldTask(task, new SeededRandom(5), vocabulary),
    );
    const foreign = TaskSchema.parse({ id: 'x', domain: 'alfworld', instruction: 'do it' });
    expect(mutateAlfworldTask(foreign, new SeededRandom(5), vocabulary)).toBeUndefined();
  });

  it('asks for the vocabulary when the adapter has none', () => {
    expect(() => createAlfworldAdapter().mutateTask(tasks[0]!, new SeededRandom(1))).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('loadAlfworldVocabulary'),
      }),
    );
    expect(ConfigError).toBeDefined();
  });
});
