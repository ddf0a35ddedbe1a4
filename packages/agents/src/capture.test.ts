/**
 * The capture and the environment tool, with the AI SDK's own `generateText` loop on the real
 * SmolLM2 behind `dreamgym model serve`'s server, in the corridor domain: every call recorded
 * with its tokens and episode, the episode's end stopping the agent's loop, traffic outside
 * episodes kept apart, and the environment's rules (invalid actions, step limit, rewards).
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
  optimalCorridorAction,
} from '@dreamgym/core/testing';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import { generateText, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiSdkTools } from './ai-sdk.js';
import { EPISODE_OVER_MESSAGE, type ModelCall, ModelCallCapture } from './capture.js';
import { EnvironmentEpisode } from './environment-episode.js';

const adapter = createCorridorAdapter();
const task = corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 });
let model: LlamaChatModel;
let server: LlamaServer;
const served: string[] = [];

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  server = await startLlamaServer({ model, log: (line) => served.push(line) });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await model?.dispose();
});

const begin = (maxSteps: number, onEnd?: () => void) =>
  EnvironmentEpisode.begin({
    environment: new CorridorEnvironment(),
    task,
    adapter,
    maxSteps,
    ...(onEnd ? { onEnd } : {}),
  });

describe('EnvironmentEpisode', () => {
  it('steps the environment through act, answers invalid actions, and ends once', async () => {
    let ends = 0;
    const episode = await begin(10, () => {
      ends += 1;
    });
    expect(episode.prompt).toContain(task.instruction);
    expect(episode.tool.description).toContain('corridor');
    expect(await episode.act('dance')).toMatch(/^Invalid action: /);
    expect(episode.steps[0]).toMatchObject({ action: 'dance', invalid: true, reward: 0 });
    let observation = episode.start;
    while (!episode.done) {
      const text = await episode.act(optimalCorridorAction(task, observation));
      observation = { text };
    }
    expect(episode).toMatchObject({ success: true, done: true });
    expect(episode.reward).toBeGreaterThan(0);
    expect(ends).toBe(1);
    expect(await episode.act('go left')).toMatch(/episode is over/);
    expect(episode.steps.at(-1)!.action).not.toBe('go left');
  });

  it('is cut at maxSteps, and takes a reward reported from outside', async () => {
    const episode = await begin(2);
    await episode.act('go left');
    expect(episode.done).toBe(false);
    await episode.act('go left');
    expect(episode).toMatchObject({ done: true, success: false });
    episode.reportReward(0.5);
    expect(episode).toMatchObject({ reward: 0.5, success: true });
  });
});

describe('ModelCallCapture with the AI SDK on the real model', () => {
  it("records each call of the agent's loop with its tokens, and ends the loop with the episode", async () => {
    const recorded: ModelCall[] = [];
    const capture = new ModelCallCapture({ onCall: (call) => recorded.push(call) });
    const provider = createOpenAICompatible({
      name: 'local',
      baseURL: server.baseURL,
      fetch: capture.fetch,
    });
    const { result, calls } = await capture.episode('corridor#1', async (end) => {
      const episode = await begin(2, end);
      const output = await generateText({
        model: provider(server.modelName),
        system: 'Walk the corridor with the act tool.',
        prompt: episode.prompt,
        tools: aiSdkTools(episode),
        toolChoice: 'required',
        stopWhen: stepCountIs(10),
        maxOutputTokens: 48,
        seed: 3,
      }).catch((error: Error) => error);
      return { episode, output };
    });
    expect(calls).toEqual(recorded);
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.episodeId).toBe('corridor#1');
      expect(call.model).toBe(server.modelName);
      expect((call.tools[0] as { function: { name: string } }).function.name).toBe('act');
      expect(call.promptTokenIds!.length).toBeGreaterThan(50);
      expect(call.completionTokenIds!.length).toBeGreaterThan(0);
      expect(call.logprobs).toHaveLength(call.completionTokenIds!.length);
      expect(call.overheadMilliseconds).toBeGreaterThanOrEqual(0);
    }
    // Each later call carries the tool results of the earlier ones.
    const steps = result.episode.steps;
    for (let index = 1; index < calls.length && index <= steps.length; index += 1) {
      expect(JSON.stringify(calls[index]!.messages)).toContain(
        JSON.stringify(steps[index - 1]!.observation).slice(1, 30),
      );
    }
    // Two actions end the episode; the agent's third call got the final answer here, without
    // a tool call, which the AI SDK refuses when one is required: that is how its loop stops.
    expect(result.episode.done).toBe(true);
    expect(steps).toHaveLength(2);
    expect(calls).toHaveLength(2);
    expect(result.output).toBeInstanceOf(Error);
    expect((result.output as Error).message).toMatch(/did not contain a tool call/);
  }, 120_000);

  it('keeps calls outside episodes apart, overrides the model, and passes other requests through', async () => {
    const capture = new ModelCallCapture({ requestTokens: false });
    const models = await capture.fetch(`${server.baseURL}/models`);
    expect(models.status).toBe(200);
    capture.model = 'not-loaded';
    const refused = await capture.fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'local', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(refused.status).toBe(404);
    expect(capture.untracked).toEqual([]);
    capture.model = undefined;
    const answered = await capture.fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'local',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 3,
      }),
    });
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { object: string }).object).toBe('chat.completion');
    expect(capture.untracked).toHaveLength(1);
    expect(capture.untracked[0]).toMatchObject({ episodeId: undefined, model: 'local' });
    expect(capture.untracked[0]!.promptTokenIds).toBeUndefined();
    // After the episode's end, no request reaches the server.
    const before = served.length;
    const { calls } = await capture.episode('over', async (end) => {
      end();
      const response = await capture.fetch(`${server.baseURL}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'local', messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(await response.json()).toMatchObject({
        choices: [{ message: { content: EPISODE_OVER_MESSAGE }, finish_reason: 'stop' }],
      });
    });
    expect(calls).toEqual([]);
    expect(served.length).toBe(before);
  }, 60_000);
});
