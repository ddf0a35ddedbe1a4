import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigError,
  DatasetFormatError,
  DatasetNotFoundError,
  type Task,
  type Trajectory,
} from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webshopDataDirectory } from '../test-data-directory.js';
import { downloadWebshopData } from './download.js';
import { loadWebshopGoalQueryMap, loadWebshopItems } from './goal-query-map.js';
import {
  loadWebshopGoalTasks,
  normalizeWebshopInstruction,
  readWebshopHumanGoals,
} from './human-goals.js';
import { loadWebshopSessionTrajectories } from './mturk-sessions.js';

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const result: T[] = [];
  for await (const item of items) result.push(item);
  return result;
}

let dataDir: string;
let scratch: string;
beforeAll(async () => {
  dataDir = webshopDataDirectory();
  scratch = await mkdtemp(join(tmpdir(), 'dreamgym-webshop-data-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('human goals', () => {
  it('loads the standard splits: 1500+ train by default, 500-1499 eval, 0-499 test', async () => {
    const train = await collect(loadWebshopGoalTasks(dataDir));
    const evaluation = await collect(loadWebshopGoalTasks(dataDir, { splits: ['eval'] }));
    const test = await collect(loadWebshopGoalTasks(dataDir, { splits: ['test'] }));
    expect([train.length, evaluation.length, test.length]).toEqual([10_587, 1_000, 500]);
    expect(train[0]!.meta).toEqual({ split: 'train', goalIndex: 1500 });
    expect(evaluation.at(-1)!.meta.goalIndex).toBe(1499);
    expect(train.every((task: Task) => (task.meta.goalIndex as number) >= 1500)).toBe(true);
    expect(train[0]!.initialObservation!.text).toBe(
      'WebShop search page.\nSearch bar: search[<query>]',
    );
    expect(train[0]!.initialObservation!.actions![0]).toMatch(/^search\[.+\]$/);
    await expect(
      collect(loadWebshopGoalTasks(dataDir, { splits: ['valid_seen'] })),
    ).rejects.toThrow(/Unknown WebShop split "valid_seen".*--eval-split eval/);
    expect(
      ConfigError.isInstance(
        await collect(loadWebshopGoalTasks(dataDir, { splits: ['x'] })).catch((error) => error),
      ),
    ).toBe(true);
  });

  it('names file, line and entry of a malformed goal', async () => {
    const dir = join(scratch, 'bad-goals');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'human_goals.json'),
      '[\n  "i need a red hat",\n  "",\n  "a blue scarf"\n]\n',
    );
    const error = (await collect(loadWebshopGoalTasks(dir, { splits: ['test'] })).catch(
      (thrown) => thrown,
    )) as DatasetFormatError;
    expect(DatasetFormatError.isInstance(error)).toBe(true);
    expect(error.message).toContain(`${join(dir, 'human_goals.json')}:3`);
    expect(error.field).toBe('1');
    await writeFile(
      join(dir, 'human_goals.json'),
      '[\n  "i need a red hat",\n  "a blue scarf\n]\n',
    );
    const syntax = (await readWebshopHumanGoals(dir).catch(
      (thrown) => thrown,
    )) as DatasetFormatError;
    expect(DatasetFormatError.isInstance(syntax)).toBe(true);
    expect(syntax.line).toBeGreaterThanOrEqual(3);
  });
});

describe('goal_query_map.json and items_ins_v2_1000.json', () => {
  it('loads the query map, and keeps only train-split instructions when asked', async () => {
    const all = await loadWebshopGoalQueryMap(dataDir);
    expect(all.size).toBeGreaterThan(1_400);
    const humanGoals = await readWebshopHumanGoals(dataDir);
    const train = await loadWebshopGoalQueryMap(dataDir, { humanGoals, splits: ['train'] });
    expect(train.size).toBeLessThan(all.size - 400);
    expect(train.has(normalizeWebshopInstruction(humanGoals[0]!))).toBe(false);
    const items = await loadWebshopItems(dataDir);
    expect(items.size).toBe(1_000);
    expect(items.get('B07DJJXGB5')!.attributes).toContain('tea tree');
  });

  it('names the line of a malformed entry', async () => {
    const dir = join(scratch, 'bad-map');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'goal_query_map.json'),
      '{\n  "a red hat": ["red hat"],\n  "a blue scarf": "blue scarf"\n}\n',
    );
    const error = (await loadWebshopGoalQueryMap(dir).catch(
      (thrown) => thrown,
    )) as DatasetFormatError;
    expect(error.line).toBe(3);
    expect(error.field).toBe('a blue scarf');
    await writeFile(
      join(dir, 'items_ins_v2_1000.json'),
      '{\n "B0": {"attributes": []},\n "B1": {"attributes": "x"}\n}',
    );
    const items = (await loadWebshopItems(dir).catch((thrown) => thrown)) as DatasetFormatError;
    expect(items.message).toContain(':3 (field `B1.attributes`)');
  });
});

describe('human sessions', () => {
  it('turns the real sessions into trajectories, keeping the session on an eval goal out', async () => {
    const train: Trajectory[] = await collect(loadWebshopSessionTrajectories(dataDir));
    const all: Trajectory[] = await collect(
      loadWebshopSessionTrajectories(dataDir, { splits: ['train', 'eval', 'test'] }),
    );
    expect(all).toHaveLength(9);
    expect(train).toHaveLength(8);
    const held = all.find((trajectory) => !train.some((kept) => kept.id === trajectory.id))!;
    expect(held.id).toBe('mturk:20220427_1_17');
    expect(held.task.meta).toMatchObject({ split: 'eval', goalIndex: 1319 });
    const session = all.find((trajectory) => trajectory.id === 'mturk:20220427_1_23')!;
    expect(session.steps.map((step) => step.action)).toEqual([
      'search[red earbud headphones]',
      'click[Next >]',
      'click[B08CZ8WS38]',
      'click[red]',
      'click[Buy Now]',
    ]);
    const purchase = session.steps.at(-1)!;
    expect(purchase).toMatchObject({ reward: 0, done: true, info: { score: 0.6666666666666666 } });
    expect(session.success).toBe(false);
    expect(session.finalObservation!.text).toMatch(/^Purchase complete\. Score: 0\.6667/);
    const perfect = all.find((trajectory) => trajectory.id === 'mturk:20220427_1_7')!;
    expect(perfect.success).toBe(true);
    expect(perfect.steps.at(-1)!.reward).toBe(1);
    expect(perfect.steps.map((step) => step.action)).toContain('click[Description]');
    const scored = await collect(loadWebshopSessionTrajectories(dataDir, { reward: 'score' }));
    expect(
      scored.find((trajectory) => trajectory.id === 'mturk:20220427_1_23')!.steps.at(-1)!.reward,
    ).toBeCloseTo(2 / 3, 12);
    // Every click is among the actions its page lists (searches are the humans' own words).
    for (const trajectory of all) {
      for (const step of trajectory.steps.filter((entry) => entry.action.startsWith('click[')))
        expect(step.observation.actions).toContain(step.action);
    }
  });

  it('rejects a session whose pages no action connects, naming file and line', async () => {
    const dir = join(scratch, 'bad-session');
    await mkdir(join(dir, 'mturk_sessions'), { recursive: true });
    await writeFile(join(dir, 'human_goals.json'), '["a hat"]');
    const goal = {
      asin: 'B0',
      category: 'c',
      query: 'q',
      name: 'n',
      product_category: 'a › b',
      instruction_text: 'i need a hat',
      attributes: [],
      price_upper: 10,
      goal_options: [],
    };
    const lines = [
      { page: 'index', url: 'http://x/s', goal },
      {
        page: 'done',
        url: 'http://x/done/s/B0/%7B%7D',
        goal,
        content: { asin: 'B0', options: {}, price: 1 },
        reward: 1,
        reward_info: {
          r_type: 1,
          r_att: 1,
          query_match: true,
          category_match: true,
          title_score: 1,
          r_price: true,
        },
      },
    ];
    await writeFile(
      join(dir, 'mturk_sessions', 's.jsonl'),
      `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`,
    );
    const error = (await collect(loadWebshopSessionTrajectories(dir)).catch(
      (thrown) => thrown,
    )) as DatasetFormatError;
    expect(error.message).toContain(`${join(dir, 'mturk_sessions', 's.jsonl')}:2`);
    expect(error.message).toMatch(/no WebShop action leads from the index page/);
    const missing = await collect(loadWebshopSessionTrajectories(join(scratch, 'nowhere'))).catch(
      (thrown) => thrown,
    );
    expect(DatasetNotFoundError.isInstance(missing)).toBe(true);
  });
});

describe('downloadWebshopData', () => {
  it('names the URL when the server cannot be reached', async () => {
    const error = (await downloadWebshopData(join(scratch, 'download'), {
      baseUrl: 'http://127.0.0.1:1/webshop',
    }).catch((thrown) => thrown)) as Error;
    expect(error.message).toMatch(
      /http:\/\/127\.0\.0\.1:1\/webshop\/baseline_models\/data\/human_goals\.json/,
    );
  });
});
