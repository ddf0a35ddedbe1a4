/**
 * Seed tasks: `tasks.jsonl` of a data directory, one core `Task` per generated game, as
 * `buildTextworldDataset` records them:
 *
 * ```json
 * {"id": "train/cooking-r2-s1", "domain": "textworld", "origin": "seed",
 *  "instruction": "Cook the recipe of the cookbook, then eat the meal. Ingredients (2): ...",
 *  "meta": {"game": "train/cooking-r2-s1", "split": "train", "seed": 1, "ingredientCount": 2,
 *           "ingredients": [{"name": "pork chop", "cooking": "fried", "cutting": "sliced"}, ...]},
 *  "initialObservation": {"text": "-= Kitchen =-\n...", "actions": ["examine cookbook", ...]}}
 * ```
 *
 * Splits are TextWorld's own (`train`, `valid`, `test`: the food of evaluation games is never
 * cooked in training games); only `train` is read unless others are named.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Task,
  TaskSchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { TextworldIngredientSchema } from '../recipe.js';

/** The domain name: `Task.domain` of every TextWorld task. */
export const TEXTWORLD_DOMAIN = 'textworld';
/** The tasks file of a data directory. */
export const TEXTWORLD_TASKS_FILE = 'tasks.jsonl';

/** What a TextWorld task's `meta` holds. */
export const TextworldTaskMetaSchema = z
  .object({
    /** The game, `<split>/<name>`: `games/<split>/<name>.z8` of the data directory. */
    game: z
      .string()
      .regex(/^(train|valid|test)\/[A-Za-z0-9._-]+$/, 'a game such as train/cooking-r2-s1'),
    /** `train`, `valid` or `test`. */
    split: z.enum(['train', 'valid', 'test']),
    /** The recipe's ingredients, in the cookbook's order. */
    ingredients: z.array(TextworldIngredientSchema).min(1),
    /** How many ingredients the recipe names (the goal's entity count). */
    ingredientCount: z.number().int().positive(),
    /** The generator's seed. */
    seed: z.number().int().optional(),
  })
  .passthrough();

const TextworldTaskSchema = TaskSchema.extend({
  domain: z.literal(TEXTWORLD_DOMAIN),
  meta: TextworldTaskMetaSchema,
});

/** The data directory, or a DatasetNotFoundError saying how to make one. */
export async function assertTextworldDirectory(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new DatasetNotFoundError(
      `TextWorld data directory ${dir} does not exist. Generate its games and record their tasks and walkthroughs with buildTextworldDataset({ dir }) (or adapter.datasets.download(dir)).`,
      { path: dir },
    );
  }
}

/** A file of the data directory, or a DatasetNotFoundError saying how to make it. */
export async function textworldDataFile(dir: string, name: string): Promise<string> {
  await assertTextworldDirectory(dir);
  const file = join(dir, name);
  if (!(await stat(file).catch(() => undefined))) {
    throw new DatasetNotFoundError(
      `${file} does not exist: buildTextworldDataset({ dir: '${dir}' }) writes it from the generated games.`,
      { path: file },
    );
  }
  return file;
}

/**
 * Streams the tasks of `dir/tasks.jsonl`. `splits` defaults to `['train']`: evaluation games
 * are read only when named.
 *
 * @throws DatasetNotFoundError for a missing directory or file; DatasetFormatError with
 *   file:line and field for a bad line.
 */
export async function* loadTextworldTasks(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Task> {
  const file = await textworldDataFile(dir, TEXTWORLD_TASKS_FILE);
  const splits = options.splits ?? ['train'];
  let count = 0;
  for await (const { line, value } of readJsonlLines(file)) {
    let task: Task;
    try {
      task = parseRecord(TextworldTaskSchema, value, { file, line }) as Task;
    } catch (error) {
      if (!options.skipInvalid || !DatasetFormatError.isInstance(error)) throw error;
      options.onInvalid?.(error);
      continue;
    }
    if (!splits.includes(String(task.meta.split))) continue;
    yield task;
    count += 1;
    if (options.limit !== undefined && count >= options.limit) return;
  }
}

/** The tasks loader of the adapter. */
export const textworldTaskLoader: DatasetLoader<Task> = { load: loadTextworldTasks };
