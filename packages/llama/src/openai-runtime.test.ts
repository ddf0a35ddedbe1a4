/**
 * `OpenAICompatibleRuntime` against `dreamgym model serve` (`startLlamaServer`) on the real
 * embedded model: the same tokens, answers, log-probabilities and scores as the in-process
 * runtime; an `LlmPolicy` acting through the server, learning in the torch worker and handing
 * its new weights over as a PEFT adapter through `/v1/load_lora_adapter`; the vLLM-shaped
 * endpoints this needs, and their errors.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, ModelError, SeededRandom } from '@dreamgym/core';
import type { ChatMessage } from '@dreamgym/core/models';
import type { PolicySample } from '@dreamgym/core/policy';
import { corridorTask } from '@dreamgym/core/testing';
import { type ScoredRollout, toTrlRecords } from '@dreamgym/core/training';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaChatModel } from './llama-chat-model.js';
import { LlamaPolicyRuntime } from './llama-policy-runtime.js';
import type { LlmPolicy } from './llm-policy.js';
import { corridorLlmPolicy } from './llm-policy.test-support.js';
import type { LlmDecisionRecord } from './llm-policy-options.js';
import { OpenAICompatibleRuntime } from './openai-runtime.js';
import { type LlamaServer, startLlamaServer } from './openai-server.js';

let model: LlamaChatModel;
let server: LlamaServer;
let local: LlamaPolicyRuntime;
let scratch: string;

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 1024, concurrency: 2 });
  server = await startLlamaServer({ model, maxBodyBytes: 4 << 20 });
  local = await LlamaPolicyRuntime.load({ model: 'local', contextSize: 1024, concurrency: 1 });
  scratch = await mkdtemp(join(tmpdir(), 'dreamgym-openai-runtime-'));
}, 60_000);
afterAll(async () => {
  await server?.close();
  await model?.dispose();
  await local?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const remote = () =>
  new OpenAICompatibleRuntime({
    baseURL: server.baseURL,
    model: server.modelName,
    modelPath: model.path,
  });

const messages = [
  {
    role: 'system' as const,
    content:
      'Choose one of the admissible actions. Reply with exactly one action inside <action></action>.',
  },
  {
    role: 'user' as const,
    content:
      'Task: open the door.\nObservation: You are in room 1. You see a key.\nAdmissible actions: go left; go right; take key',
  },
];
const answers = ['<action>take key</action><|im_end|>', '<action>go right</action><|im_end|>'];

async function post(path: string, body: unknown) {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: response bodies of several shapes, read field by field
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('OpenAICompatibleRuntime over dreamgym model serve (real model)', () => {
  it("gives the in-process runtime's tokens, answers, log-probabilities and scores", async () => {
    const runtime = remote();
    expect(runtime.weightFormat).toBe('peft');
    expect(await runtime.promptTokens(messages)).toEqual(await local.promptTokens(messages));
    expect(await runtime.tokenize(answers[0]!)).toEqual(await local.tokenize(answers[0]!));
    const [here, there] = [
      await local.generate({ messages, maxTokens: 12, temperature: 0 }),
      await runtime.generate({ messages, maxTokens: 12, temperature: 0 }),
    ];
    expect(there.text).toBe(here.text);
    expect(there.tokens.map((token) => token.id)).toEqual(here.tokens.map((token) => token.id));
    for (const [index, token] of there.tokens.entries()) {
      expect(token.logprob).toBeCloseTo(here.tokens[index]!.logprob, 4);
    }
    expect(there.promptTokens).toEqual(await local.promptTokens(messages));
    const [scoredHere, scoredThere] = [
      await local.score({ messages, continuations: answers }),
      await runtime.score({ messages, continuations: answers }),
    ];
    expect(scoredThere.map((tokens) => tokens.length)).toEqual(
      scoredHere.map((tokens) => tokens.length),
    );
    for (const [index, tokens] of scoredThere.entries()) {
      for (const [at, value] of tokens.entries()) {
        expect(value).toBeCloseTo(scoredHere[index]![at]!, 4);
      }
    }
  }, 120_000);

  describe('an LlmPolicy acting through the server', () => {
    let policy: LlmPolicy;
    let runtime: OpenAICompatibleRuntime;
    beforeAll(async () => {
      runtime = remote();
      policy = await corridorLlmPolicy({ runtime, ownsRuntime: true, actionSelection: 'score' });
    }, 120_000);
    afterAll(async () => {
      await policy?.close();
    }, 60_000);

    const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 3 });
    const observation = {
      text: 'You are in room 1. You see a key.',
      actions: ['go left', 'go right', 'take key'],
    };

    it("records the server's prompt tokens, and its new weights reach the server as an adapter", async () => {
      const context = { task, history: [], greedy: true, random: new SeededRandom(3) };
      const before = await policy.act(observation, context);
      const record = before.info?.llm as LlmDecisionRecord;
      expect(record.kind).toBe('choice');
      const seen = before.info?.messages as ChatMessage[];
      expect(record.prompt).toEqual(await runtime.promptTokens(seen));
      // Exported for a Python trainer: the recorded messages and tokens, not a rebuilt prompt.
      const rollout = {
        id: 'r1',
        groupId: task.id,
        task,
        success: false,
        totalReward: 0,
        finalObservation: observation,
        steps: [
          {
            observation,
            action: before.action,
            reward: 0,
            done: false,
            candidates: observation.actions,
            logprob: before.logprob,
            policyInfo: before.info,
          },
        ],
      };
      const [exported] = toTrlRecords([{ rollout, advantages: [1] } as unknown as ScoredRollout], {
        agentInstructions: 'not what the policy saw',
      });
      expect(exported).toMatchObject({
        prompt: seen,
        prompt_token_ids: record.prompt,
        completion_token_ids: record.kind === 'choice' ? record.candidates[record.choice] : [],
        logprob: before.logprob,
      });
      expect(runtime.servedModel).toBe(server.modelName);
      // Teach it to take the key, then act again: the server now serves an adapter.
      const sample: PolicySample = {
        task,
        observation,
        previousActions: [],
        candidates: observation.actions,
        action: 'take key',
      };
      await policy.imitate([sample, sample, sample, sample], {
        miniBatchSize: 2,
        learningRate: 5e-3,
        random: new SeededRandom(1),
      });
      const after = await policy.act(observation, context);
      expect(runtime.servedModel).toMatch(/^dreamgym-v1-/);
      const logprobs = (d: typeof before) => (d.info!.candidateLogprobs as number[])[2]!;
      expect(logprobs(after)).toBeGreaterThan(logprobs(before));
      expect(after.action).toBe('take key');
      const listed = (await (await fetch(`${server.baseURL}/models`)).json()) as {
        data: Array<{ id: string }>;
      };
      expect(listed.data.map((entry: { id: string }) => entry.id)).toContain(runtime.servedModel);
    }, 300_000);

    it('writes a PEFT folder the server (and vLLM) loads, and unloads the last adapter on close', async () => {
      const folder = join(scratch, 'peft');
      const written = await policy.saveAdapter(folder);
      expect(written.bytes).toBeGreaterThan(100_000);
      const loaded = await post('/v1/load_lora_adapter', { lora_name: 'saved', lora_path: folder });
      expect(loaded).toMatchObject({ status: 200, body: { lora_name: 'saved' } });
      const clash = await post('/v1/load_lora_adapter', { lora_name: 'saved', lora_path: folder });
      expect(clash.status).toBe(400);
      expect(clash.body.error.message).toMatch(/taken/);
      expect((await post('/v1/unload_lora_adapter', { lora_name: 'saved' })).status).toBe(200);
      expect((await post('/v1/unload_lora_adapter', { lora_name: 'saved' })).status).toBe(404);
    }, 120_000);
  });

  it("answers vLLM's token-level fields and refuses what it cannot do", async () => {
    const prompt = await local.promptTokens(messages);
    const tokenized = await post('/tokenize', { messages });
    expect(tokenized).toMatchObject({
      status: 200,
      body: { count: prompt.length, tokens: prompt },
    });
    const answer = await local.tokenize(answers[0]!);
    const scored = await post('/v1/completions', {
      prompt: [...prompt, ...answer],
      max_tokens: 0,
      prompt_logprobs: 0,
      return_token_ids: true,
    });
    expect(scored.status).toBe(200);
    const choice = scored.body.choices[0];
    expect(choice.prompt_token_ids).toEqual([...prompt, ...answer]);
    expect(choice.prompt_logprobs[0]).toBeNull();
    const last = choice.prompt_logprobs.at(-1);
    expect(Object.keys(last)).toEqual([String(answer.at(-1))]);
    // A second candidate of the same conversation is forced only after the shared prompt (the
    // model's prompt cache), and its log-probabilities are those of forcing it whole.
    const other = await local.tokenize(answers[1]!);
    const cachedBefore = model.stats().cachedPromptTokens;
    const cached = await post('/v1/completions', {
      prompt: [...prompt, ...other],
      max_tokens: 0,
      prompt_logprobs: 0,
    });
    expect(model.stats().cachedPromptTokens - cachedBefore).toBeGreaterThanOrEqual(prompt.length);
    const whole = await post('/v1/completions', {
      prompt: [...prompt, ...other],
      max_tokens: 0,
      echo: true,
      logprobs: 1,
    });
    const forcedWhole: Array<number | null> = whole.body.choices[0].logprobs.token_logprobs;
    const fromCache = cached.body.choices[0].prompt_logprobs.map(
      (entry: Record<string, { logprob: number }> | null) =>
        entry === null ? null : Object.values(entry)[0]!.logprob,
    );
    expect(fromCache).toHaveLength(forcedWhole.length);
    for (const [index, value] of forcedWhole.entries()) {
      if (value === null) expect(fromCache[index]).toBeNull();
      else expect(fromCache[index]).toBeCloseTo(value, 4);
    }
    // DreamGym's prompt_logprobs_from: the conversation comes back null, the candidate's tokens
    // with the same log-probabilities.
    const tail = await post('/v1/completions', {
      prompt: [...prompt, ...other],
      max_tokens: 1,
      prompt_logprobs: 0,
      prompt_logprobs_from: prompt.length,
    });
    const fromTail = tail.body.choices[0].prompt_logprobs;
    expect(fromTail).toHaveLength(prompt.length + other.length);
    expect(fromTail.slice(0, prompt.length).every((entry: unknown) => entry === null)).toBe(true);
    for (const [offset, id] of other.entries()) {
      expect(fromTail[prompt.length + offset][String(id)].logprob).toBeCloseTo(
        forcedWhole[prompt.length + offset]!,
        4,
      );
    }
    const chat = await post('/v1/chat/completions', {
      messages,
      max_tokens: 4,
      temperature: 0,
      logprobs: true,
      return_token_ids: true,
    });
    expect(chat.body.prompt_token_ids).toEqual(prompt);
    expect(chat.body.choices[0].token_ids).toHaveLength(
      chat.body.choices[0].logprobs.content.length,
    );
    // vLLM's choice constraint: the answer is exactly one of the strings, whatever the model prefers.
    const choices = ['<action>take key</action>', '<action>go left</action>'];
    for (const temperature of [0, 1]) {
      const chosen = await post('/v1/chat/completions', {
        messages,
        temperature,
        seed: 3,
        max_tokens: 24,
        structured_outputs: { choice: choices },
      });
      expect(choices).toContain(chosen.body.choices[0].message.content);
    }
    const both = await post('/v1/chat/completions', {
      messages,
      structured_outputs: { choice: choices },
      response_format: { type: 'json_object' },
    });
    expect(both.status).toBe(400);
    const outside = await post('/v1/completions', { prompt: [1, 2, 10_000_000], max_tokens: 1 });
    expect(outside.status).toBe(400);
    expect(outside.body.error.message).toMatch(
      /Token id 10000000 at position 2 is outside the vocabulary/,
    );
    const alternatives = await post('/v1/completions', {
      prompt: [1, 2],
      max_tokens: 0,
      prompt_logprobs: 2,
    });
    expect(alternatives.status).toBe(400);
    const noGguf = await post('/v1/load_lora_adapter', { lora_name: 'empty', lora_path: scratch });
    expect(noGguf.status).toBe(400);
    expect(noGguf.body.error.message).toMatch(/holds no adapter\.gguf/);
    const unknown = await post('/v1/chat/completions', { model: 'nope', messages });
    expect(unknown.status).toBe(404);
  }, 120_000);

  it('says what went wrong: a GGUF handed to a PEFT runtime, a server that is not there', async () => {
    await expect(remote().loadWeights({ kind: 'lora', path: '/tmp/adapter.gguf' })).rejects.toThrow(
      ConfigError,
    );
    const gone = new OpenAICompatibleRuntime({
      baseURL: 'http://127.0.0.1:9/v1',
      model: 'x',
      modelPath: model.path,
      timeoutMs: 5_000,
    });
    const failure = gone.tokenize('hello');
    await expect(failure).rejects.toThrow(ModelError);
    await expect(failure).rejects.toThrow(/POST http:\/\/127\.0\.0\.1:9\/tokenize failed/);
    expect(
      () => new OpenAICompatibleRuntime({ baseURL: 'not a url', model: 'x', modelPath: 'y' }),
    ).toThrow(/baseURL is not a URL/);
  });
});
