/**
 * Seed tasks: the benchmark's tasks as `Task` records (`domain: '__NAME__'`), each with its
 * split in `meta.split` so that training never reads evaluation tasks.
 */
import type { DatasetLoader, DatasetLoadOptions, Task } from '@dreamgym/core';
import { notImplemented } from '../not-implemented.js';

/** Streams the tasks of a dataset directory. */
export function load__PASCAL__Tasks(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncIterable<Task> {
  void dir;
  void options;
  throw notImplemented(
    'datasets.tasks',
    'src/datasets/tasks.ts',
    'write load__PASCAL__Tasks(dir, { splits, limit }): stream validated Tasks, throwing DatasetNotFoundError for a missing directory and DatasetFormatError with file:line and field for a bad record (parseRecord and readJsonlLines from @dreamgym/core/mdp do both)',
    1,
  );
}

/** The tasks loader of the adapter. */
export const __CAMEL__TaskLoader: DatasetLoader<Task> = { load: load__PASCAL__Tasks };
