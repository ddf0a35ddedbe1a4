/**
 * Offline WebArena-Lite trajectories: JSONL files, one `@dreamgym/core` `Trajectory` per line,
 * as `TrajectoryRecorder` (and `dreamgym data record`) writes them from browser episodes.
 *
 * Format (one line, shown wrapped):
 * ```json
 * {"id": "webarena:21#2025-01-01T00:00:00.000Z#0",
 *  "task": {"id": "webarena:21", "domain": "webarena-lite", "instruction": "...", "origin": "seed", "meta": {...}},
 *  "steps": [{"observation": {"text": "Tab 0 (current): ...", "meta": {"url": "..."}},
 *             "action": "click [12]", "reward": 0, "done": false, "info": {...}}],
 *  "finalObservation": {"text": "..."}, "source": "offline", "success": true, "meta": {"recordedAt": "..."}}
 * ```
 * Every action must be in the web grammar and every task of the `webarena-lite` domain.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseWebAction } from '@dreamgym/browser';
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
import { WEBARENA_LITE_DOMAIN } from './task-configs.js';

/** The trajectory files of a dataset directory: its `*.jsonl` files, then `trajectories/*.jsonl`. */
export async function webarenaTrajectoryFiles(dir: string): Promise<string[]> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new DatasetNotFoundError(
      `WebArena-Lite data directory ${dir} does not exist. Pass the directory that holds the recorded trajectories (*.jsonl).`,
      { path: dir },
    );
  }
  const jsonlIn = async (directory: string) =>
    (await readdir(directory).catch(() => [] as string[]))
      .filter((name) => name.endsWith('.jsonl') && !name.startsWith('.'))
      .sort()
      .map((name) => join(directory, name));
  const files = [...(await jsonlIn(dir)), ...(await jsonlIn(join(dir, 'trajectories')))];
  if (files.length === 0) {
    throw new DatasetNotFoundError(
      `${dir} holds no trajectory files (*.jsonl or trajectories/*.jsonl). Record some from browser episodes with \`dreamgym data record\`.`,
      { path: dir },
    );
  }
  return files;
}

/** Validates one trajectory line: the domain, and every action against the web grammar. */
export function parseWebarenaTrajectory(
  value: unknown,
  where: { file: string; line: number },
): Trajectory {
  const trajectory = parseRecord(TrajectorySchema, value, where);
  if (trajectory.task.domain !== WEBARENA_LITE_DOMAIN) {
    throw new DatasetFormatError(
      `the task belongs to domain "${trajectory.task.domain}", not "${WEBARENA_LITE_DOMAIN}"`,
      { ...where, field: 'task.domain' },
    );
  }
  for (const [index, step] of trajectory.steps.entries()) {
    try {
      parseWebAction(step.action);
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      throw new DatasetFormatError(error.message, { ...where, field: `steps.${index}.action` });
    }
  }
  return trajectory;
}

/** Streams the trajectories of every trajectory file in `dir`; `limit` stops early. */
export async function* loadWebarenaTrajectories(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Trajectory> {
  let count = 0;
  for (const file of await webarenaTrajectoryFiles(dir)) {
    for await (const { line, value } of readJsonlLines(file)) {
      if (options.limit !== undefined && count >= options.limit) return;
      const trajectory = parseWebarenaTrajectory(value, { file, line });
      const split = trajectory.task.meta.split;
      if (options.splits && typeof split === 'string' && !options.splits.includes(split)) continue;
      yield trajectory;
      count += 1;
    }
  }
}

/** The trajectory loader as a core {@link DatasetLoader}. */
export const webarenaTrajectoryLoader: DatasetLoader<Trajectory> = {
  load: loadWebarenaTrajectories,
};
