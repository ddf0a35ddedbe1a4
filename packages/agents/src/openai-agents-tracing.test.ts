/**
 * The capture fed by OpenAI Agents JS tracing (`addTraceProcessor`), with the real
 * `@openai/agents` runner, its chat-completions model and the real SmolLM2 behind
 * `dreamgym model serve`'s server: generation spans become the episode's calls, equal to what
 * went over the wire (recorded underneath by a fetch capture) except for the tool definitions
 * that spans do not carry; calls after the episode's end and spans without data are skipped.
 */
import { CorridorEnvironment, corridorTask, createCorridorAdapter } from '@dreamgym/core/testing';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import {
  Agent,
  addTraceProcessor,
  type Model,
  OpenAIProvider,
  Runner,
  setTracingDisabled,
} from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelCallCapture } from './capture.js';
import { EnvironmentEpisode } from './environment-episode.js';
import { CaptureTraceProcessor, openAIAgentsTools } from './openai-agents.js';

const adapter = createCorridorAdapter();
const task = corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 });
let model: LlamaChatModel;
let server: LlamaServer;
const capture = new ModelCallCapture();
const processor = new CaptureTraceProcessor(capture);
/** Records each request on the wire, under the agent's own OpenAI client. */
const wire = new ModelCallCapture({ requestTokens: false });
let chatModel: Model;

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  server = await startLlamaServer({ model });
  // Vitest sets NODE_ENV=test, which turns Agents JS tracing off.
  setTracingDisabled(false);
  addTraceProcessor(processor);
  // The provider builds its `openai` client with the global fetch of the moment: the wire
  // capture's, then the global is put back.
  const original = globalThis.fetch;
  globalThis.fetch = wire.fetch;
  try {
    const provider = new OpenAIProvider({
      baseURL: server.baseURL,
      apiKey: 'local',
      useResponses: false,
    });
    chatModel = await provider.getModel(server.modelName);
  } finally {
    globalThis.fetch = original;
  }
}, 60_000);
afterAll(async () => {
  await server?.close();
  await model?.dispose();
});

describe('CaptureTraceProcessor', () => {
  it("records an episode's generation spans as its calls, with the tokens the agent asked for", async () => {
    const { result, calls } = await capture.episode('corridor#t', async (end) => {
      const episode = await EnvironmentEpisode.begin({
        environment: new CorridorEnvironment(),
        task,
        adapter,
        maxSteps: 2,
        onEnd: end,
      });
      const agent = new Agent({
        name: 'Corridor walker',
        instructions: 'Walk the corridor with the act tool.',
        model: chatModel,
        modelSettings: {
          toolChoice: 'required',
          // Greedy: the same answers on every run, loaded machine or not.
          temperature: 0,
          maxTokens: 48,
          providerData: { return_token_ids: true, logprobs: true },
        },
        resetToolChoice: false,
        tools: openAIAgentsTools(episode),
      });
      const output = await new Runner()
        .run(agent, episode.prompt, { maxTurns: 3 })
        .catch((error: Error) => error);
      return { episode, output };
    });
    // Two actions end the episode; tracing cannot answer the agent's third call, which reaches
    // the model and is skipped; the run then stops at maxTurns.
    // The run's error first: any other error than the turn limit is the reason the test fails.
    expect((result.output as Error).message).toMatch(/Max turns/i);
    expect(result.episode.steps).toHaveLength(2);
    expect(wire.untracked).toHaveLength(3);
    expect(calls).toHaveLength(2);
    expect(processor.skipped.map((span) => span.reason)).toEqual(['episode-over']);
    for (const [index, call] of calls.entries()) {
      expect(call.episodeId).toBe('corridor#t');
      expect(call.promptTokenIds!.length).toBeGreaterThan(50);
      expect(call.completionTokenIds!.length).toBeGreaterThan(0);
      expect(call.logprobs).toHaveLength(call.completionTokenIds!.length);
      expect(call.toolCalls[0]!.name).toBe('act');
      expect(call.milliseconds).toBeGreaterThan(0);
      const {
        episodeId: _a,
        milliseconds: _b,
        overheadMilliseconds: _c,
        tools,
        ...recorded
      } = call;
      const {
        episodeId: _d,
        milliseconds: _e,
        overheadMilliseconds: _f,
        tools: sentTools,
        ...sent
      } = wire.untracked[index]!;
      expect(recorded).toEqual(sent);
      expect(tools).toEqual([]);
      expect(sentTools).toHaveLength(1);
    }
  }, 180_000);

  it('keeps calls outside episodes apart, and skips spans that carry no data', async () => {
    const agent = new Agent({
      name: 'Greeter',
      instructions: 'Greet.',
      model: chatModel,
      modelSettings: { maxTokens: 4 },
    });
    processor.skipped.length = 0;
    await new Runner().run(agent, 'Hi');
    expect(capture.untracked).toHaveLength(1);
    expect(capture.untracked[0]).toMatchObject({
      episodeId: undefined,
      model: server.modelName,
      tools: [],
    });
    expect(capture.untracked[0]!.promptTokenIds).toBeUndefined();
    await new Runner({ traceIncludeSensitiveData: false }).run(agent, 'Hi');
    expect(capture.untracked).toHaveLength(1);
    expect(processor.skipped.map((span) => span.reason)).toEqual(['no-data']);
  }, 60_000);
});
