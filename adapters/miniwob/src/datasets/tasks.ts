/**
 * MiniWoB++ seed tasks: `tasks.jsonl` of a dataset directory, one core `Task` per line, each
 * an instance of a MiniWoB++ task page with a seed:
 *
 * ```json
 * {"id": "click-button:7", "domain": "miniwob", "instruction": "Click on the \"Ok\" button.",
 *  "origin": "seed", "meta": {"miniwobTask": "click-button", "seed": 7, "split": "train"},
 *  "initialObservation": {"text": "Tab 0 (current): Click Button Task\nURL: /miniwob/click-button.html\n\n..."}}
 * ```
 *
 * The instruction and the initial state are the page's own for that seed
 * (`buildMiniwobDataset` records them). Seeds below 100 000 are `train`, from 100 000 on
 * `eval`.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Task,
  TaskSchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { z } from 'zod';

/** The domain name: `Task.domain` of every MiniWoB++ task. */
export const MINIWOB_DOMAIN = 'miniwob';
/** The tasks file of a dataset directory. */
export const MINIWOB_TASKS_FILE = 'tasks.jsonl';

/** What a MiniWoB++ task's `meta` must hold. */
export const MiniwobTaskMetaSchema = z
  .object({
    /** The task page (`click-button`): `html/miniwob/<miniwobTask>.html` of the package. */
    miniwobTask: z.string().regex(/^[a-z0-9-]+$/, 'a MiniWoB++ task name such as click-button'),
    /** The seed of the page's random generator: the same seed gives the same instance. */
    seed: z.union([z.number().int(), z.string().min(1)]),
    /** `train` or `eval`. */
    split: z.string().min(1),
  })
  .passthrough();

const MiniwobTaskSchema = TaskSchema.extend({
  domain: z.literal(MINIWOB_DOMAIN),
  meta: MiniwobTaskMetaSchema,
});

/** The dataset directory, or a DatasetNotFoundError saying how to make one. */
export async function assertMiniwobDirectory(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new DatasetNotFoundError(
      `MiniWoB++ data directory ${dir} does not exist. Build one from the installed miniwob package with buildMiniwobDataset({ dir }) (or adapter.datasets.download(dir)).`,
      { path: dir },
    );
  }
}

/**
 * Streams the tasks of `dir/tasks.jsonl`. `splits` defaults to `['train']`: evaluation
 * seeds are read only when named.
 *
 * @throws DatasetNotFoundError for a missing directory or file; DatasetFormatError with
 *   file:line and field for a bad line.
 */
export async function* loadMiniwobTasks(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Task> {
  await assertMiniwobDirectory(dir);
  const file = join(dir, MINIWOB_TASKS_FILE);
  if (!(await stat(file).catch(() => undefined))) {
    throw new DatasetNotFoundError(
      `${file} does not exist: a MiniWoB++ dataset lists its task instances there. Build it with buildMiniwobDataset({ dir: '${dir}' }).`,
      { path: file },
    );
  }
  const splits = options.splits ?? ['train'];
  let count = 0;
  for await (const { line, value } of readJsonlLines(file)) {
    const task = parseRecord(MiniwobTaskSchema, value, { file, line }) as Task;
    if (!splits.includes(String(task.meta.split))) continue;
    yield task;
    count += 1;
    if (options.limit !== undefined && count >= options.limit) return;
  }
}

/** The tasks loader of the adapter. */
export const miniwobTaskLoader: DatasetLoader<Task> = { load: loadMiniwobTasks };
