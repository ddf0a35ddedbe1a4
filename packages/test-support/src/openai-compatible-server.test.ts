import { afterEach, describe, expect, it } from 'vitest';
import {
  deterministicEmbedding,
  type OpenAICompatibleServer,
  type OpenAICompatibleServerOptions,
  openAICompatibleServerPool,
  splitIntoTokens,
  startOpenAICompatibleServer,
} from './index.js';

const servers = openAICompatibleServerPool();
let server: OpenAICompatibleServer | undefined;

afterEach(() => servers.closeAll());

async function start(options: OpenAICompatibleServerOptions = {}): Promise<OpenAICompatibleServer> {
  server = await servers.start(options);
  return server;
}

function post(
  base: string,
  path: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/** The parsed body, typed loosely (as `JSON.parse` is) so tests can reach into it. */
async function read(response: Response): Promise<ReturnType<typeof JSON.parse>> {
  return response.json();
}

const hello = { model: 'm', messages: [{ role: 'user', content: 'say hello please' }] };

describe('startOpenAICompatibleServer', () => {
  it('answers chat completions in the OpenAI format, echoing by default, and records the request', async () => {
    const { url, requests } = await start();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const response = await post(url, '/chat/completions', hello);
    expect(response.status).toBe(200);
    const body = await read(response);
    expect(body.choices[0].message).toEqual({
      role: 'assistant',
      content: 'say hello please',
      refusal: null,
    });
    expect(body.choices[0].finish_reason).toBe('stop');
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      index: 0,
      endpointIndex: 0,
      path: '/v1/chat/completions',
      body: hello,
    });
    expect(requests[0]?.outcome).toBe('sent');
    expect(requests[0]?.status).toBe(200);
    expect(requests[0]?.reply).toBe('message');
  });

  it('passes the chat index to the responder and sends scripted errors with Retry-After', async () => {
    const { url } = await start({
      chat: (_request, index) =>
        index === 0
          ? { type: 'error', status: 429, retryAfter: 2 }
          : { type: 'message', content: `#${index}` },
    });
    const first = await post(url, '/chat/completions', hello);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('2');
    expect((await read(first)).error.type).toBe('rate_limit_error');
    const second = await post(url, '/chat/completions', hello);
    expect((await read(second)).choices[0].message.content).toBe('#1');
  });

  it('sends raw (malformed) bodies verbatim and drops connections', async () => {
    const { url, requests } = await start({
      chat: (_request, index) =>
        index === 0 ? { type: 'raw', body: '{"choices": [' } : { type: 'drop' },
    });
    const malformed = await post(url, '/chat/completions', hello);
    expect(malformed.status).toBe(200);
    await expect(malformed.json()).rejects.toThrow();
    await expect(post(url, '/chat/completions', hello)).rejects.toThrow();
    expect(requests[1]?.outcome).toBe('dropped');
    expect(requests.map((record) => record.reply)).toEqual(['raw', 'drop']);
  });

  it('records a client that gives up during a slow reply as aborted', async () => {
    const { url, requests } = await start({
      chat: () => ({ type: 'message', content: 'late', delayMs: 5_000 }),
    });
    await expect(
      post(url, '/chat/completions', hello, { signal: AbortSignal.timeout(100) }),
    ).rejects.toThrow();
    await server?.idle();
    expect(requests[0]?.outcome).toBe('aborted');
    expect(requests[0]?.status).toBeUndefined();
  });

  it.each([
    ['openai', (body: Record<string, unknown>) => (body.error as { message: string }).message],
    ['vllm', (body: Record<string, unknown>) => body.message as string],
    ['llama.cpp', (body: Record<string, unknown>) => (body.error as { message: string }).message],
    ['ollama', (body: Record<string, unknown>) => (body.error as { message: string }).message],
  ] as const)('rejects json_schema with a 400 in the %s style', async (style, messageOf) => {
    const { url } = await start({ capabilities: { jsonSchema: false }, rejectionStyle: style });
    const response = await post(url, '/chat/completions', {
      ...hello,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } },
    });
    expect(response.status).toBe(400);
    expect(messageOf(await read(response))).toMatch(/json_schema/);
  });

  it('passes a request with an ignored response_format to the responder without it', async () => {
    const seen: unknown[] = [];
    const { url } = await start({
      capabilities: { jsonObject: 'ignore' },
      chat: (request) => {
        seen.push(request.response_format);
        return 'plain';
      },
    });
    await post(url, '/chat/completions', { ...hello, response_format: { type: 'json_object' } });
    expect(seen).toEqual([undefined]);
  });

  it('returns default logprobs that concatenate back to the content, and none when unsupported', async () => {
    const { url } = await start({ chat: () => 'one two three' });
    const body = await read(await post(url, '/chat/completions', { ...hello, logprobs: true }));
    const tokens = body.choices[0].logprobs.content as Array<{ token: string; logprob: number }>;
    expect(tokens.map((token) => token.token).join('')).toBe('one two three');
    expect(tokens.map((token) => token.logprob)).toEqual([-0.01, -0.02, -0.03]);
    server?.setCapabilities({ logprobs: false });
    const without = await read(await post(url, '/chat/completions', { ...hello, logprobs: true }));
    expect(without.choices[0].logprobs).toBeNull();
  });

  it('answers embeddings as floats or base64 float32, keeping indices when shuffled', async () => {
    const { url } = await start({ embeddingDimension: 4 });
    const floats = await read(await post(url, '/embeddings', { model: 'e', input: ['a b', 'c'] }));
    expect(floats.data[0].embedding).toEqual(deterministicEmbedding('a b', 4));
    expect(floats.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const base64 = await read(
      await post(url, '/embeddings', { model: 'e', input: 'a b', encoding_format: 'base64' }),
    );
    const decoded = new Float32Array(
      Uint8Array.from(Buffer.from(base64.data[0].embedding, 'base64')).buffer,
    );
    expect([...decoded]).toEqual(deterministicEmbedding('a b', 4));
    server?.setEmbeddings(() => ({ type: 'embeddings', vectors: [[1], [2]], shuffle: true }));
    const shuffled = await read(await post(url, '/embeddings', { input: ['x', 'y'] }));
    expect(shuffled.data.map((item: { index: number }) => item.index)).toEqual([1, 0]);
  });

  it('checks the API key, lists models, and answers 404 and 400 for bad routes and bodies', async () => {
    const { url } = await start({ apiKey: 'sk-test' });
    expect((await post(url, '/chat/completions', hello)).status).toBe(401);
    const authorised = {
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    };
    expect((await post(url, '/chat/completions', hello, authorised)).status).toBe(200);
    expect((await post(url, '/chat/completions', '{not json', authorised)).status).toBe(400);
    expect((await post(url, '/nope', hello, authorised)).status).toBe(404);
    const models = await read(await fetch(`${url}/models`, authorised));
    expect(models.data[0].id).toBe('test-model');
  });

  it('tracks requests in flight', async () => {
    const { url } = await start({ chat: () => ({ type: 'message', content: 'x', delayMs: 50 }) });
    await Promise.all(Array.from({ length: 5 }, () => post(url, '/chat/completions', hello)));
    expect(server?.maxInFlight).toBe(5);
    expect(server?.inFlight).toBe(0);
  });

  it('answers 500 with the message when a responder throws', async () => {
    const { url } = await start({
      chat: () => {
        throw new Error('boom');
      },
    });
    const response = await post(url, '/chat/completions', hello);
    expect(response.status).toBe(500);
    expect((await read(response)).error.message).toContain('boom');
  });
});

describe('openAICompatibleServerPool', () => {
  it('closes every server it started, after which connections are refused', async () => {
    const pool = openAICompatibleServerPool();
    const first = await pool.start();
    const second = await pool.start({ chat: () => 'two' });
    expect(first.url).not.toBe(second.url);
    await pool.closeAll();
    await expect(post(first.url, '/chat/completions', hello)).rejects.toThrow();
    await expect(post(second.url, '/chat/completions', hello)).rejects.toThrow();
  });

  it('closes a server with a reply still pending, and close() twice is harmless', async () => {
    const lone = await startOpenAICompatibleServer({
      chat: () => ({ type: 'message', content: 'never', delayMs: 60_000 }),
    });
    const pending = post(lone.url, '/chat/completions', hello);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lone.inFlight).toBe(1);
    await lone.close();
    await lone.close();
    await expect(pending).rejects.toThrow();
    expect(lone.requests[0]?.outcome).toBe('dropped');
    expect(lone.inFlight).toBe(0);
  });
});

describe('splitIntoTokens', () => {
  it('keeps leading whitespace with the following word', () => {
    expect(splitIntoTokens(' a  bc\n')).toEqual([' a', '  bc', '\n']);
    expect(splitIntoTokens('')).toEqual([]);
  });
});
