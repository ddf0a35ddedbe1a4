/**
 * `captureMiddleware` under `ai` 7 and `@ai-sdk/openai-compatible` 3 (Node >= 22): the checks of
 * `packages/agents/src/ai-sdk-middleware.test.ts` (which runs them with `ai` 6), with the real
 * SmolLM2 behind `dreamgym model serve`'s server. `ai` 7 calls the middleware with its `v4`
 * values; the records still equal the fetch capture's, the episode's end still stops the loop.
 * The provider's name has a dash: the capture's options go under its camelCase key, which
 * version 3 asks for (it warns that the dashed key is deprecated).
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { CorridorEnvironment, corridorTask, createCorridorAdapter } from '@dreamgym/core/testing';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import {
  generateText,
  simulateStreamingMiddleware,
  stepCountIs,
  streamText,
  wrapLanguageModel,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentEpisode, EPISODE_OVER_MESSAGE, ModelCallCapture } from '@dreamgym/agents';
import { aiSdkTools, captureMiddleware } from '@dreamgym/agents/ai-sdk';

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

/** The provider's model wrapped with the middleware; its fetch recorded by a second capture. */
function wrapped(capture: ModelCallCapture, wire: ModelCallCapture) {
  const provider = createOpenAICompatible({
    name: 'local-server',
    baseURL: server.baseURL,
    fetch: wire.fetch,
  });
  return wrapLanguageModel({
    model: provider(server.modelName),
    middleware: captureMiddleware(capture),
  });
}

describe('captureMiddleware with ai 7', () => {
  it('records what the fetch capture records, with tokens, and ends the loop with the episode', async () => {
    const capture = new ModelCallCapture();
    const wire = new ModelCallCapture({ requestTokens: false });
    const stepWarnings: unknown[] = [];
    const { result, calls } = await capture.episode('corridor#m', async (end) => {
      const episode = await EnvironmentEpisode.begin({
        environment: new CorridorEnvironment(),
        task,
        adapter,
        maxSteps: 2,
        onEnd: end,
      });
      const output = await generateText({
        model: wrapped(capture, wire),
        system: 'Walk the corridor with the act tool.',
        prompt: episode.prompt,
        tools: aiSdkTools(episode),
        toolChoice: 'required',
        stopWhen: stepCountIs(10),
        maxOutputTokens: 48,
        seed: 3,
        onStepFinish: ({ warnings }) => {
          stepWarnings.push(...(warnings ?? []));
        },
      }).catch((error: Error) => error);
      return { episode, output };
    });
    // Two actions end the episode; the third call is answered by the middleware, which the
    // SDK refuses because a tool call is required: the agent's loop stops there.
    expect(result.episode.steps).toHaveLength(2);
    expect(JSON.stringify(stepWarnings)).not.toMatch(/deprecated/);
    expect(calls).toHaveLength(2);
    expect((result.output as Error).message).toMatch(/did not contain a tool call/);
    expect(wire.untracked).toHaveLength(2);
    for (const [index, call] of calls.entries()) {
      const onWire = wire.untracked[index]!;
      expect(call.episodeId).toBe('corridor#m');
      expect(onWire.episodeId).toBeUndefined();
      // The middleware asked for the tokens: the request on the wire carried the fields.
      expect(call.promptTokenIds!.length).toBeGreaterThan(50);
      expect(call.completionTokenIds!.length).toBeGreaterThan(0);
      expect(call.logprobs).toHaveLength(call.completionTokenIds!.length);
      expect(call.toolCalls).toHaveLength(1);
      expect(call.toolCalls[0]!.name).toBe('act');
      const { episodeId: _a, milliseconds: _b, overheadMilliseconds: _c, ...recorded } = call;
      const { episodeId: _d, milliseconds: _e, overheadMilliseconds: _f, ...sent } = onWire;
      expect(recorded).toEqual(sent);
    }
    expect(JSON.stringify(calls[1]!.messages)).toContain(
      JSON.stringify(result.episode.steps[0]!.observation).slice(1, 30),
    );
  }, 180_000);

  it('records streamed calls and calls outside episodes, and sends the model override', async () => {
    const capture = new ModelCallCapture();
    const wire = new ModelCallCapture({ requestTokens: false });
    const provider = createOpenAICompatible({
      name: 'local-server',
      baseURL: server.baseURL,
      fetch: wire.fetch,
    });
    // simulateStreamingMiddleware sits inside ours: ours wraps a real stream of parts, made
    // from the real model's answer.
    const agentModel = wrapLanguageModel({
      model: provider(server.modelName),
      middleware: [captureMiddleware(capture), simulateStreamingMiddleware()],
    });
    const stream = streamText({
      model: agentModel,
      prompt: 'Say hello.',
      maxOutputTokens: 6,
      seed: 1,
    });
    const text = await stream.text;
    expect(capture.untracked).toHaveLength(1);
    expect(capture.untracked[0]).toMatchObject({
      episodeId: undefined,
      model: server.modelName,
      content: text,
      toolCalls: [],
      finishReason: wire.untracked[0]!.finishReason,
      messages: wire.untracked[0]!.messages,
    });
    expect(text.length).toBeGreaterThan(0);

    capture.model = 'not-loaded';
    const refused = await generateText({
      model: agentModel,
      prompt: 'Hi',
      maxOutputTokens: 3,
      maxRetries: 0,
    }).catch((error: Error) => error);
    expect((refused as Error).message).toMatch(/not-loaded/);
    expect(capture.untracked).toHaveLength(1);

    // After the episode's end, neither a generated nor a streamed call reaches the server.
    const before = served.length;
    const { calls } = await capture.episode('over', async (end) => {
      end();
      const generated = await generateText({ model: agentModel, prompt: 'Hi' });
      expect(generated.text).toBe(EPISODE_OVER_MESSAGE);
      expect(await streamText({ model: agentModel, prompt: 'Hi' }).text).toBe(EPISODE_OVER_MESSAGE);
    });
    expect(calls).toEqual([]);
    expect(served.length).toBe(before);
  }, 120_000);
});
