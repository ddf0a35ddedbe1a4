import { readFileSync } from 'node:fs';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SeededRandom, type Task } from '@dreamgym/core';
import { describeAdapterConformance } from '@dreamgym/core/testing/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { createWebarenaLiteAdapter } from './adapter.js';
import { loadWebarenaTasks } from './datasets/task-configs.js';
import { webarenaDataDirectory } from './test-data-directory.js';

const dataDir = webarenaDataDirectory();
const recordedFile = join(
  dirname(fileURLToPath(import.meta.url)),
  '__fixtures__',
  'trajectories',
  'task-149.jsonl',
);
const recorded = JSON.parse(readFileSync(recordedFile, 'utf8').trim());
// Real mapped pages: the states of the recorded episode.
const rawObservations = [
  ...recorded.steps.map((step: { observation: { text: string } }) => step.observation.text),
  {
    text: recorded.finalObservation.text,
    url: 'http://127.0.0.1:7780/reports/report_sales/sales/',
    title: 'Orders Report',
  },
];

// A dataset directory for the real-data check: the shared configs (linked, not copied) and
// the recorded trajectory.
const datasetDirectory = await mkdtemp(join(tmpdir(), 'dreamgym-webarena-dataset-'));
await symlink(
  join(dataDir, 'test_webarena_lite.raw.json'),
  join(datasetDirectory, 'test_webarena_lite.raw.json'),
);
await writeFile(join(datasetDirectory, 'recorded.jsonl'), readFileSync(recordedFile));
afterAll(() => rm(datasetDirectory, { recursive: true, force: true }));

const adapter = createWebarenaLiteAdapter({ dataDir });
const tasks: Task[] = [];
for await (const task of loadWebarenaTasks(dataDir)) tasks.push(task);

const goodConfig = JSON.stringify({
  sites: ['reddit'],
  task_id: 3,
  start_url: '__REDDIT__',
  intent: 'Open the forums list',
  eval: { eval_types: ['url_match'], reference_url: '__REDDIT__/forums', url_note: 'GOLD in PRED' },
});

describeAdapterConformance('webarena-lite', {
  adapter,
  validActions: [
    'click [12]',
    'hover [3]',
    'type [5] [red running shoes] [1]',
    'type [5] [no enter] [0]',
    'press [Control+a]',
    'scroll [down]',
    'scroll [up]',
    'new_tab',
    'tab_focus [1]',
    'close_tab',
    'goto [http://127.0.0.1:7770/checkout/cart/]',
    'go_back',
    'go_forward',
    'stop [Quest Lumaflex™ Band]',
    'stop []',
  ],
  invalidActions: [
    'click 12',
    'click the search button',
    'type [5]',
    'scroll [left]',
    'answer [42]',
    '',
  ],
  rawObservations,
  tasks: tasks.slice(0, 40),
  malformedDatasets: [
    {
      description: 'a config file that is not JSON',
      loader: 'tasks',
      files: { 'test.raw.json': `[\n${goodConfig},\n  {"task_id": \n]` },
      expected: { file: 'test.raw.json', line: 4 },
    },
    {
      description: 'a config without an intent',
      loader: 'tasks',
      files: {
        'test.raw.json': `[\n${goodConfig},\n${JSON.stringify({ ...JSON.parse(goodConfig), task_id: 4, intent: undefined }, null, 2)}\n]`,
      },
      expected: { file: 'test.raw.json', line: 3, field: 'intent' },
    },
    {
      description: 'a config with an unknown site placeholder',
      loader: 'tasks',
      files: {
        'config_files/3.json': JSON.stringify(
          { ...JSON.parse(goodConfig), start_url: '__FORUM__' },
          null,
          2,
        ),
      },
      expected: { file: 'config_files/3.json', line: 6, field: 'start_url' },
    },
    {
      description: 'a trajectory line that is not JSON',
      loader: 'trajectories',
      files: { 'episodes.jsonl': `${JSON.stringify(recorded)}\n{"task": \n` },
      expected: { file: 'episodes.jsonl', line: 2 },
    },
    {
      description: 'a trajectory step without a reward',
      loader: 'trajectories',
      files: {
        'trajectories/episodes.jsonl': `${JSON.stringify({ ...recorded, steps: [{ ...recorded.steps[0], reward: undefined }] })}\n`,
      },
      expected: { file: 'trajectories/episodes.jsonl', line: 1, field: 'steps.0.reward' },
    },
  ],
  datasetDirectory,
});

describe('createWebarenaLiteAdapter', () => {
  it('mutates a task within its intent template, keeping its start but not its evaluator', () => {
    const random = new SeededRandom(3);
    const parent = tasks.find((task) => task.meta.intentTemplateId === 279)!;
    const child = adapter.mutateTask(parent, random)!;
    expect(child).toMatchObject({
      origin: 'generated',
      parentId: parent.id,
      domain: 'webarena-lite',
      meta: { startUrl: parent.meta.startUrl, intentTemplateId: 279 },
    });
    expect(child.meta.config).toBeUndefined();
    expect(child.instruction).not.toBe(parent.instruction);
    expect(child.instruction).toMatch(/^What (is|are) the top-\d+ best-selling/);
    // A task without an intent template gives none.
    const { intentTemplate: _template, ...untemplated } = parent.meta;
    expect(adapter.mutateTask({ ...parent, id: 'x', meta: untemplated }, random)).toBeUndefined();
    // WebArena-Lite has one task per template: values come from the same slot on the same site.
    const mutated = tasks
      .map((task) => adapter.mutateTask(task, random))
      .filter((task) => task !== undefined);
    expect(mutated.length).toBeGreaterThan(100);
    expect(new Set(mutated.map((task) => task.id)).size).toBe(mutated.length);
    expect(() => createWebarenaLiteAdapter().mutateTask(parent, random)).toThrow(
      /needs the intent templates.*dataDir/,
    );
  });

  it('maps raw states to observations with candidate actions and the URL', () => {
    const observation = adapter.toObservation(rawObservations[0]);
    expect(observation.meta?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(observation.actions).toContain('click [3]');
    expect(adapter.toObservation("[4] link 'Next'").actions).toEqual([
      'click [4]',
      'scroll [down]',
      'scroll [up]',
      'stop []',
    ]);
  });

  it('rejects invalid options with a ConfigError naming the field', () => {
    expect(() => createWebarenaLiteAdapter({ sites: { gitlab: 'gitlab.local' } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'sites.gitlab' }),
    );
    expect(() => createWebarenaLiteAdapter({ real: { evaluationTimeoutMs: -1 } })).toThrow(
      expect.objectContaining({ field: 'real.evaluationTimeoutMs' }),
    );
  });
});
