/**
 * `dreamgym data record` end to end: a real browser on pages served on 127.0.0.1, actions
 * from a file, the episode saved as a Trajectory line that the WebArena-Lite loader reads.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StaticServer, serveDirectory } from '@dreamgym/browser';
import type { Trajectory } from '@dreamgym/core';
import { loadWebarenaTrajectories } from '@dreamgym/webarena-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo } from '../cli.test-support.js';

const capture = () => captureIo();

let directory: string;
let server: StaticServer;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-record-'));
  const site = join(directory, 'site');
  await mkdir(site);
  await writeFile(
    join(site, 'counter.html'),
    `<!doctype html><title>Counter</title><button onclick="document.getElementById('count').textContent = String(Number(document.getElementById('count').textContent) + 1)">Add one</button><p id="count">0</p>`,
  );
  server = await serveDirectory(site);
});

afterAll(async () => {
  await server?.close();
  await rm(directory, { recursive: true, force: true });
});

const load = async (dir: string) => {
  const items: Trajectory[] = [];
  for await (const item of loadWebarenaTrajectories(dir)) items.push(item);
  return items;
};

describe('dreamgym data record', () => {
  it('records a --url episode from a file of actions', async () => {
    const out = join(directory, 'url', 'episodes.jsonl');
    const actions = join(directory, 'actions.txt');
    await writeFile(
      actions,
      '# add twice, then answer\nclick [1]\n\nclick [1]\nstop [2]\nclick [1]\n',
    );
    const io = capture();
    const code = await runCli(
      [
        'data',
        'record',
        '--url',
        `${server.url}counter.html`,
        '--instruction',
        'Count to two.',
        '--actions',
        actions,
        '--out',
        out,
      ],
      io,
    );
    expect(io.err()).toContain('step 3: stop [2] -> reward 0, done');
    expect(code).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ output: out, steps: 3, finished: true });
    const [trajectory] = await load(join(directory, 'url'));
    expect(trajectory!.task).toMatchObject({
      domain: 'webarena-lite',
      instruction: 'Count to two.',
    });
    expect(trajectory!.steps.map((step) => step.action)).toEqual([
      'click [1]',
      'click [1]',
      'stop [2]',
    ]);
    expect(trajectory!.finalObservation?.text).toContain("StaticText '2'");
    expect(trajectory!.meta).toMatchObject({ recordedBy: 'dreamgym data record' });
  });

  it('records a WebArena task by --task-id on the given sites, scored by its evaluator', async () => {
    const data = join(directory, 'data');
    await mkdir(data);
    await writeFile(
      join(data, 'test.raw.json'),
      JSON.stringify([
        {
          sites: ['shopping'],
          task_id: 5,
          require_login: false,
          storage_state: null,
          start_url: '__SHOPPING__/counter.html',
          intent: 'Add one, then stop.',
          eval: {
            eval_types: ['url_match'],
            reference_answers: null,
            reference_url: '__SHOPPING__/counter.html',
            url_note: 'GOLD in PRED',
          },
        },
      ]),
    );
    const out = join(directory, 'task', 'episodes.jsonl');
    const actions = join(directory, 'task-actions.txt');
    await writeFile(actions, 'click [1]\nstop []\n');
    const io = capture();
    const code = await runCli(
      [
        'data',
        'record',
        '--task-id',
        '5',
        '--data',
        data,
        '--site',
        `shopping=${server.url.slice(0, -1)}`,
        '--actions',
        actions,
        '--out',
        out,
      ],
      io,
    );
    expect(io.err()).toContain('step 2: stop [] -> reward 1, done');
    expect(code).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ task: 'webarena:5', steps: 2, success: true });
    const [trajectory] = await load(join(directory, 'task'));
    expect(trajectory!.success).toBe(true);
    expect(trajectory!.steps[1]!.info?.evaluation).toMatchObject({ status: 'passed' });
    expect(JSON.parse((await readFile(out, 'utf8')).trim()).task.id).toBe('webarena:5');
  });

  it('saves an episode whose actions run out, marked unfinished', async () => {
    const out = join(directory, 'short', 'episodes.jsonl');
    const actions = join(directory, 'short.txt');
    await writeFile(actions, 'click [1]\n');
    const io = capture();
    expect(
      await runCli(
        [
          'data',
          'record',
          '--url',
          `${server.url}counter.html`,
          '--actions',
          actions,
          '--out',
          out,
        ],
        io,
      ),
    ).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ steps: 1, finished: false, success: false });
  });

  it.each([
    [['--url', 'http://127.0.0.1:1/'], /--out FILE is required/],
    [['--out', 'x.jsonl'], /Give either --url URL or --task-id N/],
    [['--out', 'x.jsonl', '--url', 'not a url'], /--url not a url is not a URL/],
    [['--out', 'x.jsonl', '--task-id', '1', '--site', 'shopping'], /expected NAME=URL/],
    [
      ['--out', 'x.jsonl', '--url', 'http://127.0.0.1:1/', '--max-steps', '0'],
      /--max-steps must be at least 1/,
    ],
  ])('rejects %j with what to do', async (args, message) => {
    const io = capture();
    expect(await runCli(['data', 'record', ...args], io)).toBe(2);
    expect(io.err()).toMatch(message);
  });
});
