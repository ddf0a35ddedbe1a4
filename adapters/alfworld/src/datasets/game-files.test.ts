import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatasetFormatError, DatasetNotFoundError, type Task, TaskSchema } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { ALFWORLD_INSTRUCTION_TEMPLATES, ALFWORLD_TASK_TYPES } from '../task-types.js';
import { alfworldDataDirectory } from '../test-data-directory.js';
import { loadAlfworldGameTasks } from './game-files.js';

async function collect(iterable: AsyncIterable<Task>): Promise<Task[]> {
  const items: Task[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

describe('loadAlfworldGameTasks', () => {
  it('loads 300 train, 140 valid_seen and 134 valid_unseen games; train by default', async () => {
    const directory = alfworldDataDirectory();
    const train = await collect(loadAlfworldGameTasks(directory));
    expect(train).toHaveLength(300);
    expect(
      await collect(loadAlfworldGameTasks(directory, { splits: ['valid_seen'] })),
    ).toHaveLength(140);
    const unseen = await collect(loadAlfworldGameTasks(directory, { splits: ['valid_unseen'] }));
    expect(unseen).toHaveLength(134);
    expect(unseen.every((task) => task.meta.split === 'valid_unseen')).toBe(true);
    for (const type of ALFWORLD_TASK_TYPES) {
      expect(train.filter((task) => task.meta.taskType === type)).toHaveLength(50);
    }
    for (const task of [...train, ...unseen]) {
      expect(TaskSchema.safeParse(task).success).toBe(true);
      expect(task.id).toBe(task.meta.game);
      // The instruction follows one of the type's phrasings with the directory's types.
      const phrasings = ALFWORLD_INSTRUCTION_TEMPLATES[
        task.meta.taskType as 'pick_two_obj_and_place'
      ].map((template) =>
        template
          .replace('{object}', String(task.meta.objectType))
          .replace('{receptacle}', String(task.meta.receptacleType)),
      );
      expect(phrasings).toContain(task.instruction);
    }
    // Train games have expert trajectories, whose first observation becomes s_0.
    expect(
      train.every((task) => task.initialObservation?.text.startsWith('You are in the middle')),
    ).toBe(true);
    expect(train[0]!.initialObservation?.meta?.task).toBe(train[0]!.instruction);
    expect(unseen.some((task) => task.initialObservation !== undefined)).toBe(false);
  });

  it('reports a missing split directory and a malformed game file', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'alfworld-games-'));
    try {
      await expect(collect(loadAlfworldGameTasks(directory))).rejects.toSatisfy(
        DatasetNotFoundError.isInstance,
      );
      const trial = join(
        directory,
        'train',
        'pick_and_place_simple-Apple-None-Fridge-1',
        'trial_T1',
      );
      await mkdir(trial, { recursive: true });
      const file = join(trial, 'game.tw-pddl');
      await writeFile(file, JSON.stringify({ grammar: 'no task rule', pddl_problem: '(define)' }));
      const error = await collect(loadAlfworldGameTasks(directory)).catch((caught) => caught);
      expect(DatasetFormatError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ file, field: 'grammar' });
      await writeFile(file, '{\n  "grammar": 3,\n');
      const syntax = await collect(loadAlfworldGameTasks(directory)).catch((caught) => caught);
      expect(syntax).toMatchObject({ file, code: 'DATASET_FORMAT' });
      expect(syntax.message).toContain(file);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
