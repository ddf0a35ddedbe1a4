import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatasetFormatError, DatasetNotFoundError, type Task } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBARENA_SAMPLE_FILE } from '../sites.test-support.js';
import { webarenaDataDirectory } from '../test-data-directory.js';
import { loadWebarenaTasks, readWebarenaConfigFile } from './task-configs.js';

const collect = async (iterable: AsyncIterable<Task>) => {
  const tasks: Task[] = [];
  for await (const task of iterable) tasks.push(task);
  return tasks;
};

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'dreamgym-webarena-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const good = {
  sites: ['gitlab'],
  task_id: 7,
  require_login: true,
  storage_state: './.auth/gitlab_state.json',
  start_url: '__GITLAB__',
  geolocation: null,
  intent: 'Open my todos',
  eval: {
    eval_types: ['url_match'],
    reference_answers: null,
    reference_url: '__GITLAB__/dashboard/todos',
    program_html: [],
    url_note: 'GOLD in PRED',
  },
};

async function writeConfigs(name: string, configs: unknown[]): Promise<string> {
  const directory = await mkdtemp(join(scratch, `${name}-`));
  await writeFile(join(directory, 'configs.json'), JSON.stringify(configs, null, 2));
  return directory;
}

describe('loadWebarenaTasks', () => {
  it('loads all 165 WebArena-Lite configs as seed tasks, placeholders resolved for the sites given', async () => {
    const tasks = await collect(
      loadWebarenaTasks(webarenaDataDirectory(), {
        sites: { shopping_admin: 'http://127.0.0.1:7780/admin' },
      }),
    );
    expect(tasks).toHaveLength(165);
    expect(new Set(tasks.map((task) => task.id)).size).toBe(165);
    const first = tasks[0]!;
    expect(first).toMatchObject({
      id: 'webarena:0',
      domain: 'webarena-lite',
      instruction: 'What are the top-3 best-selling product in Jan 2023',
      origin: 'seed',
      meta: {
        split: 'test',
        startUrl: 'http://127.0.0.1:7780/admin',
        storageState: './.auth/shopping_admin_state.json',
        intentTemplateId: 279,
        instantiationDict: { n: 3, period: 'Jan 2023' },
        evalTypes: ['string_match'],
        source: { file: 'test_webarena_lite.raw.json', line: 2 },
      },
    });
    // Sites without a URL keep their placeholder until the real connector resolves them.
    expect(tasks.find((task) => task.meta.taskId === 1)!.meta.startUrl).toBe('__MAP__');
    // Task 81 writes must_include as one string: read as a list of one.
    const task81 = tasks.find((task) => task.meta.taskId === 81)!;
    expect(
      (task81.meta.config as { eval: { reference_answers: unknown } }).eval.reference_answers,
    ).toEqual({ must_include: ['yjlou'] });
  });

  it('accepts configs of the original WebArena format (a sample of test.raw.json)', async () => {
    const directory = await mkdtemp(join(scratch, 'original-'));
    await cp(WEBARENA_SAMPLE_FILE, join(directory, 'test.raw.json'));
    const tasks = await collect(loadWebarenaTasks(directory));
    expect(tasks.map((task) => task.meta.taskId)).toEqual([
      0, 22, 386, 45, 585, 586, 436, 600, 481, 173,
    ]);
    expect(tasks[3]!.meta.evalTypes).toEqual(['url_match']);
  });

  it('reads WebArena per-task config files in config_files/, in numeric order', async () => {
    const directory = await mkdtemp(join(scratch, 'per-task-'));
    await mkdir(join(directory, 'config_files'));
    for (const id of [10, 9, 100]) {
      await writeFile(
        join(directory, 'config_files', `${id}.json`),
        JSON.stringify({ ...good, task_id: id }),
      );
    }
    const tasks = await collect(loadWebarenaTasks(directory));
    expect(tasks.map((task) => task.id)).toEqual(['webarena:9', 'webarena:10', 'webarena:100']);
    expect(await collect(loadWebarenaTasks(directory, { limit: 2 }))).toHaveLength(2);
    expect(await collect(loadWebarenaTasks(directory, { splits: ['train'] }))).toHaveLength(0);
  });

  it.each([
    [
      'an unknown site placeholder',
      { ...good, start_url: '__FORUM__/f/news' },
      'start_url',
      /unknown site placeholder __FORUM__/,
      '"start_url"',
    ],
    ['a missing intent', { ...good, intent: undefined }, 'intent', /expected string/, '{'],
    [
      'url_match without a reference_url',
      { ...good, eval: { ...good.eval, reference_url: '' } },
      'eval.reference_url',
      /url_match needs a reference_url/,
      '"reference_url"',
    ],
    [
      'an unknown eval type',
      { ...good, eval: { ...good.eval, eval_types: ['page_image_query'] } },
      'eval.eval_types.0',
      /Invalid option/,
      '"page_image_query"',
    ],
    [
      'an unknown helper function',
      {
        ...good,
        eval: {
          ...good.eval,
          eval_types: ['program_html'],
          program_html: [
            {
              url: 'last',
              locator: 'func:gitlab_get_stars(__page__)',
              required_contents: { exact_match: '3' },
            },
          ],
        },
      },
      'eval.program_html.0.locator',
      /unknown helper function gitlab_get_stars/,
      '"locator"',
    ],
    [
      'a locator that is not JavaScript',
      {
        ...good,
        eval: {
          ...good.eval,
          eval_types: ['program_html'],
          program_html: [
            { url: 'last', locator: '.user-bio', required_contents: { exact_match: '3' } },
          ],
        },
      },
      'eval.program_html.0.locator',
      /must be empty, JavaScript/,
      '"locator"',
    ],
  ])('rejects %s with file, line and field', async (_, bad, field, message, onLine) => {
    const directory = await writeConfigs('bad', [good, bad]);
    const error = await collect(loadWebarenaTasks(directory)).catch((thrown: unknown) => thrown);
    expect(DatasetFormatError.isInstance(error)).toBe(true);
    const formatError = error as DatasetFormatError;
    expect(formatError.file).toBe(join(directory, 'configs.json'));
    expect(formatError.field).toBe(field);
    expect(formatError.line).toBeGreaterThan(20);
    expect(formatError.message).toMatch(message);
    // The line is the field's own line in the file (the config's when the field is missing).
    const lines = readFileSync(join(directory, 'configs.json'), 'utf8').split('\n');
    expect(lines[formatError.line! - 1]!.trim().startsWith(onLine)).toBe(true);
  });

  it('rejects a task id that appears twice, naming both places', async () => {
    const directory = await writeConfigs('twice', [good, good]);
    await expect(collect(loadWebarenaTasks(directory))).rejects.toThrow(
      /task_id 7 appears twice \(first at .*configs\.json:2\)/,
    );
  });

  it('reports a missing directory, and a directory without configs, with DatasetNotFoundError', async () => {
    const missing = await collect(loadWebarenaTasks(join(scratch, 'nope'))).catch(
      (error: unknown) => error,
    );
    expect(DatasetNotFoundError.isInstance(missing)).toBe(true);
    const empty = await mkdtemp(join(scratch, 'empty-'));
    await expect(collect(loadWebarenaTasks(empty))).rejects.toThrow(
      /holds no WebArena config files/,
    );
    await expect(readWebarenaConfigFile(join(empty, 'x.json'))).rejects.toThrow(/does not exist/);
  });
});
