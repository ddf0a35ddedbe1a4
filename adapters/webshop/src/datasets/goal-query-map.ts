/**
 * `goal_query_map.json` (instruction -> the search queries humans typed for it) and
 * `items_ins_v2_1000.json` (attributes and instructions of 1,000 products).
 */
import { join } from 'node:path';
import { DatasetFormatError } from '@dreamgym/core';
import { parseRecord } from '@dreamgym/core/mdp';
import { z } from 'zod';
import {
  indexWebshopGoals,
  normalizeWebshopInstruction,
  type WebshopSplit,
  webshopSplitOf,
} from './human-goals.js';
import { type LocatedJson, readLocatedJson, readLocatedJsonSync } from './json-file.js';

export const GOAL_QUERY_MAP_FILE = 'goal_query_map.json';
export const ITEMS_FILE = 'items_ins_v2_1000.json';

function members(located: LocatedJson, what: string): Array<[string, unknown, number]> {
  const { file, value, entryLines } = located;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DatasetFormatError(`must be a JSON object (${what}).`, { file, line: 1 });
  }
  return Object.entries(value).map(([key, entry], index) => [key, entry, entryLines[index] ?? 1]);
}

const QueriesSchema = z.array(z.string().min(1)).min(1, 'needs at least one query');

function validateQueryMap(located: LocatedJson): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const [instruction, queries, line] of members(located, 'instruction -> queries')) {
    map.set(
      normalizeWebshopInstruction(instruction),
      parseRecord(QueriesSchema, queries, { file: located.file, line, fieldPrefix: instruction }),
    );
  }
  return map;
}

/**
 * Reads `<dir>/goal_query_map.json` keyed by normalised instruction
 * ({@link normalizeWebshopInstruction}). With `humanGoals` and `splits`, only the
 * instructions of human goals in those splits are kept: the map also holds queries humans
 * typed for evaluation goals, which training must not see.
 */
export async function loadWebshopGoalQueryMap(
  dir: string,
  options: { humanGoals?: readonly string[]; splits?: readonly WebshopSplit[] } = {},
): Promise<Map<string, string[]>> {
  const map = validateQueryMap(
    await readLocatedJson(join(dir, GOAL_QUERY_MAP_FILE), 'instruction -> human search queries'),
  );
  return restrictToSplits(map, options);
}

/** {@link loadWebshopGoalQueryMap}, synchronously. */
export function loadWebshopGoalQueryMapSync(
  dir: string,
  options: { humanGoals?: readonly string[]; splits?: readonly WebshopSplit[] } = {},
): Map<string, string[]> {
  const map = validateQueryMap(
    readLocatedJsonSync(join(dir, GOAL_QUERY_MAP_FILE), 'instruction -> human search queries'),
  );
  return restrictToSplits(map, options);
}

function restrictToSplits(
  map: Map<string, string[]>,
  options: { humanGoals?: readonly string[]; splits?: readonly WebshopSplit[] },
): Map<string, string[]> {
  if (options.humanGoals === undefined || options.splits === undefined) return map;
  const index = indexWebshopGoals(options.humanGoals);
  const splits = new Set(options.splits);
  return new Map(
    [...map].filter(([instruction]) => {
      const position = index.get(instruction);
      // Instructions that are no human goal hold no evaluation data.
      return position === undefined || splits.has(webshopSplitOf(position));
    }),
  );
}

/** One product of `items_ins_v2_1000.json`. */
export const WebshopItemRecordSchema = z.object({
  /** The product's attributes (`tea tree`, `natural ingredients`). */
  attributes: z.array(z.string()),
  /** A synthetic instruction for the product, when it has one. */
  instruction: z.string().optional(),
  /** The attributes the instruction asks for. */
  instruction_attributes: z.array(z.string()).optional(),
});
export type WebshopItemRecord = z.infer<typeof WebshopItemRecordSchema>;

function validateItems(located: LocatedJson): Map<string, WebshopItemRecord> {
  const items = new Map<string, WebshopItemRecord>();
  for (const [asin, record, line] of members(located, 'ASIN -> attributes')) {
    items.set(
      asin,
      parseRecord(WebshopItemRecordSchema, record, { file: located.file, line, fieldPrefix: asin }),
    );
  }
  return items;
}

/** Reads `<dir>/items_ins_v2_1000.json`: product attributes and instructions by ASIN. */
export async function loadWebshopItems(dir: string): Promise<Map<string, WebshopItemRecord>> {
  return validateItems(await readLocatedJson(join(dir, ITEMS_FILE), 'product attributes'));
}

/** {@link loadWebshopItems}, synchronously. */
export function loadWebshopItemsSync(dir: string): Map<string, WebshopItemRecord> {
  return validateItems(readLocatedJsonSync(join(dir, ITEMS_FILE), 'product attributes'));
}
