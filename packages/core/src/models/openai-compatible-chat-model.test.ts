import {
  type ChatReply,
  type OpenAICompatibleServer,
  type OpenAICompatibleServerOptions,
  openAICompatibleServerPool,
  type ReceivedChatRequest,
  type RecordedRequest,
} from '@dreamgym/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, ModelError, ModelOutputError } from '../errors.js';
import { SeededRandom } from '../random/seeded-random.js';
import { PLACEHOLDER_API_KEY } from './model-transport.js';
import {
  isResponseFormatRejection,
  OpenAICompatibleChatModel,
  toResponseJsonSchema,
} from './openai-compatible-chat-model.js';
import type { OpenAICompatibleChatModelOptions } from './openai-compatible-options.js';

const servers = openAICompatibleServerPool();
let server: OpenAICompatibleServer | undefined;

afterEach(() => servers.closeAll());

async function start(options: OpenAICompatibleServerOptions = {}): Promise<OpenAICompatibleServer> {
  server = await servers.start(options);
  return server;
}

/** A client with tiny backoff so retry tests stay fast; no key from this process's environment. */
function client(
  url: string,
  options: Partial<OpenAICompatibleChatModelOptions> = {},
  env: Record<string, string | undefined> = {},
): OpenAICompatibleChatModel {
  return new OpenAICompatibleChatModel(
    { baseURL: url, model: 'test-model', retryBaseDelayMs: 5, retryMaxDelayMs: 20, ...options },
    { random: new SeededRandom(7), env },
  );
}

const ask = (content: string) => ({ messages: [{ role: 'user' as const, content }] });

const Step = z.object({ observation: z.string(), reward: z.number(), done: z.boolean() });
const stepJson = '{"observation": "You open the drawer 1.", "reward": 0, "done": false}';

function chatBody(record: RecordedRequest | undefined): ReceivedChatRequest {
  return record?.body as ReceivedChatRequest;
}

describe('OpenAICompatibleChatModel.complete', () => {
  it('sends an OpenAI chat request and returns text, finish reason and usage', async () => {
    const { url, requests } = await start({ chat: () => 'You see a drawer.' });
    const model = client(url, { temperature: 0.3, maxTokens: 64 }, { OPENAI_API_KEY: 'sk-env' });
    const response = await model.complete({ ...ask('look around'), stop: ['\n'], seed: 3 });
    expect(response).toEqual({
      text: 'You see a drawer.',
      finishReason: 'stop',
      usage: { promptTokens: 2, completionTokens: 4, totalTokens: 6 },
    });
    expect(model.id).toBe(`test-model@${url}`);
    expect(chatBody(requests[0])).toMatchObject({
      model: 'test-model',
      messages: [{ role: 'user', content: 'look around' }],
      temperature: 0.3,
      max_tokens: 64,
      stop: ['\n'],
      seed: 3,
    });
    expect(chatBody(requests[0]).logprobs).toBeUndefined();
    expect(chatBody(requests[0]).response_format).toBeUndefined();
    expect(requests[0]?.headers.authorization).toBe('Bearer sk-env');
    expect(model.stats()).toEqual({
      promptTokens: 2,
      completionTokens: 4,
      totalTokens: 6,
      requests: 1,
      retries: 0,
      failures: 0,
      attempts: 1,
      formatFallbacks: 0,
    });
  });

  it('takes the key from the option, then DREAMGYM_API_KEY, then OPENAI_API_KEY, else a placeholder', async () => {
    const { url, requests } = await start();
    const env = { DREAMGYM_API_KEY: 'dg-key', OPENAI_API_KEY: 'sk-key' };
    await client(url, { apiKey: 'option-key' }, env).complete(ask('a'));
    await client(url, {}, env).complete(ask('b'));
    await client(url, {}, { OPENAI_API_KEY: 'sk-key' }).complete(ask('c'));
    await client(url, {}, {}).complete(ask('d'));
    expect(requests.map((record) => record.headers.authorization)).toEqual([
      'Bearer option-key',
      'Bearer dg-key',
      'Bearer sk-key',
      `Bearer ${PLACEHOLDER_API_KEY}`,
    ]);
  });

  it('fails a rejected key at once with a ModelError that names the URL but never the key', async () => {
    const { url, requests } = await start({ apiKey: 'right-key' });
    const model = client(url, { apiKey: 'wrong-secret-key' });
    const error = await model.complete(ask('hi')).catch((caught: unknown) => caught);
    expect(ModelError.isInstance(error)).toBe(true);
    const modelError = error as ModelError;
    expect(modelError.status).toBe(401);
    expect(modelError.url).toBe(`${url}/chat/completions`);
    expect(modelError.message).toContain('DREAMGYM_API_KEY');
    expect(modelError.message).not.toContain('wrong-secret-key');
    expect(JSON.stringify(modelError, Object.getOwnPropertyNames(modelError))).not.toContain(
      'wrong-secret-key',
    );
    expect(requests).toHaveLength(1);
    expect(model.stats()).toMatchObject({ requests: 0, failures: 1, attempts: 1, retries: 0 });
  });

  it('honours Retry-After given in seconds', async () => {
    const { url, requests } = await start({
      chat: (_request, index) =>
        index === 0 ? { type: 'error', status: 429, retryAfter: 1 } : 'ok',
    });
    const model = client(url);
    const started = performance.now();
    expect((await model.complete(ask('hi'))).text).toBe('ok');
    const waited = requests[1]!.receivedAt - requests[0]!.finishedAt!;
    expect(waited).toBeGreaterThanOrEqual(950);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(model.stats()).toMatchObject({ requests: 1, retries: 1, attempts: 2, failures: 0 });
  });

  it('honours Retry-After given as an HTTP date', async () => {
    const { url, requests } = await start({
      chat: (_request, index) =>
        index === 0
          ? { type: 'error', status: 503, retryAfter: new Date(Date.now() + 1_600).toUTCString() }
          : 'ok',
    });
    await client(url).complete(ask('hi'));
    // HTTP dates have whole seconds, so the wait is 0.6 to 1.6 s.
    const waited = requests[1]!.receivedAt - requests[0]!.finishedAt!;
    expect(waited).toBeGreaterThanOrEqual(550);
    expect(waited).toBeLessThan(2_000);
  });

  it('retries 500s, and gives a ModelError with status and URL when retries run out', async () => {
    const { url, requests } = await start({
      chat: (_request, index) => (index < 2 ? { type: 'error', status: 500 } : 'recovered'),
    });
    const model = client(url, { maxRetries: 2 });
    expect((await model.complete(ask('hi'))).text).toBe('recovered');
    expect(requests).toHaveLength(3);

    server?.setChat(() => ({ type: 'error', status: 503, message: 'overloaded' }));
    const error = await model.complete(ask('again')).catch((caught: unknown) => caught);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as ModelError).status).toBe(503);
    expect((error as ModelError).url).toBe(`${url}/chat/completions`);
    expect((error as ModelError).message).toContain(
      'failed after 3 attempts: HTTP 503: overloaded',
    );
    expect(requests).toHaveLength(6);
    expect(model.stats()).toMatchObject({ requests: 1, failures: 1, retries: 4, attempts: 6 });
  });

  it('keeps the message of a vLLM-style error body', async () => {
    const { url } = await start({
      chat: () => ({
        type: 'error',
        status: 400,
        bodyStyle: 'vllm',
        message: 'max_tokens is too large',
      }),
    });
    await expect(client(url).complete(ask('hi'))).rejects.toThrow(
      /HTTP 400: max_tokens is too large/,
    );
  });

  it('does not retry a 400', async () => {
    const { url, requests } = await start({
      chat: () => ({ type: 'error', status: 400, message: 'bad' }),
    });
    await expect(client(url).complete(ask('hi'))).rejects.toThrow(/after 1 attempt: HTTP 400: bad/);
    expect(requests).toHaveLength(1);
  });

  it('times out a slow response, retries it, and reports timeouts that persist', async () => {
    const { url, requests } = await start({
      chat: (_request, index) =>
        index === 0 ? { type: 'message', content: 'late', delayMs: 2_000 } : 'on time',
    });
    const model = client(url, { timeoutMs: 150 });
    const started = performance.now();
    expect((await model.complete(ask('hi'))).text).toBe('on time');
    expect(performance.now() - started).toBeLessThan(1_500);
    await server?.idle();
    expect(requests.map((record) => record.outcome)).toEqual(['aborted', 'sent']);

    server?.setChat(() => ({ type: 'message', content: 'late', delayMs: 2_000 }));
    const error = await client(url, { timeoutMs: 100, maxRetries: 1 })
      .complete(ask('hi'))
      .catch((caught: unknown) => caught);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as ModelError).status).toBeUndefined();
    expect((error as ModelError).message).toMatch(/failed after 2 attempts: timed out.*timeoutMs/);
  });

  it('retries malformed JSON, non-JSON and wrong-shape bodies and dropped connections', async () => {
    const replies: ChatReply[] = [
      { type: 'raw', body: '{"choices": [{"message": {"content": "tru' },
      { type: 'raw', body: '<html>502 Bad Gateway</html>', contentType: 'text/html' },
      { type: 'raw', body: '{"object": "list", "data": []}' },
      { type: 'drop' },
      'finally',
    ];
    const { url, requests } = await start({ chat: (_request, index) => replies[index] ?? 'extra' });
    const model = client(url, { maxRetries: 4 });
    expect((await model.complete(ask('hi'))).text).toBe('finally');
    expect(requests).toHaveLength(5);
    expect(model.stats()).toMatchObject({ requests: 1, retries: 4, attempts: 5 });

    server?.setChat(() => ({ type: 'raw', body: 'not json at all' }));
    await expect(client(url, { maxRetries: 0 }).complete(ask('hi'))).rejects.toThrow(
      /response body is not JSON: "not json at all"/,
    );
  });

  it('reports a server that is not there as a connection failure', async () => {
    const { url } = await start();
    await server?.close();
    const error = await client(url, { maxRetries: 1 })
      .complete(ask('hi'))
      .catch((caught: unknown) => caught);
    expect(ModelError.isInstance(error)).toBe(true);
    expect((error as ModelError).message).toMatch(/after 2 attempts: connection failed.*reachable/);
  });

  it('parses logprobs when asked, and leaves them out otherwise', async () => {
    const { url, requests } = await start({
      chat: () => ({
        type: 'message',
        content: 'go north',
        logprobs: [
          { token: 'go', logprob: -0.25 },
          { token: ' north', logprob: -1.5 },
        ],
      }),
    });
    const model = client(url);
    const response = await model.complete({ ...ask('where?'), logprobs: true });
    expect(chatBody(requests[0]).logprobs).toBe(true);
    expect(response.logprobs).toEqual([
      { token: 'go', logprob: -0.25 },
      { token: ' north', logprob: -1.5 },
    ]);
    expect((await model.complete(ask('where?'))).logprobs).toBeUndefined();
  });

  it('counts usage exactly, and zero for servers that report none', async () => {
    const { url } = await start({
      chat: (_request, index) => ({
        type: 'message',
        content: 'x',
        usage: index === 3 ? null : { promptTokens: 10 + index, completionTokens: 2 * index + 1 },
      }),
    });
    const model = client(url);
    for (let index = 0; index < 4; index += 1) await model.complete(ask('hi'));
    // prompt 10+11+12, completion 1+3+5, the fourth reports nothing
    expect(model.stats()).toMatchObject({
      promptTokens: 33,
      completionTokens: 9,
      totalTokens: 42,
      requests: 4,
    });
  });

  it('never has more than `concurrency` requests in flight', async () => {
    const { url } = await start({ chat: () => ({ type: 'message', content: 'x', delayMs: 30 }) });
    const model = client(url, { concurrency: 3 });
    await Promise.all(Array.from({ length: 12 }, () => model.complete(ask('hi'))));
    expect(server?.maxInFlight).toBe(3);
    expect(model.stats().requests).toBe(12);
  });

  it('stops at once when the caller aborts, without retrying', async () => {
    const { url, requests } = await start({
      chat: () => ({ type: 'message', content: 'x', delayMs: 2_000 }),
    });
    const model = client(url);
    const controller = new AbortController();
    const pending = model.complete({ ...ask('hi'), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await expect(pending).rejects.toThrow('caller gave up');
    expect(requests).toHaveLength(1);
    expect(model.stats()).toMatchObject({ failures: 1, retries: 0, attempts: 1 });
  });

  it('rejects invalid options with a ConfigError naming the field', () => {
    expect(() => client('not a url')).toThrow(ConfigError);
    const error = (() => {
      try {
        client('http://127.0.0.1:1/v1', { concurrency: 0 });
      } catch (caught) {
        return caught as ConfigError;
      }
    })();
    expect(error?.field).toBe('concurrency');
    expect(() => new OpenAICompatibleChatModel({ baseURL: 'ftp://x/v1', model: 'm' })).toThrow(
      /baseURL/,
    );
  });

  it('loses and doubles no request: 50 concurrent calls through random failures', async () => {
    const random = new SeededRandom(2024);
    const failuresById = new Map<string, number>();
    const { url, requests } = await start({
      chat: (request) => {
        const id = String(request.messages.at(-1)?.content);
        const failed = failuresById.get(id) ?? 0;
        if (failed < 3 && random.float() < 0.45) {
          failuresById.set(id, failed + 1);
          const kinds: ChatReply[] = [
            { type: 'error', status: 429, retryAfter: 0 },
            { type: 'error', status: 500 },
            { type: 'error', status: 503 },
            { type: 'drop' },
            { type: 'raw', body: '{"choices": [' },
            { type: 'message', content: `late ${id}`, delayMs: 8_000 },
          ];
          return kinds[random.int(kinds.length)]!;
        }
        return {
          type: 'message',
          content: `done ${id}`,
          usage: { promptTokens: id.length, completionTokens: 3 },
        };
      },
    });
    // The timeout sits far from both an answer's time and a late answer's: on a loaded machine
    // (the suite runs beside other work) an answer took over 400 ms, timed out, and was then
    // counted as sent by the server and retried by the client.
    const model = client(url, { concurrency: 8, timeoutMs: 3_000, maxRetries: 4 });
    const ids = Array.from({ length: 50 }, (_, index) => `request-${index}`);
    const responses = await Promise.all(ids.map((id) => model.complete(ask(id))));
    await server?.idle();

    expect(responses.map((response) => response.text)).toEqual(ids.map((id) => `done ${id}`));
    const successes = requests.filter(
      (record) => record.outcome === 'sent' && record.reply === 'message',
    );
    const successIds = successes.map((record) => chatBody(record).messages.at(-1)?.content);
    expect(successIds.sort()).toEqual([...ids].sort());
    const injected = [...failuresById.values()].reduce((sum, count) => sum + count, 0);
    expect(injected).toBeGreaterThan(10);
    const stats = model.stats();
    expect(stats.requests).toBe(50);
    expect(stats.failures).toBe(0);
    expect(stats.retries).toBe(injected);
    expect(stats.attempts).toBe(requests.length);
    expect(requests.length).toBe(stats.requests + stats.retries);
    expect(server?.maxInFlight).toBeLessThanOrEqual(8);
    const promptTokens = ids.reduce((sum, id) => sum + id.length, 0);
    expect(stats).toMatchObject({
      promptTokens,
      completionTokens: 150,
      totalTokens: promptTokens + 150,
    });
  });
});

describe('OpenAICompatibleChatModel.completeStructured', () => {
  const request = {
    messages: [
      { role: 'system' as const, content: 'You simulate a household.' },
      { role: 'user' as const, content: 'open drawer 1' },
    ],
    schema: Step,
    schemaName: 'experience_step',
  };

  it('sends the schema as response_format json_schema and validates the answer', async () => {
    const { url, requests } = await start({ chat: () => stepJson });
    const model = client(url);
    const response = await model.completeStructured(request);
    expect(response.value).toEqual({
      observation: 'You open the drawer 1.',
      reward: 0,
      done: false,
    });
    expect(response.mode).toBe('json_schema');
    const format = chatBody(requests[0]).response_format;
    expect(format?.type).toBe('json_schema');
    expect(format?.json_schema).toEqual({
      name: 'experience_step',
      strict: true,
      schema: {
        type: 'object',
        properties: {
          observation: { type: 'string' },
          reward: { type: 'number' },
          done: { type: 'boolean' },
        },
        required: ['observation', 'reward', 'done'],
        additionalProperties: false,
      },
    });
    // The server enforces the schema, so the prompt stays as given.
    expect(chatBody(requests[0]).messages).toEqual(request.messages);
  });

  it.each(['openai', 'vllm', 'llama.cpp', 'ollama'] as const)(
    'falls back to json_object once when a %s-style server rejects json_schema',
    async (style) => {
      const { url, requests } = await start({
        capabilities: { jsonSchema: false },
        rejectionStyle: style,
        chat: () => stepJson,
      });
      const model = client(url);
      const first = await model.completeStructured(request);
      expect(first.mode).toBe('json_object');
      expect(first.value.observation).toBe('You open the drawer 1.');
      const second = await model.completeStructured(request);
      expect(second.mode).toBe('json_object');
      expect(
        requests.map((record) => [record.status, chatBody(record).response_format?.type]),
      ).toEqual([
        [400, 'json_schema'],
        [200, 'json_object'],
        [200, 'json_object'],
      ]);
      // Without server enforcement the schema travels in the (single, first) system message.
      const messages = chatBody(requests[1]).messages;
      expect(messages).toHaveLength(2);
      expect(messages[0]?.content).toContain('You simulate a household.');
      expect(messages[0]?.content).toContain('"required":["observation","reward","done"]');
      expect(model.stats()).toMatchObject({
        requests: 2,
        formatFallbacks: 1,
        attempts: 3,
        failures: 0,
      });
    },
  );

  it('falls back to plain text and extracts the JSON from prose, paying each rejection once under concurrency', async () => {
    const { url, requests } = await start({
      capabilities: { jsonSchema: false, jsonObject: false },
      rejectionStyle: 'vllm',
      chat: () => `Sure! Here is the step:\n\`\`\`json\n${stepJson}\n\`\`\``,
    });
    const model = client(url);
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => model.completeStructured(request)),
    );
    expect(responses.every((response) => response.mode === 'text')).toBe(true);
    expect(responses.every((response) => response.value.reward === 0)).toBe(true);
    expect(requests.filter((record) => record.status === 400)).toHaveLength(2);
    expect(requests).toHaveLength(12);
    expect(model.stats()).toMatchObject({ requests: 10, formatFallbacks: 2, attempts: 12 });
    expect(model.structuredOutputMode).toBe('text');
    expect(chatBody(requests.at(-1)).response_format).toBeUndefined();
  });

  it('falls back without retrying when the server rejects response_format with a 500 (llama.cpp)', async () => {
    const { url, requests } = await start({
      chat: (received) =>
        received.response_format?.type === 'json_schema'
          ? { type: 'error', status: 500, message: 'Unsupported response_format type: json_schema' }
          : stepJson,
    });
    const response = await client(url).completeStructured(request);
    expect(response.mode).toBe('json_object');
    expect(requests.map((record) => record.status)).toEqual([500, 200]);
  });

  it('still parses the answer of a server that silently ignores response_format', async () => {
    const { url } = await start({
      capabilities: { jsonSchema: 'ignore' },
      chat: (received) =>
        received.response_format ? 'unexpected' : `The next state is ${stepJson}. Reward follows.`,
    });
    const response = await client(url).completeStructured(request);
    expect(response.mode).toBe('json_schema');
    expect(response.value.done).toBe(false);
  });

  it('uses a forced mode without probing', async () => {
    const { url, requests } = await start({ chat: () => stepJson });
    const response = await client(url, { structuredOutput: 'text' }).completeStructured(request);
    expect(response.mode).toBe('text');
    expect(chatBody(requests[0]).response_format).toBeUndefined();
  });

  it('throws ModelOutputError with the raw output when the answer breaks the schema', async () => {
    const raw = '{"observation": "You open the drawer 1.", "reward": "high", "done": false}';
    const { url } = await start({ chat: () => raw });
    const model = client(url);
    const error = await model.completeStructured(request).catch((caught: unknown) => caught);
    expect(ModelOutputError.isInstance(error)).toBe(true);
    expect((error as ModelOutputError).output).toBe(raw);
    expect((error as ModelOutputError).message).toMatch(/does not match schema "experience_step"/);
    expect((error as ModelOutputError).message).toContain('reward');
    // The server answered and its tokens were spent: a request, not a failure.
    expect(model.stats()).toMatchObject({ requests: 1, failures: 0 });
    expect(model.stats().completionTokens).toBeGreaterThan(0);
  });

  it('says when an answer without JSON was cut off by the token limit', async () => {
    const { url } = await start({
      chat: () => ({ type: 'message', content: '{"observation": "You op', finishReason: 'length' }),
    });
    await expect(client(url).completeStructured(request)).rejects.toThrow(
      /holds no JSON.*raise maxTokens/s,
    );
  });

  it('gives up with a ModelError when even plain text is rejected', async () => {
    const { url, requests } = await start({
      chat: () => ({ type: 'error', status: 400, message: 'schema of the moon' }),
    });
    const model = client(url);
    const error = await model.completeStructured(request).catch((caught: unknown) => caught);
    expect(ModelError.isInstance(error)).toBe(true);
    expect(requests.map((record) => chatBody(record).response_format?.type)).toEqual([
      'json_schema',
      'json_object',
      undefined,
    ]);
    expect(model.stats()).toMatchObject({ failures: 1, formatFallbacks: 2, attempts: 3 });
  });
});

describe('toResponseJsonSchema', () => {
  it('closes objects, drops $schema and says whether strict mode fits', () => {
    const closed = toResponseJsonSchema(
      z.object({ a: z.string(), nested: z.object({ b: z.number() }) }),
    );
    expect(closed.strictCompatible).toBe(true);
    expect(closed.schema.$schema).toBeUndefined();
    expect(closed.schema.additionalProperties).toBe(false);
    expect(
      (closed.schema.properties as Record<string, Record<string, unknown>>).nested
        ?.additionalProperties,
    ).toBe(false);
    expect(toResponseJsonSchema(z.object({ a: z.string().optional() })).strictCompatible).toBe(
      false,
    );
    expect(
      toResponseJsonSchema(z.object({ a: z.record(z.string(), z.number()) })).strictCompatible,
    ).toBe(false);
    expect(toResponseJsonSchema(z.array(z.string())).strictCompatible).toBe(false);
  });
});

describe('isResponseFormatRejection', () => {
  it('recognises format rejections and nothing else', () => {
    expect(
      isResponseFormatRejection({
        status: 400,
        message: "HTTP 400: 'response_format' is not supported",
      }),
    ).toBe(true);
    expect(
      isResponseFormatRejection({
        status: 422,
        message: 'HTTP 422: unsupported JSON schema feature',
      }),
    ).toBe(true);
    expect(
      isResponseFormatRejection({ status: 400, message: 'HTTP 400 status code (no body)' }),
    ).toBe(true);
    expect(
      isResponseFormatRejection({ status: 500, message: 'HTTP 500: json_schema not supported' }),
    ).toBe(true);
    expect(
      isResponseFormatRejection({ status: 400, message: 'HTTP 400: context length exceeded' }),
    ).toBe(false);
    expect(isResponseFormatRejection({ status: 500, message: 'HTTP 500: internal error' })).toBe(
      false,
    );
    expect(isResponseFormatRejection({ status: 429, message: 'HTTP 429: json_schema rate' })).toBe(
      false,
    );
    expect(isResponseFormatRejection({ message: 'connection failed' })).toBe(false);
  });
});
