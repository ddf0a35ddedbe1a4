import { openAICompatibleServerPool } from '@dreamgym/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '../random/seeded-random.js';
import { redact, resolveApiKey } from './model-transport.js';
import { OpenAICompatibleChatModel } from './openai-compatible-chat-model.js';

const servers = openAICompatibleServerPool();
afterEach(() => servers.closeAll());

describe('resolveApiKey', () => {
  it('prefers the option, then DREAMGYM_API_KEY, then OPENAI_API_KEY, skipping blanks', () => {
    expect(resolveApiKey('a', { DREAMGYM_API_KEY: 'b', OPENAI_API_KEY: 'c' })).toBe('a');
    expect(resolveApiKey(undefined, { DREAMGYM_API_KEY: ' ', OPENAI_API_KEY: 'c' })).toBe('c');
    expect(resolveApiKey(undefined, {})).toBeUndefined();
  });
});

describe('redact', () => {
  it('removes every occurrence of the secret', () => {
    expect(redact('key sk-123456 and sk-123456', 'sk-123456')).toBe(
      'key [redacted] and [redacted]',
    );
    expect(redact('nothing to hide', undefined)).toBe('nothing to hide');
  });
});

describe('ModelTransport through a client', () => {
  it('stops waiting out a Retry-After when the caller aborts, counting no retry that was not sent', async () => {
    const server = await servers.start({
      chat: () => ({ type: 'error', status: 429, retryAfter: 30 }),
    });
    const model = new OpenAICompatibleChatModel(
      { baseURL: server.url, model: 'm' },
      { random: new SeededRandom(1), env: {} },
    );
    const controller = new AbortController();
    const started = performance.now();
    const pending = model.complete({
      messages: [{ role: 'user', content: 'hi' }],
      signal: controller.signal,
    });
    // Abort once the first attempt has reached the server (however loaded the machine is),
    // while the client waits out the 30 s Retry-After or reads the 429.
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    await expect(pending).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
    expect(model.stats()).toMatchObject({ attempts: 1, retries: 0, failures: 1 });
  });

  it('sends extra headers with every request', async () => {
    const server = await servers.start();
    const model = new OpenAICompatibleChatModel(
      { baseURL: `${server.url}/`, model: 'm', headers: { 'x-gateway-route': 'dreamgym' } },
      { env: {} },
    );
    await model.complete({ messages: [{ role: 'user', content: 'hi' }] });
    expect(server.requests[0]?.headers['x-gateway-route']).toBe('dreamgym');
    // A trailing slash on baseURL is tolerated.
    expect(server.requests[0]?.path).toBe('/v1/chat/completions');
  });
});
