import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatasetFormatError, DatasetNotFoundError, type Task } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBARENA_SAMPLE_FILE } from '../sites.test-support.js';
import { webarenaDataDirectory, webarenaFullConfigFile } from '../test-data-directory.js';
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
    // The line is the field's own line in the file (the config's when the field is missing),
    // and the column where its value starts.
    const lines = readFileSync(join(directory, 'configs.json'), 'utf8').split('\n');
    expect(lines[formatError.line! - 1]!.trim().startsWith(onLine)).toBe(true);
    expect(formatError.recordId).toBe('task_id 7');
    expect(formatError.message).toContain(
      `configs.json:${formatError.line}:${formatError.column} (task_id 7)`,
    );
    // Every field here holds a string: its value starts with a quote at the column.
    const at = lines[formatError.line! - 1]!.slice(formatError.column! - 1);
    expect(at[0]).toBe(onLine === '{' ? '{' : '"');
  });

  it('rejects a task id that appears twice in one file, naming both places with their columns', async () => {
    const directory = await writeConfigs('twice', [good, good]);
    // JSON.stringify(..., null, 2): the task_ids are on lines 6 and 26, column 16.
    await expect(collect(loadWebarenaTasks(directory))).rejects.toThrow(
      /configs\.json:26:16 \(task_id 7\) \(field `task_id`\): task_id 7 appears twice in this file \(first at 6:16\)/,
    );
  });

  it('rejects one id for two different tasks in two files; copies of one task load once', async () => {
    const directory = await mkdtemp(join(scratch, 'two-sets-'));
    await writeFile(join(directory, 'a.json'), JSON.stringify([good, { ...good, task_id: 8 }]));
    await writeFile(
      join(directory, 'b.json'),
      JSON.stringify([
        { ...good, task_id: 8 },
        { ...good, intent: 'Close my todos' },
      ]),
    );
    const error = (await collect(loadWebarenaTasks(directory)).catch((thrown) => thrown)) as Error;
    expect(error.message).toMatch(
      /^.*b\.json:1:\d+ \(task_id 7\) \(field `task_id`\): task_id 7 is also a\.json:1:\d+, a different task \(intent "Open my todos", here "Close my todos"\): two tasks with one id/,
    );
    const reported: DatasetFormatError[] = [];
    const tasks = await collect(
      loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
    );
    expect(tasks.map((task) => task.id)).toEqual(['webarena:7', 'webarena:8']);
    expect(reported.map((e) => `${e.file.endsWith('b.json')} ${e.recordId}`)).toEqual([
      'true task_id 7',
    ]);
  });

  it('names every invalid config at once, and loads the valid ones with skipInvalid', async () => {
    const wrongType = {
      ...good,
      task_id: 8,
      eval: {
        ...good.eval,
        eval_types: ['string_match'],
        reference_answers: { must_include: { text: 'todos' } },
      },
    };
    const noIntent = { ...good, task_id: 9, intent: undefined };
    const directory = await writeConfigs('several', [good, wrongType, noIntent]);
    const error = (await collect(loadWebarenaTasks(directory)).catch((thrown) => thrown)) as Error;
    expect(DatasetFormatError.isInstance(error)).toBe(true);
    expect(error.message).toMatch(
      /2 problems in 3 configs; nothing was loaded \(skipInvalid, or --skip-invalid, loads the 1 valid config and reports these\)/,
    );
    expect(error.message).toMatch(
      /configs\.json:\d+:\d+ \(task_id 8\) \(field `eval\.reference_answers\.must_include`\): expected a list of phrases \(strings\), or one phrase, got an object/,
    );
    expect(error.message).toMatch(/configs\.json:\d+:\d+ \(task_id 9\) \(field `intent`\)/);
    const reported: DatasetFormatError[] = [];
    const tasks = await collect(
      loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
    );
    expect(tasks.map((task) => task.id)).toEqual(['webarena:7']);
    expect(reported.map((e) => e.recordId)).toEqual(['task_id 8', 'task_id 9']);
  });

  it("reads a syntax error's line, column and config; skipInvalid loads the configs before it", async () => {
    const directory = await mkdtemp(join(scratch, 'syntax-'));
    const text = JSON.stringify([good, { ...good, task_id: 8 }], null, 2).replace(
      '"intent": "Open my todos",\n    "eval": {\n      "eval_types": [\n        "url_match"\n      ],\n      "reference_answers": null,\n      "reference_url": "__GITLAB__/dashboard/todos",\n      "program_html": [],\n      "url_note": "GOLD in PRED"\n    }\n  }\n]',
      '"intent": "Open my todos" "eval": {}}]',
    );
    await writeFile(join(directory, 'broken.json'), text);
    await writeFile(join(directory, 'fine.json'), JSON.stringify([{ ...good, task_id: 11 }]));
    const error = (await collect(loadWebarenaTasks(directory)).catch((thrown) => thrown)) as
      | DatasetFormatError
      | undefined;
    expect(error?.message).toMatch(/broken\.json:\d+:\d+ \(task_id 8\): invalid JSON/);
    expect(error?.column).toBeGreaterThan(1);
    const reported: DatasetFormatError[] = [];
    const tasks = await collect(
      loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
    );
    // The error is in the file's last config: there is no next config to read on to.
    expect(tasks.map((task) => task.id)).toEqual(['webarena:7', 'webarena:11']);
    expect(reported).toHaveLength(1);
  });

  it('reads a WebArena checkout after its data generation once: test.raw.json, test.json and config_files/', async () => {
    const directory = await mkdtemp(join(scratch, 'generated-'));
    const raw = [good, { ...good, task_id: 8 }];
    const resolved = raw.map((config) => ({
      ...config,
      start_url: 'http://127.0.0.1:8023',
      eval: { ...config.eval, reference_url: 'http://127.0.0.1:8023/dashboard/todos' },
    }));
    await writeFile(join(directory, 'test.json'), JSON.stringify(resolved));
    await writeFile(join(directory, 'test.raw.json'), JSON.stringify(raw));
    await mkdir(join(directory, 'config_files'));
    for (const config of resolved) {
      await writeFile(
        join(directory, 'config_files', `${config.task_id}.json`),
        JSON.stringify(config),
      );
    }
    const tasks = await collect(loadWebarenaTasks(directory));
    expect(tasks.map((task) => task.id)).toEqual(['webarena:7', 'webarena:8']);
    // The copy with placeholders is the one kept: any deployment resolves it.
    expect(tasks.map((task) => (task.meta.source as { file: string }).file)).toEqual([
      'test.raw.json',
      'test.raw.json',
    ]);
    expect(tasks[0]!.meta.startUrl).toBe('__GITLAB__');
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

describe("loadWebarenaTasks on a copy of WebArena's 812-task test.raw.json", () => {
  const original = () => readFileSync(webarenaFullConfigFile(), 'utf8');
  /** `text` with `from` replaced by `to` at its first match after `after`. */
  const replaceAfter = (text: string, after: string, from: string, to: string) => {
    const start = text.indexOf(after);
    const at = text.indexOf(from, start);
    expect(start >= 0 && at >= 0, `${after} ... ${from}`).toBe(true);
    return `${text.slice(0, at)}${to}${text.slice(at + from.length)}`;
  };
  /** 1-based line and column of `index` in `text`. */
  const positionAt = (text: string, index: number) => {
    const before = text.slice(0, index);
    return `${before.split('\n').length}:${index - before.lastIndexOf('\n')}`;
  };
  const ids = (tasks: Task[]) => tasks.map((task) => task.meta.taskId as number);

  it('names a syntax error, a schema error and a duplicate in one error, before yielding any task', async () => {
    const text = original();
    expect(JSON.parse(text)).toHaveLength(812);
    // Task 50 loses a comma, task 100's must_include becomes an object, task 201 says it is 200.
    let broken = replaceAfter(
      text,
      '"task_id": 50,',
      '"require_login": true,',
      '"require_login": true',
    );
    const open = broken.indexOf('"must_include": [', broken.indexOf('"task_id": 100,'));
    const close = broken.indexOf(']', open);
    broken = `${broken.slice(0, open)}"must_include": {"all": ${broken.slice(open + 16, close + 1)}}${broken.slice(close + 1)}`;
    broken = broken.replace('"task_id": 201,', '"task_id": 200,');
    const directory = await mkdtemp(join(scratch, 'full-'));
    const file = join(directory, 'test.raw.json');
    await writeFile(file, broken);

    const syntaxAt = positionAt(
      broken,
      broken.indexOf('"storage_state"', broken.indexOf('"task_id": 50,')),
    );
    const schemaAt = positionAt(broken, broken.indexOf('{"all"'));
    const firstTwoHundred = broken.indexOf('"task_id": 200,') + '"task_id": '.length;
    const duplicateAt = positionAt(
      broken,
      broken.indexOf('"task_id": 200,', firstTwoHundred) + '"task_id": '.length,
    );
    expect(syntaxAt).toBe('1582:5'); // the spot the issue reported

    // Nothing is yielded: the first step of the loader fails with every problem.
    const iterator = loadWebarenaTasks(directory)[Symbol.asyncIterator]();
    const error = (await iterator.next().catch((thrown: unknown) => thrown)) as DatasetFormatError;
    expect(DatasetFormatError.isInstance(error)).toBe(true);
    expect(error.message).toContain(
      '3 problems in 812 configs; nothing was loaded (skipInvalid, or --skip-invalid, loads the 809 valid configs and reports these):',
    );
    expect(error.message).toContain(
      `${file}:${syntaxAt} (task_id 50): invalid JSON: expected "," or "}" after the value of "require_login"`,
    );
    expect(error.message).toContain(
      `${file}:${schemaAt} (task_id 100) (field \`eval.reference_answers.must_include\`): expected a list of phrases (strings), or one phrase, got an object`,
    );
    expect(error.message).toContain(
      `${file}:${duplicateAt} (task_id 200) (field \`task_id\`): task_id 200 appears twice in this file (first at ${positionAt(broken, firstTwoHundred)})`,
    );

    // skipInvalid reads past the syntax error: every other config loads, each problem reported.
    const reported: DatasetFormatError[] = [];
    const tasks = await collect(
      loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
    );
    expect(tasks).toHaveLength(809);
    expect(ids(tasks)).toEqual(
      Array.from({ length: 812 }, (_, id) => id).filter((id) => ![50, 100, 201].includes(id)),
    );
    expect(tasks.find((task) => task.meta.taskId === 51)!.instruction).toBe(
      (JSON.parse(text) as { intent: string }[])[51]!.intent,
    );
    expect(reported.map((e) => e.recordId)).toEqual(['task_id 50', 'task_id 100', 'task_id 200']);
  });

  it('reports the one spot it cannot read past, and loads the configs before it with skipInvalid', async () => {
    const text = original();
    // The file ends inside task 400's intent.
    const cut = text.indexOf('"intent": "', text.indexOf('"task_id": 400,')) + 20;
    const directory = await mkdtemp(join(scratch, 'truncated-'));
    const file = join(directory, 'test.raw.json');
    await writeFile(file, text.slice(0, cut));
    const error = (await collect(loadWebarenaTasks(directory)).catch((thrown) => thrown)) as Error;
    expect(error.message).toBe(
      `${file}:${positionAt(text, cut)} (task_id 400): invalid JSON: a string is not closed; reading stopped here, with 400 configs read before it (no next config was found to read on from)`,
    );
    const reported: DatasetFormatError[] = [];
    const tasks = await collect(
      loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
    );
    expect(ids(tasks)).toEqual(Array.from({ length: 400 }, (_, id) => id));
    expect(reported).toHaveLength(1);
  });

  it('loads both configs around a missing comma between them, and reports the spot', async () => {
    const text = original();
    const next = text.lastIndexOf('\n  {', text.indexOf('"task_id": 301,'));
    expect(text.slice(next - 4, next)).toBe('  },');
    const directory = await mkdtemp(join(scratch, 'comma-'));
    const file = join(directory, 'test.raw.json');
    await writeFile(file, `${text.slice(0, next - 1)}${text.slice(next)}`);
    const reported: DatasetFormatError[] = [];
    const tasks = await collect(
      loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
    );
    expect(tasks).toHaveLength(812);
    expect(reported.map((e) => e.message)).toEqual([
      // At the next config's `{` (the comma was on the line before it).
      `${file}:${positionAt(text, next + 3)} (task_id 300): invalid JSON: expected "," or "]" after a config`,
    ]);
  });

  it('reports a per-task file whose name is not its task_id, in config_files/ beside test.raw.json', async () => {
    const text = original();
    const configs = JSON.parse(text) as { task_id: number }[];
    const directory = await mkdtemp(join(scratch, 'per-task-full-'));
    await mkdir(join(directory, 'config_files'));
    for (const config of configs) {
      const written = config.task_id === 201 ? { ...config, task_id: 200 } : config;
      await writeFile(
        join(directory, 'config_files', `${config.task_id}.json`),
        JSON.stringify(written, null, 2),
      );
    }
    const misnamed = join(directory, 'config_files', '201.json');
    const problem = `${misnamed}:5:14 (task_id 200) (field \`task_id\`): config_files/201.json holds task_id 200: a per-task file is named after its task (task 200 belongs in config_files/200.json, and config_files/200.json:5:14 already holds it); this config is not loaded`;
    // The per-task layout alone, then WebArena's generated checkout (test.raw.json beside it).
    for (const withRaw of [false, true]) {
      if (withRaw) await writeFile(join(directory, 'test.raw.json'), text);
      const error = (await collect(loadWebarenaTasks(directory)).catch(
        (thrown) => thrown,
      )) as Error;
      expect(error.message).toBe(
        withRaw
          ? problem.replace(
              'config_files/200.json:5:14',
              `test.raw.json:${positionAt(text, text.indexOf('"task_id": 200,') + 11)}`,
            )
          : problem,
      );
      const reported: DatasetFormatError[] = [];
      const tasks = await collect(
        loadWebarenaTasks(directory, { skipInvalid: true, onInvalid: (e) => reported.push(e) }),
      );
      // Without test.raw.json task 201 is lost, and said to be; with it, its copy there loads.
      expect(ids(tasks)).toEqual(
        Array.from({ length: 812 }, (_, id) => id).filter((id) => withRaw || id !== 201),
      );
      expect(reported.map((e) => e.file)).toEqual([misnamed]);
    }
  });
});
