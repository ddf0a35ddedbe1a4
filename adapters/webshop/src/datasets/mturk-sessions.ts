/**
 * `mturk_sessions/*.jsonl`: real human WebShop sessions, one page visit per line
 * (`{page, url, goal, content, reward?, reward_info?}`), as offline trajectories. The action
 * between two visits is read off the pages (a new query is a `search[...]`, an item page
 * after results a `click[ASIN]`, a new option on the item page a `click[value]`, the done
 * page a `click[Buy Now]` ...); the last visit's reward is the purchase score.
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Step,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { parseRecord, readJsonlLines } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { formatWebshopAction, WEBSHOP_BUTTONS } from '../action-grammar.js';
import { parseWebshopUrl } from '../pages/parse-page.js';
import type { WebshopPage } from '../pages/webshop-page.js';
import { webshopPageToObservation } from '../state-mapper.js';
import {
  indexWebshopGoals,
  normalizeWebshopInstruction,
  readWebshopHumanGoals,
  resolveWebshopSplits,
  webshopSplitOf,
} from './human-goals.js';

/** The folder of the session logs inside a WebShop data directory. */
export const MTURK_SESSIONS_DIRECTORY = 'mturk_sessions';

/** The goal WebShop logged with every page of a session. */
export const WebshopSessionGoalSchema = z.object({
  asin: z.string().min(1),
  category: z.string(),
  query: z.string(),
  name: z.string(),
  product_category: z.string(),
  instruction_text: z.string().min(1),
  attributes: z.array(z.string()),
  price_upper: z.number(),
  goal_options: z.union([z.array(z.string()), z.record(z.string(), z.string())]),
  weight: z.number().optional(),
});
export type WebshopSessionGoal = z.infer<typeof WebshopSessionGoalSchema>;

/** WebShop's `reward_info` of a purchase. */
export const WebshopRewardInfoSchema = z.object({
  r_type: z.number(),
  r_att: z.number(),
  query_match: z.boolean(),
  category_match: z.boolean(),
  title_score: z.number(),
  r_option: z.number().optional(),
  r_price: z.boolean().optional(),
});
export type WebshopRewardInfo = z.infer<typeof WebshopRewardInfoSchema>;

const stringOrList = z.union([z.array(z.string()), z.string()]);

/** One line of a session log. */
export const WebshopSessionRecordSchema = z.discriminatedUnion('page', [
  z.object({ page: z.literal('index'), url: z.string(), goal: WebshopSessionGoalSchema }),
  z.object({
    page: z.literal('search_results'),
    url: z.string(),
    goal: WebshopSessionGoalSchema,
    content: z.object({
      keywords: stringOrList,
      search_result_asins: z.array(z.string()),
      page: z.union([z.number(), z.string()]),
    }),
  }),
  z.object({
    page: z.literal('item_page'),
    url: z.string(),
    goal: WebshopSessionGoalSchema,
    content: z.object({
      keywords: stringOrList,
      page: z.union([z.number(), z.string()]),
      asin: z.string().min(1),
      options: z.record(z.string(), z.string()),
    }),
  }),
  z.object({
    page: z.literal('item_sub_page'),
    url: z.string(),
    goal: WebshopSessionGoalSchema,
    content: z.object({
      keywords: stringOrList,
      page: z.union([z.number(), z.string()]),
      asin: z.string().min(1),
      options: z.record(z.string(), z.string()),
    }),
  }),
  z.object({
    page: z.literal('done'),
    url: z.string(),
    goal: WebshopSessionGoalSchema,
    content: z.object({
      asin: z.string().min(1),
      options: z.record(z.string(), z.string()),
      price: z.number(),
    }),
    reward: z.number(),
    reward_info: WebshopRewardInfoSchema,
  }),
]);
export type WebshopSessionRecord = z.infer<typeof WebshopSessionRecordSchema>;

/** A validated session log line with where it came from. */
export interface LocatedSessionRecord {
  record: WebshopSessionRecord;
  line: number;
}

/** Reads and validates one session log (lines of {@link WebshopSessionRecordSchema}). */
export async function readWebshopSession(file: string): Promise<LocatedSessionRecord[]> {
  const records: LocatedSessionRecord[] = [];
  for await (const { line, value } of readJsonlLines(file)) {
    records.push({ record: parseRecord(WebshopSessionRecordSchema, value, { file, line }), line });
  }
  return records;
}

function keywordsOf(keywords: string | readonly string[]): string[] {
  if (Array.isArray(keywords)) return [...keywords];
  const words = [...(keywords as string).matchAll(/'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"/g)].map(
    (match) => match[1] ?? match[2] ?? '',
  );
  return words.length > 0 ? words : (keywords as string).split(/\s+/).filter(Boolean);
}

/** The options seen per item over a whole session: WebShop logs only the chosen ones. */
function optionsSeen(records: readonly LocatedSessionRecord[]): Map<string, Map<string, string[]>> {
  const seen = new Map<string, Map<string, string[]>>();
  for (const { record } of records) {
    if (record.page !== 'item_page' && record.page !== 'item_sub_page' && record.page !== 'done') {
      continue;
    }
    const asin = record.content.asin.toUpperCase();
    const options = seen.get(asin) ?? new Map<string, string[]>();
    for (const [name, value] of Object.entries(record.content.options)) {
      const values = options.get(name) ?? [];
      if (!values.includes(value)) values.push(value);
      options.set(name, values);
    }
    seen.set(asin, options);
  }
  return seen;
}

/**
 * The page a log line shows, as far as the log tells it: result lists give ASINs only (no
 * titles or prices), item pages the options chosen anywhere in the session for that item,
 * the done page the score.
 */
function pageOf(
  record: WebshopSessionRecord,
  options: Map<string, Map<string, string[]>>,
): WebshopPage {
  const instruction = record.goal.instruction_text;
  switch (record.page) {
    case 'index':
      return { kind: 'search', instruction, hasSearchBar: true, buttons: [] };
    case 'search_results': {
      const pageNumber = Number(record.content.page);
      return {
        kind: 'results',
        instruction,
        hasSearchBar: false,
        buttons: [
          WEBSHOP_BUTTONS.backToSearch,
          ...(pageNumber > 1 ? [WEBSHOP_BUTTONS.previousPage] : []),
          WEBSHOP_BUTTONS.nextPage,
        ],
        query: keywordsOf(record.content.keywords).join(' '),
        pageNumber,
        products: record.content.search_result_asins.map((asin) => ({ asin: asin.toUpperCase() })),
      };
    }
    case 'item_page': {
      const asin = record.content.asin.toUpperCase();
      return {
        kind: 'item',
        instruction,
        hasSearchBar: false,
        buttons: [
          WEBSHOP_BUTTONS.backToSearch,
          WEBSHOP_BUTTONS.previousPage,
          WEBSHOP_BUTTONS.description,
          WEBSHOP_BUTTONS.features,
          WEBSHOP_BUTTONS.reviews,
          WEBSHOP_BUTTONS.buyNow,
        ],
        asin,
        options: [...(options.get(asin) ?? new Map<string, string[]>())].map(([name, values]) => ({
          name,
          values,
        })),
        selected: { ...record.content.options },
      };
    }
    case 'item_sub_page': {
      const section = parseWebshopUrl(record.url).section;
      return {
        kind: 'item-detail',
        instruction,
        hasSearchBar: false,
        buttons: [WEBSHOP_BUTTONS.backToSearch, WEBSHOP_BUTTONS.previousPage],
        asin: record.content.asin.toUpperCase(),
        ...(section === undefined ? {} : { section }),
      };
    }
    case 'done':
      return {
        kind: 'done',
        hasSearchBar: false,
        buttons: [],
        asin: record.content.asin.toUpperCase(),
        score: record.reward,
        purchasedOptions: { ...record.content.options },
      };
  }
}

/** Page identity for telling moves apart: kind, query, page number, item and options. */
function stateOf(record: WebshopSessionRecord) {
  switch (record.page) {
    case 'search_results':
      return {
        page: record.page,
        keywords: keywordsOf(record.content.keywords).join(' '),
        pageNumber: Number(record.content.page),
      };
    case 'item_page':
    case 'item_sub_page':
      return {
        page: record.page,
        keywords: keywordsOf(record.content.keywords).join(' '),
        pageNumber: Number(record.content.page),
        asin: record.content.asin.toUpperCase(),
        options: record.content.options,
        section: record.page === 'item_sub_page' ? parseWebshopUrl(record.url).section : undefined,
      };
    default:
      return { page: record.page };
  }
}

/**
 * The action that leads from page `from` to page `to`, or undefined when the two are the
 * same page (a reload) and no action was taken.
 *
 * @throws DatasetFormatError when no WebShop action leads from one to the other.
 */
export function sessionAction(
  from: WebshopSessionRecord,
  to: WebshopSessionRecord,
  where: { file: string; line: number },
): string | undefined {
  const a = stateOf(from);
  const b = stateOf(to);
  const click = (value: string) => formatWebshopAction('click', value);
  if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
  if (b.page === 'search_results') {
    if (a.page === 'search_results' && a.keywords === b.keywords) {
      if (b.pageNumber === a.pageNumber! + 1) return click(WEBSHOP_BUTTONS.nextPage);
      if (b.pageNumber === a.pageNumber! - 1) return click(WEBSHOP_BUTTONS.previousPage);
    }
    if (a.page === 'item_page' && a.keywords === b.keywords && a.pageNumber === b.pageNumber) {
      return click(WEBSHOP_BUTTONS.previousPage);
    }
    if (a.page === 'index' && b.pageNumber === 1) return formatWebshopAction('search', b.keywords!);
  }
  if (b.page === 'index' && a.page !== 'index' && a.page !== 'done') {
    return click(WEBSHOP_BUTTONS.backToSearch);
  }
  if (b.page === 'item_page') {
    if (a.page === 'search_results' && Object.keys(b.options!).length === 0) return click(b.asin!);
    if (a.page === 'item_sub_page' && a.asin === b.asin) return click(WEBSHOP_BUTTONS.previousPage);
    if (a.page === 'item_page' && a.asin === b.asin) {
      const changed = Object.entries(b.options!).filter(
        ([name, value]) => a.options![name] !== value,
      );
      if (changed.length === 1) return click(changed[0]![1]);
    }
  }
  if (b.page === 'item_sub_page' && a.page === 'item_page' && a.asin === b.asin && b.section) {
    return click(b.section);
  }
  if (b.page === 'done' && (a.page === 'item_page' || a.page === 'item_sub_page')) {
    return click(WEBSHOP_BUTTONS.buyNow);
  }
  throw new DatasetFormatError(
    `no WebShop action leads from the ${from.page} page of the line before to this ${to.page} page (${to.url}).`,
    { ...where, field: 'page' },
  );
}

/** How offline purchase steps are rewarded: see `WebshopAdapterOptions.reward`. */
export type WebshopRewardMode = 'success' | 'score';

/** Options of {@link loadWebshopSessionTrajectories}. */
export interface WebshopSessionLoadOptions extends DatasetLoadOptions {
  /** `success` (default): reward 1 only for a purchase scoring 1; `score`: the purchase score. */
  reward?: WebshopRewardMode;
}

/**
 * Converts one validated session to a {@link Trajectory}. The purchase step carries the
 * logged score in `info.score` and `info.rewardInfo`; success means a score of 1.
 *
 * @throws DatasetFormatError naming the line whose page no action reaches, or whose goal
 * differs from the session's.
 */
export function sessionToTrajectory(
  records: readonly LocatedSessionRecord[],
  file: string,
  context: { goalIndex?: number; reward?: WebshopRewardMode } = {},
): Trajectory {
  if (records.length === 0) throw new DatasetFormatError('the session log is empty.', { file });
  const first = records[0]!.record;
  for (const { record, line } of records) {
    if (JSON.stringify(record.goal) !== JSON.stringify(first.goal)) {
      throw new DatasetFormatError('the goal differs from the goal on the first line.', {
        file,
        line,
        field: 'goal',
      });
    }
  }
  const options = optionsSeen(records);
  const visits: LocatedSessionRecord[] = [records[0]!];
  const actions: string[] = [];
  for (const located of records.slice(1)) {
    const previous = visits.at(-1)!;
    const action = sessionAction(previous.record, located.record, { file, line: located.line });
    if (action === undefined) continue;
    actions.push(action);
    visits.push(located);
  }
  const instruction = first.goal.instruction_text;
  const last = visits.at(-1)!.record;
  const score = last.page === 'done' ? last.reward : 0;
  const success = last.page === 'done' && score >= 1;
  const steps: Step[] = actions.map((action, index) => {
    const purchase = index === actions.length - 1 && last.page === 'done';
    const reward = purchase ? (context.reward === 'score' ? score : success ? 1 : 0) : 0;
    return {
      observation: webshopPageToObservation(pageOf(visits[index]!.record, options), instruction),
      action,
      reward,
      done: purchase,
      ...(purchase && last.page === 'done'
        ? { info: { score, rewardInfo: last.reward_info, price: last.content.price } }
        : {}),
    };
  });
  const session = basename(file, '.jsonl');
  const goalMeta =
    context.goalIndex === undefined
      ? { split: 'train' }
      : { split: webshopSplitOf(context.goalIndex), goalIndex: context.goalIndex };
  return parseRecord(
    TrajectorySchema,
    {
      id: `mturk:${session}`,
      task: {
        id: `webshop/mturk-${session}`,
        domain: 'webshop',
        instruction,
        origin: 'seed',
        initialObservation:
          steps[0]?.observation ?? webshopPageToObservation(pageOf(first, options), instruction),
        meta: { ...goalMeta, session, goal: first.goal },
      },
      steps,
      finalObservation: webshopPageToObservation(pageOf(last, options), instruction),
      source: 'offline',
      success,
      meta: { human: true, session, score },
    },
    { file },
  );
}

/**
 * Loads the human sessions of `<dir>/mturk_sessions/` as offline {@link Trajectory}s, in file
 * name order. Each session's goal is looked up in `human_goals.json` (without its price
 * clause): `splits` (default `['train']`) keeps sessions whose goal is in those splits, so a
 * session on an evaluation goal is never training data; a goal that is no human goal counts
 * as `train`.
 */
export async function* loadWebshopSessionTrajectories(
  dir: string,
  options: WebshopSessionLoadOptions = {},
): AsyncGenerator<Trajectory> {
  const splits = resolveWebshopSplits(options.splits);
  const goals = indexWebshopGoals(await readWebshopHumanGoals(dir));
  const folder = join(dir, MTURK_SESSIONS_DIRECTORY);
  let files: string[];
  try {
    if (!(await stat(folder)).isDirectory()) throw new Error('not a directory');
    files = (await readdir(folder)).filter((name) => name.endsWith('.jsonl')).sort(compareNatural);
  } catch (error) {
    throw new DatasetNotFoundError(
      `WebShop session folder ${folder} does not exist. Pass the WebShop data folder (--data DIR, or DREAMGYM_DATA_DIR holding webshop/), or fetch it with downloadWebshopData(dir).`,
      { path: folder, cause: error },
    );
  }
  let count = 0;
  for (const name of files) {
    if (options.limit !== undefined && count >= options.limit) return;
    const file = join(folder, name);
    const records = await readWebshopSession(file);
    if (records.length === 0) continue;
    const goalIndex = goals.get(
      normalizeWebshopInstruction(records[0]!.record.goal.instruction_text),
    );
    const split = goalIndex === undefined ? 'train' : webshopSplitOf(goalIndex);
    if (!splits.includes(split)) continue;
    yield sessionToTrajectory(records, file, {
      ...(goalIndex === undefined ? {} : { goalIndex }),
      ...(options.reward === undefined ? {} : { reward: options.reward }),
    });
    count += 1;
  }
}

/** `20220427_1_7` before `20220427_1_12`. */
function compareNatural(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/** The session loader as a core {@link DatasetLoader}, with the given reward mode. */
export function webshopSessionTrajectoryLoader(
  reward: WebshopRewardMode = 'success',
): DatasetLoader<Trajectory> {
  return { load: (dir, options) => loadWebshopSessionTrajectories(dir, { reward, ...options }) };
}
