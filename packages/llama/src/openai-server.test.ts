/**
 * The OpenAI-compatible server on the real embedded model, driven by the `openai` package
 * and by the SDK's own clients: `OpenAICompatibleChatModel`, `OpenAICompatibleScorer`,
 * `ChatModelPolicy` and `LlmTaskGenerator`. One model and one server are shared by the file.
 */
import { SeededRandom, type Task } from '@dreamgym/core';
import { LlmTaskGenerator } from '@dreamgym/core/curriculum';
import { compactExperienceFormat, ReasoningExperienceModel } from '@dreamgym/core/experience';
import { OpenAICompatibleChatModel, OpenAICompatibleScorer } from '@dreamgym/core/models';
import { ChatModelPolicy } from '@dreamgym/core/policy';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlamaChatModel } from './llama-chat-model.js';
import { type LlamaServer, startLlamaServer } from './openai-server.js';

let model: LlamaChatModel;
let server: LlamaServer;
const lines: string[] = [];

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 1024, concurrency: 2 });
  server = await startLlamaServer({
    model,
    maxBodyBytes: 64 * 1024,
    log: (line) => lines.push(line),
  });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await model?.dispose();
});

/** A parsed response body: OpenAI's error shape on failures, anything on success. */
type Body = Record<string, unknown> & {
  error: { message: string; type: string; param: string | null; code: string | null };
};

async function raw(path: string, init?: RequestInit): Promise<{ status: number; body: Body }> {
  const response = await fetch(`${server.url}${path}`, init);
  return { status: response.status, body: (await response.json()) as Body };
}

function post(path: string, body: unknown): Promise<{ status: number; body: Body }> {
  return raw(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const question = [{ role: 'user' as const, content: 'What is the capital of France?' }];

describe('dreamgym model server (OpenAI-compatible, real model)', () => {
  it('answers /health and /v1/models on 127.0.0.1', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await raw('/health');
    expect(health).toMatchObject({
      status: 200,
      body: { status: 'ok', model: 'smollm2-135m-instruct', concurrency: 2 },
    });
    const models = await raw('/v1/models');
    expect(models.body).toMatchObject({
      object: 'list',
      data: [{ id: 'smollm2-135m-instruct', object: 'model' }],
    });
  });

  it('answers bad requests with clear OpenAI-style JSON errors', async () => {
    const cases: Array<[Promise<{ status: number; body: Body }>, number, RegExp]> = [
      [raw('/v1/nothing'), 404, /No route GET \/v1\/nothing/],
      [raw('/v1/chat/completions'), 405, /takes POST, not GET/],
      [post('/v1/chat/completions', '{"messages": ['), 400, /not valid JSON/],
      [post('/v1/chat/completions', { messages: [] }), 400, /field `messages`/],
      [
        post('/v1/chat/completions', { messages: question, temperature: 5 }),
        400,
        /field `temperature`/,
      ],
      [post('/v1/completions', { prompt: 'x', stream: true }), 400, /stream is not supported/],
      [
        post('/v1/chat/completions', { model: 'gpt-4o', messages: question }),
        404,
        /does not exist; this server serves "smollm2-135m-instruct"/,
      ],
      [
        post('/v1/chat/completions', { messages: question, top_logprobs: 2 }),
        400,
        /needs logprobs: true/,
      ],
      [
        post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x'.repeat(70_000) }] }),
        413,
        /limit/,
      ],
      [
        post('/v1/chat/completions', {
          messages: [{ role: 'user', content: 'word '.repeat(1500) }],
        }),
        400,
        /the context holds 1024/,
      ],
      [post('/v1/completions', { prompt: 'Hi', max_tokens: 0 }), 400, /needs echo/],
    ];
    for (const [pending, status, message] of cases) {
      const { status: actual, body } = await pending;
      expect(actual, String(message)).toBe(status);
      expect(body.error.message).toMatch(message);
      expect(typeof body.error.type).toBe('string');
    }
    const overflow = await post('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'word '.repeat(1500) }],
    });
    expect(overflow.body.error.code).toBe('context_length_exceeded');
    expect(lines.some((line) => / 404 /.test(line))).toBe(true);
  });

  it('serves the openai package: chat with json_schema and top_logprobs, completions with echo', async () => {
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'none', maxRetries: 0 });
    const chat = await client.chat.completions.create({
      model: server.modelName,
      messages: [{ role: 'user', content: 'Give a city and its country as JSON.' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'city',
          strict: true,
          schema: {
            type: 'object',
            properties: {
              city: { type: 'string', maxLength: 30 },
              country: { type: 'string', maxLength: 30 },
            },
            required: ['city', 'country'],
            additionalProperties: false,
          },
        },
      },
      temperature: 0,
      max_tokens: 60,
      logprobs: true,
      top_logprobs: 3,
    });
    const choice = chat.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    const value = JSON.parse(choice.message.content!);
    expect(Object.keys(value)).toEqual(['city', 'country']);
    const tokens = choice.logprobs!.content!;
    expect(tokens.map((token) => token.token).join('')).toBe(choice.message.content);
    for (const token of tokens) {
      expect(token.top_logprobs).toHaveLength(3);
      expect(token.logprob).toBeLessThanOrEqual(0);
    }
    expect(chat.usage!.completion_tokens).toBe(tokens.length);

    const completion = await client.completions.create({
      model: server.modelName,
      prompt: 'The capital of France is',
      max_tokens: 3,
      temperature: 0,
      echo: true,
      logprobs: 2,
    });
    const text = completion.choices[0]!;
    expect(text.text.startsWith('The capital of France is')).toBe(true);
    expect(text.logprobs!.tokens!.join('')).toBe(text.text);
    expect(text.logprobs!.token_logprobs![0]).toBeNull();
    expect(
      text.logprobs!.token_logprobs!.slice(1).every((value) => typeof value === 'number'),
    ).toBe(true);
    expect(text.logprobs!.text_offset![1]).toBe(text.logprobs!.tokens![0]!.length);
  });

  it("is what the SDK's OpenAICompatibleChatModel expects: logprobs and schema-validated output", async () => {
    const client = new OpenAICompatibleChatModel({
      baseURL: server.baseURL,
      model: server.modelName,
      maxRetries: 0,
    });
    const plain = await client.complete({
      messages: question,
      temperature: 0,
      maxTokens: 8,
      logprobs: true,
    });
    expect(plain.logprobs!.map((token) => token.token).join('')).toBe(plain.text);
    const structured = await client.completeStructured({
      messages: [{ role: 'user', content: 'Is water wet? Answer in JSON.' }],
      schema: z.object({ answer: z.enum(['yes', 'no']), why: z.string().max(60) }),
      schemaName: 'answer',
      temperature: 0,
      maxTokens: 60,
    });
    expect(structured.mode).toBe('json_schema');
    expect(['yes', 'no']).toContain(structured.value.answer);
    expect(client.stats()).toMatchObject({ requests: 2, failures: 0, formatFallbacks: 0 });
  });

  it('scores continuations over HTTP exactly as the in-process model does', async () => {
    const scorer = new OpenAICompatibleScorer({
      baseURL: server.baseURL,
      model: server.modelName,
      maxRetries: 0,
      defaultSystemPrompt: model.defaultSystemPrompt,
    });
    const continuations = ['Paris is the capital.', 'Berlin is the capital.'];
    const remote = await scorer.scoreContinuations({ messages: question, continuations });
    const local = await model.scoreContinuations({ messages: question, continuations });
    remote.scores.forEach((score, index) => {
      expect(score.tokens.map((token) => token.token).join('')).toBe(score.text);
      expect(score.logprob).toBeCloseTo(local.scores[index]!.logprob, 2);
    });
    expect(remote.scores[0]!.logprob).toBeGreaterThan(remote.scores[1]!.logprob);
  });

  it('drives ChatModelPolicy: an action chosen over HTTP, with its log-probability when valid', async () => {
    const client = new OpenAICompatibleChatModel({
      baseURL: server.baseURL,
      model: server.modelName,
      maxRetries: 0,
    });
    const policy = new ChatModelPolicy({
      model: client,
      agentInstructions: 'You play a text game. Choose one of the admissible actions.',
      temperature: 0,
      maxTokens: 48,
      invalidAnswerFallback: 'first-candidate',
    });
    const task: Task = {
      id: 't1',
      domain: 'house',
      instruction: 'put an apple in the fridge',
      origin: 'seed',
      meta: {},
    };
    const candidates = ['go to fridge 1', 'take apple 1 from countertop 1', 'look'];
    const decision = await policy.act(
      { text: 'You are in the kitchen. On the countertop 1, you see an apple 1.' },
      { task, history: [], candidates, random: new SeededRandom(3) },
    );
    expect(candidates).toContain(decision.action);
    expect(typeof decision.info?.output).toBe('string');
    expect(policy.stats().decisions).toBe(1);
    // A valid answer carries log pi(action); an invalid one is flagged and penalised.
    if (decision.info?.invalidAction) expect(decision.rewardPenalty).toBeLessThan(0);
    else expect(decision.logprob).toBeLessThan(0);
  });

  it('drives ReasoningExperienceModel (compact format): a schema-valid prediction in one request', async () => {
    const client = new OpenAICompatibleChatModel({
      baseURL: server.baseURL,
      model: server.modelName,
      maxRetries: 0,
    });
    const experience = new ReasoningExperienceModel({
      chat: client,
      environmentDescription:
        'A text household game. "go to R" answers "You arrive at R." and lists what is on R.',
      format: compactExperienceFormat(),
      countTokens: model.countTokens,
      temperature: 0,
    });
    const task: Task = {
      id: 'h1',
      domain: 'house',
      instruction: 'put a mug in the fridge',
      origin: 'seed',
      meta: {},
    };
    const prediction = await experience.predict({
      task,
      history: [],
      state: { text: 'You are in the middle of a room. You see a countertop 1 and a fridge 1.' },
      action: 'go to countertop 1',
      demos: [
        {
          score: 0.9,
          transition: {
            id: 'd1',
            domain: 'house',
            taskId: 'h2',
            instruction: 'put a cup in the fridge',
            stepIndex: 0,
            state: { text: 'You are in the middle of a room. You see a countertop 2.' },
            action: 'go to countertop 2',
            nextState: {
              text: 'You arrive at countertop 2. On the countertop 2, you see a cup 1.',
            },
            reward: 0,
            done: false,
            source: 'offline',
          },
        },
      ],
    });
    expect(prediction.info).toMatchObject({
      attempts: 1,
      structuredMode: 'json_schema',
      promptDemoIds: ['d1'],
    });
    expect(prediction.info?.experienceModelFailure).toBeUndefined();
    expect(prediction.observation.text.length).toBeGreaterThan(0);
    expect(prediction.reasoning.length).toBeLessThanOrEqual(160);
    expect(prediction.reward).toBe(prediction.done && prediction.success ? 1 : 0);
  }, 120_000);

  it('drives LlmTaskGenerator: task variations written by the real model, validated and de-duplicated', async () => {
    const client = new OpenAICompatibleChatModel({
      baseURL: server.baseURL,
      model: server.modelName,
      maxRetries: 0,
    });
    const generator = new LlmTaskGenerator({
      model: client,
      adapter: {
        name: 'household',
        prompts: {
          environmentDescription: 'A house with rooms, furniture and objects.',
          agentInstructions: 'One command per turn.',
          taskGenerationGuidance: 'Swap the object or the receptacle.',
        },
      },
      maxTokens: 96,
      examples: 1,
    });
    const parents: Task[] = [
      'put a clean apple in the fridge',
      'examine the book with the desklamp',
    ].map((instruction, index) => ({
      id: `p${index}`,
      domain: 'household',
      instruction,
      origin: 'seed' as const,
      meta: {},
    }));
    // A 135M model sometimes answers with an empty list; a few rounds give it its chances.
    const random = new SeededRandom(5);
    const rejections: string[] = [];
    const tasks: Task[] = [];
    for (let round = 0; round < 3 && tasks.length + rejections.length === 0; round += 1) {
      try {
        tasks.push(
          ...(await generator.generate(parents, 2, {
            iteration: round,
            random,
            existing: parents,
            onReject: (rejection) => rejections.push(rejection.reason),
          })),
        );
      } catch (error) {
        // Every answer of the round cut off by the token limit: the generator says so.
        expect((error as Error).message).toMatch(/no usable answer/);
      }
    }
    expect(tasks.length + rejections.length).toBeGreaterThan(0);
    for (const task of tasks) {
      expect(task).toMatchObject({ origin: 'generated', domain: 'household' });
      expect(parents.map((parent) => parent.id)).toContain(task.parentId);
      expect(task.instruction.length).toBeGreaterThanOrEqual(10);
      expect(task.meta.generatorModel).toBe(client.id);
    }
  }, 120_000);

  it('answers tool calls (required, named, none) that always parse, and keeps tool turns in the prompt', async () => {
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'none' });
    const act = {
      type: 'function' as const,
      function: {
        name: 'act',
        description: 'Take one action in the room.',
        parameters: {
          type: 'object',
          properties: { action: { type: 'string', description: 'One action.' } },
          required: ['action'],
          additionalProperties: false,
        },
      },
    };
    const look = {
      type: 'function' as const,
      function: { name: 'look', description: 'Look around.', parameters: { type: 'object' } },
    };
    const messages = [
      { role: 'system' as const, content: 'You are a household robot.' },
      { role: 'user' as const, content: 'Put a mug in the coffeemachine.' },
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function' as const,
            function: { name: 'act', arguments: '{"action":"go to countertop 1"}' },
          },
        ],
      },
      {
        role: 'tool' as const,
        tool_call_id: 'call_1',
        content: 'On the countertop 1, you see a mug 1.',
      },
    ];
    for (const seed of [1, 2, 3]) {
      const completion = await client.chat.completions.create({
        model: 'local',
        messages,
        tools: [act, look],
        tool_choice: 'required',
        max_tokens: 64,
        seed,
      });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBeNull();
      const call = choice.message.tool_calls![0]!;
      expect(call.id).toMatch(/^call_/);
      expect(['act', 'look']).toContain(call.type === 'function' ? call.function.name : '');
      if (call.type === 'function')
        expect(typeof JSON.parse(call.function.arguments)).toBe('object');
    }
    const named = await client.chat.completions.create({
      model: 'local',
      messages,
      tools: [act, look],
      tool_choice: { type: 'function', function: { name: 'act' } },
      max_tokens: 64,
    });
    const namedCall = named.choices[0]!.message.tool_calls![0]!;
    expect(namedCall.type === 'function' && namedCall.function.name).toBe('act');
    if (namedCall.type === 'function') {
      expect(typeof JSON.parse(namedCall.function.arguments).action).toBe('string');
    }
    const none = await client.chat.completions.create({
      model: 'local',
      messages,
      tools: [act],
      tool_choice: 'none',
      max_tokens: 8,
    });
    expect(none.choices[0]!.message.tool_calls).toBeUndefined();
    expect(typeof none.choices[0]!.message.content).toBe('string');
    // The prompt the server tokenised is the one /tokenize gives for the same conversation.
    const withTokens = await post('/v1/chat/completions', {
      messages,
      tools: [act],
      tool_choice: 'required',
      max_tokens: 64,
      return_token_ids: true,
    });
    const tokenized = await post('/tokenize', { messages, tools: [act], tool_choice: 'required' });
    expect(withTokens.body.prompt_token_ids).toEqual(tokenized.body.tokens);
    const unknownTool = await post('/v1/chat/completions', {
      messages,
      tools: [act],
      tool_choice: { type: 'function', function: { name: 'fly' } },
    });
    expect(unknownTool.status).toBe(400);
    expect(unknownTool.body.error).toMatchObject({ param: 'tool_choice' });
    expect(unknownTool.body.error.message).toMatch(/"fly", which is not among the tools \(act\)/);
    const twoConstraints = await post('/v1/chat/completions', {
      messages,
      tools: [act],
      response_format: { type: 'json_object' },
    });
    expect(twoConstraints.status).toBe(400);
    expect(twoConstraints.body.error).toMatchObject({ param: 'tools' });
  }, 120_000);

  it('cancels a generation when its client goes away, and closes with requests in flight', async () => {
    const controller = new AbortController();
    const pending = fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'Write a long story.' }],
        max_tokens: 500,
      }),
      signal: controller.signal,
    });
    const outcome = expect(pending).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort();
    await outcome;
    // The sequence is free again soon: a short request completes.
    const started = performance.now();
    const next = await post('/v1/chat/completions', { messages: question, max_tokens: 3 });
    expect(next.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(model.queueState().busy).toBe(0);
    await expect(fetch(`${server.url}/health`).then((response) => response.status)).resolves.toBe(
      200,
    );
  });
});
