/**
 * The MiniWoB++ adapter against core's conformance suite, on data recorded from the real
 * pages (`__fixtures__/`: browser observations before the state mapper, and a dataset built
 * by `buildMiniwobDataset` on four tasks). The real environment has its own test file.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseObservationLines } from '@dreamgym/browser';
import { SeededRandom, type Task } from '@dreamgym/core';
import { describeAdapterConformance } from '@dreamgym/core/testing/vitest';
import { describe, expect, it } from 'vitest';
import { createMiniwobAdapter } from './adapter.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '__fixtures__');
const datasetDirectory = join(fixtures, 'dataset');
const raw = JSON.parse(readFileSync(join(fixtures, 'raw-observations.json'), 'utf8'))
  .observations as Array<{ text: string; meta: Record<string, unknown> }>;
const adapter = createMiniwobAdapter({ dataDir: datasetDirectory });

const tasks: Task[] = [];
for await (const task of adapter.datasets.tasks.load(datasetDirectory, {
  splits: ['train', 'eval'],
})) {
  tasks.push(task);
}
const task = tasks[0]!;
const taskLine = JSON.stringify(task);
const trajectoryLine = readFileSync(
  join(datasetDirectory, 'trajectories', 'explore-0.jsonl'),
  'utf8',
).split('\n')[0]!;
const trajectory = JSON.parse(trajectoryLine);

describeAdapterConformance('miniwob', {
  adapter,
  validActions: [
    "click [3] # button 'previous'",
    'click [1]',
    'type [1] [Kasey] [0] # textbox',
    'type [1] [a # b] [1]',
    'hover [2]',
    'press [Enter]',
    'scroll [down]',
    'stop []',
  ],
  invalidActions: ['click 3', 'stop [] # done', "click [x] # button 'Ok'", 'fly', ''],
  rawObservations: [...raw, raw[0]!.text],
  tasks,
  malformedDatasets: [
    {
      description: 'a task line that is not JSON',
      loader: 'tasks',
      files: { 'tasks.jsonl': `${taskLine}\n{"id": \n` },
      expected: { file: 'tasks.jsonl', line: 2 },
    },
    {
      description: 'a task without its seed',
      loader: 'tasks',
      files: {
        'tasks.jsonl': `${taskLine}\n${JSON.stringify({ ...task, meta: { miniwobTask: 'click-test', split: 'train' } })}\n`,
      },
      expected: { file: 'tasks.jsonl', line: 2, field: 'meta.seed' },
    },
    {
      description: 'a task of another domain',
      loader: 'tasks',
      files: { 'tasks.jsonl': `${JSON.stringify({ ...task, domain: 'webshop' })}\n` },
      expected: { file: 'tasks.jsonl', line: 1, field: 'domain' },
    },
    {
      description: 'a trajectory line that is not JSON',
      loader: 'trajectories',
      files: { 'trajectories/explore.jsonl': `${trajectoryLine}\n{"task": \n` },
      expected: { file: 'trajectories/explore.jsonl', line: 2 },
    },
    {
      description: 'a trajectory step with an action outside the grammar',
      loader: 'trajectories',
      files: {
        'trajectories/explore.jsonl': `${JSON.stringify({ ...trajectory, steps: [{ ...trajectory.steps[0], action: 'click 3' }] })}\n`,
      },
      expected: { file: 'trajectories/explore.jsonl', line: 1, field: 'steps.0.action' },
    },
  ],
  datasetDirectory,
});

const byId = (id: string) => tasks.find((candidate) => candidate.id === id)!;

describe('createMiniwobAdapter', () => {
  it('maps browser observations to stable states with noted candidate actions', () => {
    const clickButton = raw.find((observation) =>
      String(observation.meta.url).endsWith('/click-button.html'),
    )!;
    expect(clickButton.text).toMatch(/URL: http:\/\/127\.0\.0\.1:\d+\/miniwob\/click-button\.html/);
    expect(clickButton.text).toContain("StaticText 'Time left:");
    const observation = adapter.toObservation(clickButton);
    expect(observation.text).toContain('URL: /miniwob/click-button.html');
    expect(observation.text).not.toMatch(/Time left|Last reward|Episodes done|127\.0\.0\.1/);
    expect(observation.meta).toMatchObject({
      title: 'Click Button Task',
      path: '/miniwob/click-button.html',
      instruction: expect.stringMatching(/^Click on the ".+" button\.$/),
    });
    const buttons = parseObservationLines(observation.text).filter(
      (line) => line.role === 'button',
    );
    expect(buttons.length).toBeGreaterThan(1);
    for (const button of buttons) {
      expect(observation.actions).toContain(`click [${button.id}] # button '${button.name}'`);
    }
    // Nothing that navigates away or scrolls a page that fits the viewport.
    expect(observation.actions!.some((action) => /^(scroll|go_back|stop)/.test(action))).toBe(
      false,
    );
  });

  it('proposes clicks on text fields and types the quoted text, in synthetic states too', () => {
    const enterText = byId('enter-text:0');
    const quoted = /"(.+)"/.exec(enterText.instruction)![1]!;
    // A synthetic state has only text: the instruction comes from the page's first line.
    const candidates = adapter.candidateActions({ text: enterText.initialObservation!.text }, []);
    expect(candidates).toEqual(
      expect.arrayContaining([
        `type [1] [${quoted}] [1] # textbox`,
        'click [1] # textbox',
        "click [2] # button 'Submit'",
      ]),
    );
    const focus = adapter.candidateActions(byId('focus-text-2:0').initialObservation!, []);
    expect(focus).toEqual(['click [1] # textbox', 'click [2] # textbox', 'click [3] # textbox']);
  });

  it('mutates an utterance on the same page: another target it has, or a quoted training text', () => {
    const random = new SeededRandom(2);
    const clickButton = byId('click-button:0');
    const child = adapter.mutateTask(clickButton, random)!;
    expect(child).toMatchObject({
      origin: 'generated',
      parentId: 'click-button:0',
      domain: 'miniwob',
      meta: { miniwobTask: 'click-button', seed: 0, split: 'train' },
    });
    const label = /"(.+)"/.exec(child.instruction)![1]!;
    expect(label).not.toBe(/"(.+)"/.exec(clickButton.instruction)![1]);
    expect(child.initialObservation!.text).toContain(`button '${label}'`);
    expect(child.initialObservation!.text).toContain(`StaticText '${child.instruction}'`);

    const ordinal = adapter.mutateTask(byId('focus-text-2:1'), random)!;
    expect(ordinal.instruction).toMatch(/^Focus into the (1st|2nd|3rd) input textbox\.$/);
    expect(ordinal.instruction).not.toBe(byId('focus-text-2:1').instruction);
    const button = adapter.mutateTask(byId('click-test-2:0'), random)!;
    expect(new Set([byId('click-test-2:0').instruction, button.instruction])).toEqual(
      new Set(['Click button ONE.', 'Click button TWO.']),
    );

    // Typed texts come from the training instances only, never from the evaluation seeds.
    const trainTexts = tasks
      .filter((entry) => entry.meta.miniwobTask === 'enter-text' && entry.meta.split === 'train')
      .map((entry) => /"(.+)"/.exec(entry.instruction)![1]);
    const typed = adapter.mutateTask(byId('enter-text:100000'), random)!;
    expect(trainTexts).toContain(/"(.+)"/.exec(typed.instruction)![1]);
    expect(createMiniwobAdapter().mutateTask(byId('enter-text:0'), random)).toBeUndefined();
    expect(
      adapter.mutateTask({ ...byId('click-test-2:0'), instruction: 'Click the button.' }, random),
    ).toBeUndefined();
  });

  it('reads training seeds unless evaluation seeds are named, and names its defaults', async () => {
    const train: Task[] = [];
    for await (const entry of adapter.datasets.tasks.load(datasetDirectory)) train.push(entry);
    expect(train.length).toBe(12);
    expect(train.every((entry) => entry.meta.split === 'train')).toBe(true);
    expect(
      tasks.filter((entry) => entry.meta.split === 'eval').map((entry) => entry.meta.seed),
    ).toEqual([100000, 100001, 100000, 100001, 100000, 100001, 100000, 100001]);
    expect(adapter.defaults).toEqual({ evaluationSplit: 'eval', evaluationEnvironment: 'real' });
  });

  it('rejects invalid options with a ConfigError naming the field', () => {
    expect(() => createMiniwobAdapter({ real: { maxSteps: 0 } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'real.maxSteps' }),
    );
    expect(() => createMiniwobAdapter({ real: { reward: 'fast' as 'raw' } })).toThrow(
      expect.objectContaining({ field: 'real.reward' }),
    );
  });
});
