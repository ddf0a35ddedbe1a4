/**
 * Offline MiniWoB++ trajectories: `trajectories/*.jsonl` of a dataset directory, one core
 * `Trajectory` per line, as `TrajectoryRecorder` writes episodes played on the real pages
 * (rewards as the page gives them). Every action must parse with the MiniWoB++ grammar.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ActionParseError,
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { parseMiniwobAction } from '../action-grammar.js';
import { assertMiniwobDirectory, MINIWOB_DOMAIN } from './tasks.js';

/** The trajectory files of a dataset directory: `trajectories/*.jsonl`, sorted. */
export async function miniwobTrajectoryFiles(dir: string): Promise<string[]> {
  await assertMiniwobDirectory(dir);
  const folder = join(dir, 'trajectories');
  const files = (await readdir(folder).catch(() => [] as string[]))
    .filter((name) => name.endsWith('.jsonl') && !name.startsWith('.'))
    .sort()
    .map((name) => join(folder, name));
  if (files.length === 0) {
    throw new DatasetNotFoundError(
      `${folder} holds no trajectory files (*.jsonl). Record exploration episodes on the real pages with buildMiniwobDataset({ dir: '${dir}' }).`,
      { path: folder },
    );
  }
  return files;
}

/** Validates one trajectory line: the schema, the domain, and every action's grammar. */
export function parseMiniwobTrajectory(
  value: unknown,
  where: { file: string; line: number },
): Trajectory {
  const trajectory = parseRecord(TrajectorySchema, value, where);
  if (trajectory.task.domain !== MINIWOB_DOMAIN) {
    throw new DatasetFormatError(
      `the task belongs to domain "${trajectory.task.domain}", not "${MINIWOB_DOMAIN}"`,
      { ...where, field: 'task.domain' },
    );
  }
  for (const [index, step] of trajectory.steps.entries()) {
    try {
      parseMiniwobAction(step.action);
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      throw new DatasetFormatError(error.message, { ...where, field: `steps.${index}.action` });
    }
  }
  return trajectory;
}

/**
 * Streams the trajectories of every trajectory file in `dir`; `limit` stops early.
 *
 * @throws DatasetNotFoundError when there are none; DatasetFormatError with file:line and field.
 */
export async function* loadMiniwobTrajectories(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Trajectory> {
  let count = 0;
  for (const file of await miniwobTrajectoryFiles(dir)) {
    for await (const { line, value } of readJsonlLines(file)) {
      yield parseMiniwobTrajectory(value, { file, line });
      count += 1;
      if (options.limit !== undefined && count >= options.limit) return;
    }
  }
}

/** The trajectories loader of the adapter. */
export const miniwobTrajectoryLoader: DatasetLoader<Trajectory> = {
  load: loadMiniwobTrajectories,
};
