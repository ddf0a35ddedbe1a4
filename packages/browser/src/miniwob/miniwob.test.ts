/**
 * MiniWoB++ pages nobody here wrote (the PyPI package `miniwob`, served on 127.0.0.1): each
 * task is mapped by the AX-tree mapper, solved with the web grammar by a small scripted
 * solver that reads only the observation text, and scored by the task's own page script.
 */
import type { Observation, Task } from '@dreamgym/core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ObservationLine, parseObservationLines } from '../actions/web-candidate-actions.js';
import { launchChromium } from '../chromium.js';
import { BrowserEnvironment } from '../environment/browser-environment.js';
import {
  locateMiniwobHtml,
  type MiniwobServer,
  miniwobTaskHooks,
  readMiniwobReward,
  startMiniwobEpisode,
  startMiniwobServer,
} from './miniwob.js';

let browser: Browser;
let server: MiniwobServer;
let environment: BrowserEnvironment;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), startMiniwobServer()]);
  environment = await BrowserEnvironment.create({
    browser,
    settleMs: 0,
    maxSteps: 10,
    // Generous: the machine is shared, and the reward checked here is the raw one.
    hooks: miniwobTaskHooks({ server, timeLimitMs: 600_000 }),
  });
});

afterAll(async () => {
  await environment?.close();
  await browser?.close();
  await server?.close();
});

function task(name: string, seed: number): Task {
  return { id: `${name}:${seed}`, domain: 'miniwob', instruction: name, origin: 'seed', meta: {} };
}

/** The first line matching `predicate`, with an id. */
function find(observation: Observation, predicate: (line: ObservationLine) => boolean): number {
  const line = parseObservationLines(observation.text).find(
    (candidate) => candidate.id !== undefined && predicate(candidate),
  );
  if (!line) throw new Error(`no matching element in:\n${observation.text}`);
  return line.id!;
}

const named = (role: string | string[], name: string) => (line: ObservationLine) =>
  (Array.isArray(role) ? role : [role]).includes(line.role) && line.name === name;

const quoted = (instruction: string, index = 0) =>
  [...instruction.matchAll(/"([^"]*)"/g)][index]![1]!;

/** A solver: the next action for the current observation, given the actions taken so far. */
type Solver = (instruction: string, observation: Observation, taken: number) => string;

const SOLVERS: Record<string, Solver> = {
  'click-test': (_, observation) => `click [${find(observation, named('button', 'Click Me!'))}]`,
  'click-button': (instruction, observation) =>
    `click [${find(observation, named('button', quoted(instruction)))}]`,
  'click-button-sequence': (_, observation, taken) =>
    `click [${find(observation, named('button', taken === 0 ? 'ONE' : 'TWO'))}]`,
  'click-link': (instruction, observation) =>
    `click [${find(observation, (line) => line.name === quoted(instruction) && line.role !== 'StaticText')}]`,
  'click-option': (instruction, observation, taken) =>
    taken === 0
      ? `click [${find(observation, named('radio', /Select (.+) and click Submit/.exec(instruction)![1]!))}]`
      : `click [${find(observation, named('button', 'Submit'))}]`,
  'click-checkboxes': (instruction, observation, taken) => {
    const list = /Select (.*) and click Submit/.exec(instruction)![1]!;
    const names =
      list === 'nothing'
        ? []
        : list
            .split(/, | and |,/)
            .map((name) => name.trim())
            .filter(Boolean);
    return taken < names.length
      ? `click [${find(observation, named('checkbox', names[taken]!))}]`
      : `click [${find(observation, named('button', 'Submit'))}]`;
  },
  'choose-list': (instruction, observation, taken) =>
    taken === 0
      ? `click [${find(observation, named('option', /Select (.+) from the list/.exec(instruction)![1]!))}]`
      : `click [${find(observation, named('button', 'Submit'))}]`,
  'enter-text': (instruction, observation, taken) =>
    taken === 0
      ? `type [${find(observation, (line) => line.role === 'textbox')}] [${quoted(instruction)}] [0]`
      : `click [${find(observation, named('button', 'Submit'))}]`,
  'enter-password': (instruction, observation, taken) => {
    const fields = parseObservationLines(observation.text).filter(
      (line) => line.role === 'textbox',
    );
    return taken < 2
      ? `type [${fields[taken]!.id}] [${quoted(instruction)}] [0]`
      : `click [${find(observation, named('button', 'Submit'))}]`;
  },
  'login-user': (instruction, observation, taken) => {
    const fields = parseObservationLines(observation.text).filter(
      (line) => line.role === 'textbox',
    );
    return taken < 2
      ? `type [${fields[taken]!.id}] [${quoted(instruction, taken)}] [0]`
      : `click [${find(observation, named('button', 'Login'))}]`;
  },
  'focus-text-2': (instruction, observation) => {
    const ordinal = Number(/(\d)(st|nd|rd|th)/.exec(instruction)![1]);
    const fields = parseObservationLines(observation.text).filter(
      (line) => line.role === 'textbox',
    );
    return `click [${fields[ordinal - 1]!.id}]`;
  },
  'click-tab': (instruction, observation) =>
    `click [${find(observation, named(['tab', 'link'], /Click on (Tab #\d)/.exec(instruction)![1]!))}]`,
  'click-dialog': (_, observation) => `click [${find(observation, named('button', 'Close'))}]`,
  'click-collapsible': (_, observation, taken) =>
    taken === 0
      ? `click [${find(observation, (line) => line.role === 'tab' && line.name.startsWith('Section'))}]`
      : `click [${find(observation, named('button', 'Submit'))}]`,
};

describe('MiniWoB++ tasks from the miniwob package, mapped and played with the web grammar', () => {
  it.each(Object.keys(SOLVERS))('%s: solved, with the page reporting reward 1', async (name) => {
    for (const seed of [11]) {
      let observation = await environment.reset(task(name, seed));
      const instruction = String(observation.meta?.instruction);
      expect(observation.text).toContain(instruction.split('"')[0]!.trim());
      let taken = 0;
      for (;;) {
        const action = SOLVERS[name]!(instruction, observation, taken);
        const result = await environment.step(action);
        expect(result.info.actionError, `${name}:${seed} ${action}`).toBeUndefined();
        taken += 1;
        observation = result.observation;
        if (result.done) {
          expect(result.reward, `${name}:${seed} "${instruction}"`).toBe(1);
          expect(result.info).toMatchObject({
            success: true,
            miniwob: { done: true, rawReward: 1 },
          });
          expect(result.truncated).toBe(false);
          break;
        }
        expect(result.reward).toBe(0);
        expect(taken, `${name}:${seed} did not end`).toBeLessThan(6);
      }
    }
  });

  it('reports the page reward of a failed episode: -1 and no success', async () => {
    const observation = await environment.reset(task('click-test-2', 3));
    const instruction = String(observation.meta?.instruction);
    const wrong = /button ONE/.test(instruction) ? 'TWO' : 'ONE';
    const result = await environment.step(`click [${find(observation, named('button', wrong))}]`);
    expect(result).toMatchObject({
      reward: -1,
      done: true,
      info: { success: false, miniwob: { rawReward: -1 } },
    });
  });

  it('gives the same instance for the same seed, and a time-scaled reward on request', async () => {
    const first = await environment.reset(task('click-checkboxes', 5));
    const again = await environment.reset(task('click-checkboxes', 5));
    expect(again.meta?.instruction).toBe(first.meta?.instruction);
    const page = await environment.currentPage();
    await page.goto(server.taskUrl('click-test'));
    const { instruction } = await startMiniwobEpisode(page, { seed: 1, timeLimitMs: 60_000 });
    expect(instruction).toBe('Click the button.');
    expect(await readMiniwobReward(page)).toMatchObject({ done: false, reward: 0, rawReward: 0 });
    await page.getByRole('button', { name: 'Click Me!' }).click();
    const state = await readMiniwobReward(page);
    expect(state.done).toBe(true);
    expect(state.rawReward).toBe(1);
    expect(state.reward).toBeGreaterThan(0.5);
    expect(state.reward).toBeLessThan(1);
  });

  it('lists the tasks it serves, and says how to install the package when it is missing', async () => {
    const tasks = await server.tasks();
    expect(tasks.length).toBeGreaterThan(100);
    expect(tasks).toContain('click-test');
    expect(() => server.taskUrl('../etc/passwd')).toThrow(/not a MiniWoB\+\+ task name/);
    // A step the user can run from the installed package, never a repository script.
    const missing = locateMiniwobHtml('/nonexistent/python');
    await expect(missing).rejects.toThrow(/npx @dreamgym\/cli doctor --fix --only miniwob/);
    await expect(missing).rejects.toThrow(/pip install --no-deps miniwob==1\.1\.0/);
    await expect(missing).rejects.not.toThrow(/scripts\/setup\.sh/);
  });
});
