/**
 * The runtime on the real embedded model (SmolLM2-135M-Instruct, from the model cache the
 * set-up step fills). One model load is shared by the file; every answer is kept short.
 */
import { ConfigError, ModelError, ModelOutputError } from '@dreamgym/core';
import { rankContinuations } from '@dreamgym/core/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlamaChatModel } from './llama-chat-model.js';

let model: LlamaChatModel;

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 1024, concurrency: 2 });
}, 60_000);
afterAll(async () => {
  await model?.dispose();
});

const question = [{ role: 'user' as const, content: 'What is the capital of France?' }];

describe('LlamaChatModel on SmolLM2-135M-Instruct', () => {
  it('renders ChatML exactly as the GGUF template does, default system prompt included', async () => {
    expect(model.chatTemplate).toBe('chatml');
    expect(model.defaultSystemPrompt).toBe(
      'You are a helpful AI assistant named SmolLM, trained by Hugging Face',
    );
    const jinja = await LlamaChatModel.load({
      model: 'local',
      contextSize: 256,
      concurrency: 1,
      chatTemplate: 'model',
    });
    try {
      const conversation = [
        ...question,
        { role: 'assistant' as const, content: 'Paris.' },
        { role: 'user' as const, content: 'And of Italy?' },
      ];
      expect(await jinja.promptTokens(conversation)).toEqual(
        await model.promptTokens(conversation),
      );
      const withSystem = [{ role: 'system' as const, content: 'Be brief.' }, ...question];
      expect(await jinja.promptTokens(withSystem)).toEqual(await model.promptTokens(withSystem));
    } finally {
      await jinja.dispose();
    }
  });

  it('completes a chat, with usage and per-token log-probabilities that spell the text', async () => {
    const response = await model.complete({
      messages: question,
      temperature: 0,
      maxTokens: 12,
      logprobs: true,
    });
    expect(response.text.length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(response.finishReason);
    expect(response.usage.completionTokens).toBeGreaterThan(0);
    expect(response.usage.completionTokens).toBeLessThanOrEqual(12);
    expect(response.logprobs!.map((token) => token.token).join('')).toBe(response.text);
    for (const { logprob } of response.logprobs!) {
      expect(logprob).toBeLessThanOrEqual(0);
      expect(Number.isFinite(logprob)).toBe(true);
    }
  });

  it("gives sampled tokens' log-probabilities equal to teacher-forced scoring (greedy and temperature 1)", async () => {
    for (const temperature of [0, 1]) {
      const response = await model.complete({
        messages: question,
        temperature,
        seed: 11,
        maxTokens: 10,
        logprobs: true,
      });
      const [score] = (
        await model.scoreContinuations({ messages: question, continuations: [response.text] })
      ).scores;
      // Retokenising the text may merge tokens differently; compare when it does not.
      expect(score!.tokens.map((token) => token.token)).toEqual(
        response.logprobs!.map((token) => token.token),
      );
      score!.tokens.forEach((token, index) => {
        expect(token.logprob).toBeCloseTo(response.logprobs![index]!.logprob, 2);
      });
    }
  });

  it('stops at a stop sequence and reports it as a stop', async () => {
    const response = await model.complete({
      messages: [{ role: 'user', content: 'Count from 1 to 10, separated by commas.' }],
      temperature: 0,
      maxTokens: 40,
      stop: ['4'],
    });
    expect(response.text).not.toContain('4');
    expect(response.finishReason).toBe('stop');
  });

  it('returns structured output that parses under the schema', async () => {
    const schema = z.object({
      reasoning: z.string().max(80),
      city: z.string().min(1).max(30),
      confident: z.boolean(),
    });
    for (const seed of [1, 2]) {
      const response = await model.completeStructured({
        messages: [
          {
            role: 'user',
            content:
              'What is the capital of France? Answer in JSON with reasoning, city, confident.',
          },
        ],
        schema,
        schemaName: 'capital',
        temperature: 0.7,
        seed,
        maxTokens: 120,
      });
      expect(response.mode).toBe('json_schema');
      expect(schema.parse(JSON.parse(response.text))).toEqual(response.value);
      expect(response.finishReason).toBe('stop');
    }
  });

  it('never returns an answer the token limit cut off as valid: it retries, then reports', async () => {
    const before = model.stats();
    const request = {
      messages: [{ role: 'user' as const, content: 'Describe Paris in JSON.' }],
      schema: z.object({ description: z.string().max(300) }),
      schemaName: 'description',
      maxTokens: 4,
    };
    await expect(model.completeStructured({ ...request, temperature: 0 })).rejects.toSatisfy(
      (error: unknown) =>
        ModelOutputError.isInstance(error) && /cut off by the token limit/.test(error.message),
    );
    await expect(
      model.completeStructured({ ...request, temperature: 0.8, seed: 3 }),
    ).rejects.toSatisfy(ModelOutputError.isInstance);
    const after = model.stats();
    // Greedy: one try; sampled: structuredAttempts (2) tries, one of them a retry.
    expect(after.truncatedStructured - before.truncatedStructured).toBe(3);
    expect(after.retries - before.retries).toBe(1);
  });

  it('scores candidate continuations by log-probability, from messages or a raw prompt', async () => {
    const continuations = ['The capital of France is Paris.', 'The capital of France is Banana.'];
    const fromMessages = await model.scoreContinuations({ messages: question, continuations });
    expect(fromMessages.scores.map((score) => score.text)).toEqual(continuations);
    expect(rankContinuations(fromMessages.scores).best).toBe(0);
    for (const score of fromMessages.scores) {
      expect(score.tokens.map((token) => token.token).join('')).toBe(score.text);
      expect(score.logprob).toBeCloseTo(
        score.tokens.reduce((sum, token) => sum + token.logprob, 0),
        6,
      );
    }
    const prompt = model.detokenize(await model.promptTokens(question), true);
    const fromPrompt = await model.scoreContinuations({ prompt, continuations });
    fromPrompt.scores.forEach((score, index) => {
      expect(score.logprob).toBeCloseTo(fromMessages.scores[index]!.logprob, 3);
    });
    await expect(model.scoreContinuations({ continuations })).rejects.toSatisfy(
      ConfigError.isInstance,
    );
  });

  it('reuses the KV cache across the turns of one conversation', async () => {
    const first = [
      {
        role: 'system' as const,
        content: `You narrate a text game. ${'The house has many rooms. '.repeat(20)}`,
      },
      { role: 'user' as const, content: 'go to kitchen' },
    ];
    const reply = await model.chat({ messages: first, temperature: 0, maxTokens: 8 });
    const second = [
      ...first,
      { role: 'assistant' as const, content: reply.text },
      { role: 'user' as const, content: 'open fridge' },
    ];
    const next = await model.chat({ messages: second, temperature: 0, maxTokens: 8 });
    // Everything up to the first answer was evaluated already.
    expect(next.cachedPromptTokens).toBeGreaterThanOrEqual(reply.usage.promptTokens);
    expect(next.usage.promptTokens).toBeGreaterThan(reply.usage.promptTokens);
  });

  it('scores and samples the same whatever the KV cache held and whatever ran beside', async () => {
    const system = {
      role: 'system' as const,
      content: `You are in a corridor of rooms. ${'Take the key, then open the door. '.repeat(6)}`,
    };
    const here = [system, { role: 'user' as const, content: 'You are in room 1. You see a key.' }];
    const there = [
      system,
      { role: 'user' as const, content: 'You are in room 2. You see a door.' },
    ];
    const continuations = ['take key', 'go right', 'open door'];
    const fresh = await LlamaChatModel.load({ model: 'local', contextSize: 512, concurrency: 2 });
    try {
      // From an empty cache: the whole prompt in one go.
      const cold = await fresh.scoreContinuations({ messages: here, continuations });
      const coldSample = await fresh.chat({
        messages: there,
        seed: 7,
        maxTokens: 8,
        logprobs: true,
      });
      // The system prompt cached by another request, and two requests batched together.
      const [warm, warmSample] = await Promise.all([
        fresh.scoreContinuations({ messages: here, continuations: [...continuations].reverse() }),
        fresh.chat({ messages: there, seed: 7, maxTokens: 8, logprobs: true }),
      ]);
      expect(warm.scores.map((score) => score.logprob).reverse()).toEqual(
        cold.scores.map((score) => score.logprob),
      );
      expect(warmSample.text).toBe(coldSample.text);
      expect(warmSample.tokens.map((token) => token.logprob)).toEqual(
        coldSample.tokens.map((token) => token.logprob),
      );
    } finally {
      await fresh.dispose();
    }
  });

  it('runs requests concurrently up to its limit and queues the rest', async () => {
    let maxBusy = 0;
    const requests = [1, 2, 3, 4].map((seed) =>
      model.complete({ messages: question, temperature: 0.8, seed, maxTokens: 6 }),
    );
    const watcher = setInterval(() => {
      maxBusy = Math.max(maxBusy, model.queueState().busy);
    }, 5);
    const responses = await Promise.all(requests);
    clearInterval(watcher);
    expect(responses).toHaveLength(4);
    for (const response of responses) expect(response.usage.completionTokens).toBeGreaterThan(0);
    expect(maxBusy).toBe(2);
  });

  it('cancels a running request and a queued one, and stays usable', async () => {
    const running = new AbortController();
    const queued = new AbortController();
    const long = model.complete({
      messages: [{ role: 'user', content: 'Write a long story about a dragon.' }],
      temperature: 0.8,
      maxTokens: 400,
      signal: running.signal,
    });
    const other = model.complete({ messages: question, maxTokens: 30, temperature: 0.8 });
    const waiting = model.complete({ messages: question, maxTokens: 5, signal: queued.signal });
    const outcomes = Promise.all([
      expect(long).rejects.toThrow('stop now'),
      expect(waiting).rejects.toThrow('not needed'),
    ]);
    queued.abort(new Error('not needed'));
    setTimeout(() => running.abort(new Error('stop now')), 300);
    await outcomes;
    await other;
    const after = await model.complete({ messages: question, temperature: 0, maxTokens: 4 });
    expect(after.text.length).toBeGreaterThan(0);
  });

  it('rejects prompts longer than the context with a clear error', async () => {
    await expect(
      model.complete({ messages: [{ role: 'user', content: 'word '.repeat(1500) }], maxTokens: 4 }),
    ).rejects.toThrow(/the context holds 1024/);
  });

  it('disposes cleanly: requests in flight end with ModelError, later calls too', async () => {
    const own = await LlamaChatModel.load({ model: 'local', contextSize: 512, concurrency: 1 });
    const inFlight = own.complete({
      messages: [{ role: 'user', content: 'Write a long story.' }],
      maxTokens: 300,
    });
    const outcome = expect(inFlight).rejects.toSatisfy(ModelError.isInstance);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await own.dispose();
    await outcome;
    await expect(own.complete({ messages: question })).rejects.toSatisfy(ModelError.isInstance);
    await own.dispose();
    expect(own.disposed).toBe(true);
  });
});
