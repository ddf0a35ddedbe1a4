/**
 * The real MiniWoB++ environment: the `miniwob` package's pages served on 127.0.0.1 and played
 * in Debian Chromium (one browser and one page server for the whole file). The environment
 * contract, episodes scored by the pages themselves, and the dataset builder reproducing the
 * recorded fixture from the real pages.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, parseObservationLines, startMiniwobServer } from '@dreamgym/browser';
import type { Task } from '@dreamgym/core';
import { describeEnvironmentConformance } from '@dreamgym/core/testing/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { createMiniwobAdapter } from '../adapter.js';
import { buildMiniwobDataset, recordMiniwobInstances } from '../datasets/build-dataset.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', '__fixtures__', 'dataset');
const recorded = readFileSync(join(fixtures, 'tasks.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Task);
const byId = (id: string) => recorded.find((task) => task.id === id)!;

const [browser, server] = await Promise.all([launchChromium(), startMiniwobServer()]);
afterAll(async () => {
  await browser.close();
  await server.close();
});
const adapter = createMiniwobAdapter({ real: { maxSteps: 4 } });
const connect = () => adapter.connectReal({ browser, server });

/** The candidate of `observation` whose note names `name` with `role`. */
function noted(actions: readonly string[], role: string, name: string): string {
  const action = actions.find((candidate) => candidate.endsWith(` # ${role} '${name}'`));
  if (!action) throw new Error(`no ${role} '${name}' among ${actions.join(', ')}`);
  return action;
}

const clickTest2 = byId('click-test-2:0');
const target = /button (\w+)\./.exec(clickTest2.instruction)![1]!;
const targetId = parseObservationLines(clickTest2.initialObservation!.text).find(
  (line) => line.role === 'button' && line.name === target,
)!.id;

describeEnvironmentConformance(
  'miniwob real pages',
  {
    createEnvironment: connect,
    tasks: [clickTest2, byId('focus-text-2:1')],
    solution: [`click [${targetId}] # button '${target}'`],
    invalidAction: 'fly to the moon',
  },
  { timeout: 120_000 },
);

describe('MiniwobEnvironment', () => {
  it('starts each instance in its recorded first state and scores it with the page reward', async () => {
    const environment = await connect();
    try {
      // click-button: the right label ends the episode with reward 1.
      const right = byId('click-button:1');
      let observation = await environment.reset(right);
      expect(observation.text).toBe(right.initialObservation!.text);
      expect(observation.meta?.instruction).toBe(right.instruction);
      const label = /"(.+)"/.exec(right.instruction)![1]!;
      const won = await environment.step(noted(observation.actions!, 'button', label));
      expect(won).toMatchObject({
        reward: 1,
        done: true,
        truncated: false,
        info: { success: true, miniwob: { rawReward: 1 } },
      });

      // enter-text: typing the quoted text, then Submit; a wrong text scores -1.
      const enter = byId('enter-text:2');
      const quoted = /"(.+)"/.exec(enter.instruction)![1]!;
      observation = await environment.reset(enter);
      const typed = await environment.step(
        observation.actions!.find(
          (action) => action.startsWith('type') && action.includes(quoted),
        )!,
      );
      expect(typed).toMatchObject({ reward: 0, done: false });
      expect(typed.observation.text).toContain(`value: '${quoted}'`);
      const submitted = await environment.step(
        noted(typed.observation.actions!, 'button', 'Submit'),
      );
      expect(submitted).toMatchObject({ reward: 1, done: true, info: { success: true } });
      observation = await environment.reset(enter);
      await environment.step('type [1] [somebody else] [0] # textbox');
      const wrong = await environment.step("click [2] # button 'Submit'");
      expect(wrong).toMatchObject({ reward: -1, done: true, info: { success: false } });

      // The step budget cuts an episode that does not end: truncated, reward 0.
      observation = await environment.reset(byId('focus-text-2:0'));
      const field = observation.actions![0]!;
      let result = await environment.step('scroll [down]');
      while (!result.done) result = await environment.step('scroll [down]');
      expect(result).toMatchObject({ done: true, truncated: true, reward: 0 });
      expect(field).toMatch(/^click \[\d+\] # textbox$/);
    } finally {
      await environment.close();
    }
  }, 180_000);

  it('reproduces the recorded instances from the real pages, and builds a dataset that loads', async () => {
    const again = await recordMiniwobInstances({
      browser,
      server,
      name: 'focus-text-2',
      seeds: [0, 100000],
    });
    expect(again).toEqual([byId('focus-text-2:0'), byId('focus-text-2:100000')]);

    const dir = await mkdtemp(join(tmpdir(), 'dreamgym-miniwob-dataset-'));
    try {
      const progress: string[] = [];
      const summary = await buildMiniwobDataset({
        dir,
        tasks: ['click-test'],
        trainSeeds: 2,
        evalSeeds: 1,
        concurrency: 1,
        browser,
        server,
        onProgress: ({ phase, done, total }) => progress.push(`${phase} ${done}/${total}`),
      });
      expect(summary).toMatchObject({ tasks: { train: 2, eval: 1 }, trajectories: 2 });
      expect(progress).toEqual([
        'tasks 1/3',
        'tasks 2/3',
        'tasks 3/3',
        'exploration 1/2',
        'exploration 2/2',
      ]);
      const local = createMiniwobAdapter({ dataDir: dir });
      const trajectories = [];
      for await (const trajectory of local.datasets.trajectories.load(dir))
        trajectories.push(trajectory);
      expect(trajectories.map((trajectory) => trajectory.task.id).sort()).toEqual([
        'click-test:0',
        'click-test:1',
      ]);
      // click-test has one button: any click on it wins, and the page says so.
      for (const trajectory of trajectories) {
        const last = trajectory.steps.at(-1)!;
        expect(last.done).toBe(true);
        expect(trajectory.success).toBe(last.reward === 1);
      }
      const eval_ = [];
      for await (const task of local.datasets.tasks.load(dir, { splits: ['eval'] }))
        eval_.push(task);
      expect(eval_).toMatchObject([
        { id: 'click-test:100000', instruction: 'Click the button.', meta: { split: 'eval' } },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
