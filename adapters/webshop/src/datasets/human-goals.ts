/**
 * `human_goals.json`: WebShop's 12,087 human-written instructions in the environment's goal
 * order, with the standard splits by index: 0-499 test, 500-1499 eval, 1500+ train.
 */
import { join } from 'node:path';
import {
  ConfigError,
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  type Task,
} from '@dreamgym/core';
import { z } from 'zod';
import { withoutPriceClause } from '../search-queries.js';
import { webshopPageToObservation } from '../state-mapper.js';
import { type LocatedJson, readLocatedJson, readLocatedJsonSync } from './json-file.js';

/** The file name of the human goals inside a WebShop data directory. */
export const HUMAN_GOALS_FILE = 'human_goals.json';

/** WebShop's splits of the human goals. */
export const WEBSHOP_SPLITS = ['train', 'eval', 'test'] as const;
export type WebshopSplit = (typeof WEBSHOP_SPLITS)[number];
export const WebshopSplitSchema = z.enum(WEBSHOP_SPLITS);

/** The split of human goal `index`: 0-499 test, 500-1499 eval, 1500+ train. */
export function webshopSplitOf(index: number): WebshopSplit {
  if (index < 500) return 'test';
  if (index < 1500) return 'eval';
  return 'train';
}

/**
 * The splits a loader reads: `['train']` when none are given, so that evaluation goals are
 * read only when asked for by name (never train on goals 0-1499).
 *
 * @throws ConfigError naming the valid splits when one is unknown.
 */
export function resolveWebshopSplits(splits: readonly string[] | undefined): WebshopSplit[] {
  if (splits === undefined) return ['train'];
  return splits.map((split) => {
    const parsed = WebshopSplitSchema.safeParse(split);
    if (!parsed.success) {
      throw new ConfigError(
        `Unknown WebShop split "${split}". Valid splits: ${WEBSHOP_SPLITS.join(', ')} (human goals 1500+, 500-1499 and 0-499).${split === 'valid_seen' ? ' Evaluate WebShop on `eval` (e.g. dreamgym train --eval-split eval).' : ''}`,
        { field: 'splits' },
      );
    }
    return parsed.data;
  });
}

/**
 * An instruction in the form WebShop's human goals file writes it, for looking goals up:
 * lower case, no apostrophes (`i'm` is `im` there), no trailing price clause or full stop,
 * single spaces.
 */
export function normalizeWebshopInstruction(instruction: string): string {
  return withoutPriceClause(instruction)
    .toLowerCase()
    .replace(/[’'`]/g, '')
    .replace(/\s+/g, ' ')
    .replace(/[.\s]+$/, '')
    .trim();
}

function validate(located: LocatedJson): string[] {
  const { file, value, entryLines } = located;
  if (!Array.isArray(value)) {
    throw new DatasetFormatError('must be a JSON array of instruction strings.', { file, line: 1 });
  }
  value.forEach((goal, index) => {
    if (typeof goal !== 'string' || goal.trim() === '') {
      throw new DatasetFormatError(
        `goal ${index} must be a non-empty instruction string, got ${JSON.stringify(goal)?.slice(0, 80)}.`,
        { file, line: entryLines[index] ?? 1, field: String(index) },
      );
    }
  });
  return value as string[];
}

/** Reads `<dir>/human_goals.json`: the instructions in goal order, validated. */
export async function readWebshopHumanGoals(dir: string): Promise<string[]> {
  return validate(
    await readLocatedJson(join(dir, HUMAN_GOALS_FILE), 'the human goals WebShop tasks come from'),
  );
}

/** {@link readWebshopHumanGoals}, synchronously. */
export function readWebshopHumanGoalsSync(dir: string): string[] {
  return validate(
    readLocatedJsonSync(join(dir, HUMAN_GOALS_FILE), 'the human goals WebShop tasks come from'),
  );
}

/** Index of each normalised instruction in the goals (the first, where one repeats). */
export function indexWebshopGoals(goals: readonly string[]): Map<string, number> {
  const index = new Map<string, number>();
  goals.forEach((goal, position) => {
    const key = normalizeWebshopInstruction(goal);
    if (!index.has(key)) index.set(key, position);
  });
  return index;
}

/** The seed task of human goal `index`, starting on WebShop's search page. */
export function webshopGoalTask(instruction: string, index: number): Task {
  return {
    id: `webshop/goal-${index}`,
    domain: 'webshop',
    instruction,
    origin: 'seed',
    initialObservation: webshopPageToObservation(
      { kind: 'search', hasSearchBar: true, buttons: [], instruction },
      instruction,
    ),
    meta: { split: webshopSplitOf(index), goalIndex: index },
  };
}

/**
 * Loads the human goals as seed {@link Task}s (`meta.split`, `meta.goalIndex`; the initial
 * observation is the search page). `splits` defaults to `['train']` (goals 1500+).
 */
export async function* loadWebshopGoalTasks(
  dir: string,
  options: DatasetLoadOptions = {},
): AsyncGenerator<Task> {
  const splits = resolveWebshopSplits(options.splits);
  const goals = await readWebshopHumanGoals(dir);
  let count = 0;
  for (const [index, instruction] of goals.entries()) {
    if (options.limit !== undefined && count >= options.limit) return;
    if (!splits.includes(webshopSplitOf(index))) continue;
    yield webshopGoalTask(instruction.trim(), index);
    count += 1;
  }
}

/** The human-goal loader as a core {@link DatasetLoader}. */
export const webshopGoalTaskLoader: DatasetLoader<Task> = { load: loadWebshopGoalTasks };
