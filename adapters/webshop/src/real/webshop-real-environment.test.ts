import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, EnvironmentError, type Task } from '@dreamgym/core';
import { describeEnvironmentConformance } from '@dreamgym/core/testing/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebshopAdapter } from '../adapter.js';
import { webshopGoalTask } from '../datasets/human-goals.js';
import {
  type AgentgymWebshopTestServer,
  startAgentgymWebshopTestServer,
  TEST_GOALS,
} from './agentgym-webshop-server.test-support.js';
import { connectWebshopReal } from './connect.js';
import { WebshopConnectionError, WebshopServerAnswerError } from './protocol-client.js';

let server: AgentgymWebshopTestServer;
beforeAll(async () => {
  server = await startAgentgymWebshopTestServer();
});
afterAll(async () => {
  await server.close();
});

const tasks: Task[] = TEST_GOALS.map((goal, index) => ({
  ...webshopGoalTask(goal.instructionText.replace(/, and price lower than .*$/, ''), index),
}));
const solution = [
  'search[red stereo sound earbud headphones]',
  'click[B08CZ8WS38]',
  'click[red]',
  'click[Buy Now]',
];

describeEnvironmentConformance('webshop real (AgentGym protocol server on 127.0.0.1)', {
  createEnvironment: () => connectWebshopReal({ url: server.url, retryDelayMs: 10 }),
  tasks,
  solution,
});

describe('WebshopRealEnvironment', () => {
  it('plays a goal to a perfect purchase over real HTTP', async () => {
    const environment = await createWebshopAdapter().connectReal({ url: server.url });
    const start = await environment.reset(tasks[0]!);
    expect(start.text).toBe('WebShop search page.\nSearch bar: search[<query>]');
    expect(start.actions![0]).toBe(solution[0]);
    const results = await environment.step(solution[0]!);
    expect(results.observation.text).toMatch(
      /^Search results for "red stereo sound earbud headphones", page 1 \(2 results\)\.\n\[Back to Search\] \[Next >\]\n\[B08CZ8WS38\] Otium Wireless Earbuds Stereo Sound Bluetooth Headphones \| \$4\.89/,
    );
    const item = await environment.step('click[b08cz8ws38]');
    expect(item.observation.text).toContain('Item B08CZ8WS38: Otium');
    expect(item.observation.text).toContain('color: [black] [red] [white]');
    const chosen = await environment.step('click[red]');
    expect(chosen.observation.text).toContain('(selected: red)');
    const wrong = await environment.step('click[purple]');
    expect(wrong.info).toMatchObject({ invalidAction: true });
    expect(wrong.observation.text).toMatch(
      /^Nothing happens\. "click\[purple\]" cannot be done here/,
    );
    const bought = await environment.step('click[Buy Now]');
    expect(bought).toMatchObject({
      reward: 1,
      done: true,
      truncated: false,
      info: { success: true, score: 1 },
    });
    expect(bought.observation.text).toBe('Purchase complete. Score: 1 (1 is a perfect match).');
    await environment.close();
  });

  it('rewards a partial purchase with 0, or with its score in score mode', async () => {
    for (const [mode, expected] of [
      ['success', 0],
      ['score', 2 / 3],
    ] as const) {
      const environment = await connectWebshopReal({ url: server.url, reward: mode });
      await environment.reset(tasks[0]!);
      await environment.step(solution[0]!);
      await environment.step('click[B08CZ8WS38]');
      const bought = await environment.step('click[Buy Now]');
      expect(bought.reward).toBeCloseTo(expected, 12);
      expect(bought.info).toMatchObject({ success: false });
      expect(bought.info.score).toBeCloseTo(2 / 3, 12);
      await environment.close();
    }
  });

  it('ends an episode at maxSteps with truncated', async () => {
    const environment = await connectWebshopReal({ url: server.url, maxSteps: 2 });
    await environment.reset(tasks[0]!);
    expect((await environment.step(solution[0]!)).done).toBe(false);
    expect(await environment.step('click[Next >]')).toMatchObject({ done: true, truncated: true });
    await environment.close();
  });

  it('says what to do without a server URL, and refuses generated tasks', async () => {
    const saved = process.env.DREAMGYM_WEBSHOP_URL;
    delete process.env.DREAMGYM_WEBSHOP_URL;
    try {
      const error = await connectWebshopReal().catch((thrown: unknown) => thrown);
      expect(ConfigError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/DREAMGYM_WEBSHOP_URL.*--eval-env synthetic/s);
    } finally {
      if (saved !== undefined) process.env.DREAMGYM_WEBSHOP_URL = saved;
    }
    const environment = await connectWebshopReal({ url: server.url });
    await expect(
      environment.reset({ ...tasks[0]!, origin: 'generated', parentId: 'x' }),
    ).rejects.toThrow(/generated curriculum task/);
    const mismatch = await environment
      .reset({ ...tasks[1]!, meta: { goalIndex: 0 } })
      .catch((thrown: unknown) => thrown);
    expect((mismatch as Error).message).toMatch(/goal order differs from human_goals\.json/);
    await environment.close();
  });

  it('reports server errors, retries what is safe, and survives a restarted server', async () => {
    const environment = await connectWebshopReal({ url: server.url, retries: 2, retryDelayMs: 5 });
    // A 503 on a read is retried.
    await environment.reset(tasks[0]!);
    server.inject('/available_actions', { kind: 'status', status: 503 }, 2);
    expect((await environment.step(solution[0]!)).observation.text).toMatch(/^Search results/);
    // A 500 on a step is reported with the URL and the body, and the episode goes on.
    server.inject('/step', { kind: 'status', status: 500, body: 'KeyError: 99' });
    const failed = (await environment
      .step('click[B08CZ8WS38]')
      .catch((thrown: unknown) => thrown)) as WebshopServerAnswerError;
    expect(failed).toBeInstanceOf(WebshopServerAnswerError);
    expect(failed.message).toMatch(
      /POST http:\/\/127\.0\.0\.1:\d+\/step answered 500: KeyError: 99/,
    );
    expect((await environment.step('click[B08CZ8WS38]')).observation.text).toContain(
      'Item B08CZ8WS38',
    );
    // The server forgets every environment (a restart): reset opens a new one.
    const before = environment.environmentIndex;
    server.inject('/reset', { kind: 'forget' });
    expect((await environment.reset(tasks[0]!)).text).toMatch(/^WebShop search page/);
    expect(environment.environmentIndex).not.toBe(before);
    await environment.close();
  });

  it('fails a step whose connection drops or times out, and the next reset works', async () => {
    const environment = await connectWebshopReal({
      url: server.url,
      requestTimeoutMs: 300,
      retries: 1,
      retryDelayMs: 5,
    });
    await environment.reset(tasks[0]!);
    server.inject('/step', { kind: 'drop' });
    const dropped = (await environment
      .step(solution[0]!)
      .catch((thrown: unknown) => thrown)) as EnvironmentError;
    expect(EnvironmentError.isInstance(dropped)).toBe(true);
    expect(dropped.message).toMatch(/lost the episode .* at step 1/);
    expect((dropped.cause as WebshopConnectionError).refused).toBe(false);
    await expect(environment.step(solution[0]!)).rejects.toThrow(/lost the episode/);
    await environment.reset(tasks[0]!);
    server.inject('/step', { kind: 'hang', ms: 1_000 });
    const hung = (await environment
      .step(solution[0]!)
      .catch((thrown: unknown) => thrown)) as EnvironmentError;
    expect((hung.cause as WebshopConnectionError).timedOut).toBe(true);
    expect(hung.cause).toBeInstanceOf(WebshopConnectionError);
    expect((hung.cause as Error).message).toMatch(/did not answer within 300 ms/);
    // A dropped read is retried.
    await environment.reset(tasks[0]!);
    server.inject('/available_actions', { kind: 'drop' });
    expect((await environment.step(solution[0]!)).done).toBe(false);
    await environment.close();
    const stepsSent = server.requests.filter((request) => request === 'POST /step').length;
    expect(stepsSent).toBeGreaterThan(10);
  });

  it('names the URL when nothing listens there', async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((done) => closed.close(() => done()));
    const error = (await connectWebshopReal({
      url: `http://127.0.0.1:${port}`,
      retries: 1,
      retryDelayMs: 1,
    }).catch((thrown: unknown) => thrown)) as WebshopConnectionError;
    expect(error).toBeInstanceOf(WebshopConnectionError);
    expect(error.refused).toBe(true);
    expect(error.message).toMatch(
      /GET http:\/\/127\.0\.0\.1:\d+\/ failed: ECONNREFUSED.*Is the WebShop server running/,
    );
  });
});
