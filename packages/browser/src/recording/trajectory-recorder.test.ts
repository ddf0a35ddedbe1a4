import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJsonl, TrajectorySchema } from '@dreamgym/core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../chromium.js';
import { BrowserEnvironment } from '../environment/browser-environment.js';
import type { StaticServer } from '../static-server.js';
import { pageTask, serveTestPages } from '../test-pages.test-support.js';
import { TrajectoryRecorder } from './trajectory-recorder.js';

let browser: Browser;
let server: StaticServer;
let directory: string;

beforeAll(async () => {
  [browser, server, directory] = await Promise.all([
    launchChromium(),
    serveTestPages(),
    mkdtemp(join(tmpdir(), 'dreamgym-recorder-')),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await rm(directory, { recursive: true, force: true });
});

describe('TrajectoryRecorder', () => {
  it('writes every episode played through it as one Trajectory line', async () => {
    const output = join(directory, 'episodes.jsonl');
    const environment = await BrowserEnvironment.create({
      browser,
      settleMs: 0,
      hooks: {
        evaluate: async ({ stopped, answer }) => ({
          reward: stopped && answer === '3 tasks' ? 1 : 0,
          done: stopped,
          ...(stopped ? { success: answer === '3 tasks' } : {}),
        }),
      },
    });
    const recorded: string[] = [];
    const recorder = await TrajectoryRecorder.open(environment, {
      output,
      meta: { recordedBy: 'test' },
      onRecord: (trajectory) => recorded.push(trajectory.task.id),
    });
    const task = pageTask(server, 'dynamic.html', 'Add a task and report how many there are.');
    const first = await recorder.reset(task);
    await recorder.step('click [2]');
    const last = await recorder.step('stop [3 tasks]');
    expect(last.done).toBe(true);
    // An episode left before it ends is written too, marked unfinished.
    await recorder.reset(task);
    await recorder.step('scroll [down]');
    await recorder.close();
    await expect(environment.reset(task)).rejects.toThrow(/after close/);

    const trajectories = [];
    for await (const trajectory of readJsonl(output, TrajectorySchema))
      trajectories.push(trajectory);
    expect(trajectories).toHaveLength(2);
    expect(recorded).toEqual([task.id, task.id]);
    const [done, unfinished] = trajectories;
    expect(done!.success).toBe(true);
    expect(done!.source).toBe('offline');
    expect(done!.meta).toMatchObject({ recordedBy: 'test' });
    expect(done!.steps.map((step) => [step.action, step.reward, step.done])).toEqual([
      ['click [2]', 0, false],
      ['stop [3 tasks]', 1, true],
    ]);
    expect(done!.steps[0]!.observation.text).toBe(first.text);
    expect(done!.steps[0]!.observation.actions).toBeUndefined();
    expect(done!.finalObservation?.text).toContain("StaticText '3 tasks'");
    expect(unfinished!.success).toBe(false);
    expect(unfinished!.meta).toMatchObject({ unfinished: true });
  });
});
