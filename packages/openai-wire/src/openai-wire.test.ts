import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  chatCompletionBody,
  completionLogprobs,
  EmbeddingsRequestSchema,
  embeddingsBody,
} from './bodies.js';
import { chatCompletionChunks, serverSentEvents } from './chat-stream.js';
import {
  type OpenAIErrorBody,
  OpenAIHttpError,
  parseOpenAIRequest,
  readRequestBody,
  sendJson,
  sendOpenAIError,
} from './http.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A server that reads each body under `limit` and answers it (or the error) as JSON. */
async function echoServer(limit: number): Promise<string> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    readRequestBody(request, limit).then(
      (text) => sendJson(response, 200, { text }),
      (error: OpenAIHttpError) => sendOpenAIError(response, error),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('readRequestBody', () => {
  it('reads a body within the limit', async () => {
    const url = await echoServer(16);
    const response = await fetch(url, { method: 'POST', body: 'héllo' });
    expect(await response.json()).toEqual({ text: 'héllo' });
  });

  it('refuses a declared length over the limit with a 413 the client receives', async () => {
    const url = await echoServer(16);
    const response = await fetch(url, { method: 'POST', body: 'x'.repeat(17) });
    expect(response.status).toBe(413);
    expect(((await response.json()) as OpenAIErrorBody).error).toEqual({
      message: 'The request body has 17 bytes or more; the limit is 16.',
      type: 'invalid_request_error',
      param: null,
      code: 'request_too_large',
    });
  });

  it('refuses an undeclared (chunked) body once it passes the limit, and still answers', async () => {
    const url = await echoServer(1024);
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let index = 0; index < 8; index += 1) controller.enqueue(new Uint8Array(512));
        controller.close();
      },
    });
    const response = await fetch(url, {
      method: 'POST',
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(((await response.json()) as OpenAIErrorBody).error.code).toBe('request_too_large');
  });
});

describe('parseOpenAIRequest', () => {
  it('answers invalid JSON and schema issues with 400s that name the field', () => {
    const failure = (text: string) => {
      try {
        parseOpenAIRequest(text, ChatCompletionRequestSchema);
      } catch (error) {
        return error as OpenAIHttpError;
      }
      throw new Error('expected a failure');
    };
    const invalid = failure('{"messages": [');
    expect(invalid).toBeInstanceOf(OpenAIHttpError);
    expect([invalid.status, invalid.type]).toEqual([400, 'invalid_request_error']);
    expect(invalid.message).toMatch(/^The request body is not valid JSON/);
    const hot = failure(
      JSON.stringify({ messages: [{ role: 'user', content: 'x' }], temperature: 5 }),
    );
    expect([hot.status, hot.param]).toEqual([400, 'temperature']);
    expect(hot.message).toMatch(/field `temperature`/);
    // Chat completions stream; text completions do not.
    expect(
      parseOpenAIRequest(
        JSON.stringify({ messages: [{ role: 'user', content: 'x' }], stream: true }),
        ChatCompletionRequestSchema,
      ).stream,
    ).toBe(true);
    expect(() =>
      parseOpenAIRequest(JSON.stringify({ prompt: 'x', stream: true }), CompletionRequestSchema),
    ).toThrow(/stream is not supported/);
  });

  it('keeps unknown fields and accepts a string or a list as embeddings input', () => {
    const chat = parseOpenAIRequest(
      JSON.stringify({ messages: [{ role: 'user', content: 'x' }], user: 'u1' }),
      ChatCompletionRequestSchema,
    );
    expect(chat.user).toBe('u1');
    expect(parseOpenAIRequest('{"input": "a"}', EmbeddingsRequestSchema).input).toBe('a');
    expect(() => parseOpenAIRequest('{"input": [1]}', EmbeddingsRequestSchema)).toThrow(
      /field `input`/,
    );
  });
});

describe('response bodies', () => {
  it('writes chat logprobs with UTF-8 bytes and at most topLogprobs alternatives', () => {
    const body = chatCompletionBody({
      id: 'c',
      created: 1,
      model: 'm',
      content: 'é!',
      finishReason: 'stop',
      logprobs: [
        {
          token: 'é',
          logprob: -0.5,
          top: [
            { token: 'é', logprob: -0.5 },
            { token: 'e', logprob: -1 },
          ],
        },
        { token: '!', logprob: -0.1 },
      ],
      topLogprobs: 1,
      usage: { promptTokens: 3, completionTokens: 2, cachedTokens: 1 },
    });
    const [choice] = body.choices;
    expect(choice?.message).toEqual({ role: 'assistant', content: 'é!', refusal: null });
    expect(choice?.logprobs?.content[0]).toEqual({
      token: 'é',
      logprob: -0.5,
      bytes: [0xc3, 0xa9],
      top_logprobs: [{ token: 'é', logprob: -0.5, bytes: [0xc3, 0xa9] }],
    });
    expect(body.usage).toEqual({
      prompt_tokens: 3,
      completion_tokens: 2,
      total_tokens: 5,
      prompt_tokens_details: { cached_tokens: 1 },
    });
    const bare = chatCompletionBody({
      id: 'c',
      created: 1,
      model: 'm',
      content: '',
      finishReason: 'length',
      logprobs: null,
      usage: null,
    });
    expect(bare.choices[0]?.logprobs).toBeNull();
    expect('usage' in bare).toBe(false);
  });

  it('writes completion logprobs with text offsets and no alternatives for the first prompt token', () => {
    const top = [{ token: 'b', logprob: -0.2 }];
    expect(
      completionLogprobs(
        [
          { token: 'ab', logprob: null },
          { token: 'c', logprob: -0.2, top },
        ],
        1,
      ),
    ).toEqual({
      tokens: ['ab', 'c'],
      token_logprobs: [null, -0.2],
      top_logprobs: [null, { b: -0.2 }],
      text_offset: [0, 2],
    });
  });

  it('writes embeddings as base64 float32 and keeps each index when reversed', () => {
    const body = embeddingsBody({
      model: 'e',
      vectors: [
        [0.5, -1],
        [2, 0],
      ],
      encoding: 'base64',
      promptTokens: 2,
      reverse: true,
    });
    expect(body.data.map((item) => item.index)).toEqual([1, 0]);
    const decoded = new Float32Array(
      Uint8Array.from(Buffer.from(body.data[1]!.embedding as string, 'base64')).buffer,
    );
    expect([...decoded]).toEqual([0.5, -1]);
    expect(body.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
  });
});

describe('chatCompletionChunks', () => {
  const body = (
    content: string | null,
    toolCalls?: Parameters<typeof chatCompletionBody>[0]['toolCalls'],
  ) =>
    chatCompletionBody({
      id: 'chatcmpl-1',
      created: 1,
      model: 'm',
      content,
      ...(toolCalls ? { toolCalls } : {}),
      finishReason: toolCalls ? 'tool_calls' : 'stop',
      logprobs: [
        { token: 'Hel', logprob: -0.5 },
        { token: 'lo', logprob: -0.25 },
      ],
      usage: { promptTokens: 3, completionTokens: 2 },
      tokenIds: { prompt: [1, 2, 3], completion: [40, 41] },
    });

  it('streams one chunk per token with its id and log-probability, prompt ids first', () => {
    const chunks = chatCompletionChunks(body('Hello'), ['Hel', 'lo'], {
      includeUsage: true,
    }) as Array<{
      prompt_token_ids?: number[];
      choices: Array<{
        delta: { content?: string };
        token_ids?: number[];
        finish_reason: string | null;
        logprobs: { content: Array<{ logprob: number }> } | null;
      }>;
      usage?: unknown;
    }>;
    expect(chunks[0]!.prompt_token_ids).toEqual([1, 2, 3]);
    expect(chunks.slice(1, 3).map((chunk) => chunk.choices[0]!.delta.content)).toEqual([
      'Hel',
      'lo',
    ]);
    expect(chunks.flatMap((chunk) => chunk.choices[0]?.token_ids ?? [])).toEqual([40, 41]);
    expect(
      chunks
        .flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? [])
        .map((entry) => entry.logprob),
    ).toEqual([-0.5, -0.25]);
    expect(chunks[3]!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks[4]).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    });
    expect(serverSentEvents(chunks).endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('puts a tool call and all its tokens in one chunk, and the content on the first token when the texts do not spell it', () => {
    const call = {
      id: 'call_1',
      type: 'function' as const,
      function: { name: 'act', arguments: '{}' },
    };
    const tool = chatCompletionChunks(body(null, [call]), ['{', '}']) as Array<{
      choices: Array<{ delta: { tool_calls?: unknown[] }; token_ids?: number[] }>;
    }>;
    expect(tool[1]!.choices[0]!.delta.tool_calls).toEqual([{ index: 0, ...call }]);
    expect(tool[1]!.choices[0]!.token_ids).toEqual([40, 41]);
    const cut = chatCompletionChunks(body('Hel'), ['Hel', 'lo']) as Array<{
      choices: Array<{ delta: { content?: string } }>;
    }>;
    expect(cut.slice(1, 3).map((chunk) => chunk.choices[0]!.delta.content)).toEqual(['Hel', '']);
  });
});
