/**
 * Offline trajectories: `expert_trajectories.jsonl` of a data directory (the walkthrough of
 * every training game, played on the engine and recorded by `buildTextworldDataset`), one core
 * `Trajectory` per line. Every action must parse with the TextWorld grammar.
 */
import {
  ActionParseError,
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { parseTextworldAction } from '../action-grammar.js';
import { TEXTWORLD_DOMAIN, textworldDataFile } from './tasks.js';

/** The expert trajectories file of a data directory. */
export const TEXTWORLD_EXPERT_FILE = 'expert_trajectories.jsonl';

/** Validates one trajectory line: the schema, the domain, and every action's grammar. */
export function parseTextworldTrajectory(
  value: unknown,
  where: { file: string; line: number },
): Trajectory {
  const trajectory = parseRecord(TrajectorySchema, value, where);
  if (trajectory.task.domain !== TEXTWORLD_DOMAIN) {
    throw new DatasetFormatError(
      `the task belongs to domain "${trajectory.task.domain}", not "${TEXTWORLD_DOMAIN}"`,
      { ...where, field: 'task.domain' },
    );
  }
  for (const [index, step] of trajectory.steps.entries()) {
    try {
      parseTextworldAction(step.action);
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      throw new DatasetFormatError(error.message, { ...where, field: `steps.${index}.action` });
    }
  }
  return trajectory;
}

/**
 * Streams the expert trajectories of `dir` whose task is of one of `splits` (default
 * `['train']`); `limit` stops early.
 *
 * @throws DatasetNotFoundError when the file is missing; DatasetFormatError with file:line
 *   and field.
 */
export async function* loadTextworldTrajectories(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Trajectory> {
  const file = await textworldDataFile(dir, TEXTWORLD_EXPERT_FILE);
  const splits = options.splits ?? ['train'];
  let count = 0;
  for await (const { line, value } of readJsonlLines(file)) {
    let trajectory: Trajectory;
    try {
      trajectory = parseTextworldTrajectory(value, { file, line });
    } catch (error) {
      if (!options.skipInvalid || !DatasetFormatError.isInstance(error)) throw error;
      options.onInvalid?.(error);
      continue;
    }
    if (!splits.includes(String(trajectory.task.meta.split ?? 'train'))) continue;
    yield trajectory;
    count += 1;
    if (options.limit !== undefined && count >= options.limit) return;
  }
}

/** The trajectories loader of the adapter. */
export const textworldTrajectoryLoader: DatasetLoader<Trajectory> = {
  load: loadTextworldTrajectories,
};
