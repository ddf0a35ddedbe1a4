/**
 * The recording proxy in front of the real SmolLM2 behind `dreamgym model serve`'s server,
 * called by the `openai` package as any agent would: answers pass through unchanged, each
 * call is recorded with its tokens before it is answered and attributed to its episode
 * (header, per-episode base URL), streamed calls are recorded as the same call unstreamed,
 * an ended episode's calls stop the agent, and an answer without token ids is refused with
 * what the server needs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import { startOpenAICompatibleServer } from '@dreamgym/test-support';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EPISODE_OVER_MESSAGE } from '../capture.js';
import { type ProxyRecord, readProxyRecords } from './proxy-records.js';
import { type RecordingProxy, startRecordingProxy } from './recording-proxy.js';

let model: LlamaChatModel;
let server: LlamaServer;
let folder: string;
let proxy: RecordingProxy;

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  server = await startLlamaServer({ model });
  folder = await mkdtemp(join(tmpdir(), 'dreamgym-proxy-'));
  proxy = await startRecordingProxy({
    upstream: server.baseURL,
    records: join(folder, 'calls.jsonl'),
  });
}, 60_000);
afterAll(async () => {
  await proxy?.close();
  await server?.close();
  await model?.dispose();
  if (folder) await rm(folder, { recursive: true, force: true });
});

const question = [{ role: 'user' as const, content: 'Name one colour.' }];
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'act',
      description: 'Take one action.',
      parameters: {
        type: 'object',
        properties: { action: { type: 'string' } },
        required: ['action'],
      },
    },
  },
];

describe('recording proxy', () => {
  it('passes answers through, records each call with its tokens before answering, by episode', async () => {
    const direct = new OpenAI({ baseURL: server.baseURL, apiKey: 'none' });
    const byHeader = new OpenAI({
      baseURL: proxy.baseURL,
      apiKey: 'none',
      defaultHeaders: { 'X-DreamGym-Episode': 'episode-a' },
    });
    const byPath = new OpenAI({ baseURL: proxy.episodeBaseURL('episode b/1'), apiKey: 'none' });
    const ask = {
      model: server.modelName,
      messages: question,
      max_tokens: 6,
      temperature: 0,
      seed: 1,
    };
    const expected = await direct.chat.completions.create(ask);
    const seen: number[] = [];
    const viaHeader = await byHeader.chat.completions.create(ask);
    seen.push((await readProxyRecords(join(folder, 'calls.jsonl'))).records.length);
    const viaPath = await byPath.chat.completions.create({ ...ask, max_tokens: 64, tools });
    seen.push((await readProxyRecords(join(folder, 'calls.jsonl'))).records.length);
    expect(viaHeader.choices[0]!.message.content).toBe(expected.choices[0]!.message.content);
    // Each record was in the file when its answer came back.
    expect(seen).toEqual([1, 2]);
    const { records } = await readProxyRecords(join(folder, 'calls.jsonl'));
    expect(records[0]).toMatchObject({ seq: 1, episodeId: 'episode-a', stream: false });
    expect(records[1]).toMatchObject({
      seq: 2,
      episodeId: 'episode b/1',
      finishReason: 'tool_calls',
    });
    expect(records[1]!.tools).toEqual(tools);
    expect(records[1]!.toolCalls[0]!.name).toBe('act');
    for (const record of records) {
      expect(record.promptTokenIds.length).toBeGreaterThan(5);
      expect(record.completionTokenIds.length).toBeGreaterThan(0);
      expect(record.logprobs).toHaveLength(record.completionTokenIds.length);
      expect(record.overheadMilliseconds).toBeLessThan(50);
    }
    expect(records[0]!.content).toBe(viaHeader.choices[0]!.message.content);
    expect(viaPath.choices[0]!.message.tool_calls?.[0]).toMatchObject({
      function: { name: 'act' },
    });
  }, 60_000);

  it('records a streamed call as the same call unstreamed, token for token (text and tool calls)', async () => {
    const client = new OpenAI({ baseURL: proxy.episodeBaseURL('streams'), apiKey: 'none' });
    for (const extra of [{ max_tokens: 8 }, { max_tokens: 64, tools }]) {
      const ask = {
        model: server.modelName,
        messages: question,
        temperature: 0,
        seed: 2,
        ...extra,
      };
      const first = proxy.counts.recorded;
      const whole = await client.chat.completions.create(ask);
      let text = '';
      const toolNames: string[] = [];
      for await (const chunk of await client.chat.completions.create({ ...ask, stream: true })) {
        text += chunk.choices[0]?.delta.content ?? '';
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
          if (call.function?.name) toolNames.push(call.function.name);
        }
      }
      expect(text).toBe(whole.choices[0]!.message.content ?? '');
      expect(toolNames).toEqual(
        (whole.choices[0]!.message.tool_calls ?? []).map((call) =>
          call.type === 'function' ? call.function.name : '',
        ),
      );
      const { records } = await readProxyRecords(join(folder, 'calls.jsonl'));
      const [unstreamed, streamed] = records.slice(first, first + 2);
      expect([unstreamed!.stream, streamed!.stream]).toEqual([false, true]);
      // Everything but the call's identity and timing (a tool call's id is new at each call).
      const comparable = (record: ProxyRecord) => ({
        ...record,
        seq: 0,
        at: '',
        stream: false,
        milliseconds: 0,
        overheadMilliseconds: 0,
        toolCalls: record.toolCalls.map((call) => ({ ...call, id: '' })),
      });
      expect(comparable(streamed!)).toEqual(comparable(unstreamed!));
      expect(streamed!.completionTokenIds.length).toBeGreaterThan(0);
    }
  }, 60_000);

  it('answers an ended episode with a final message, and routes calls to the model set', async () => {
    const client = new OpenAI({ baseURL: proxy.episodeBaseURL('ended-1'), apiKey: 'none' });
    proxy.endEpisode('ended-1');
    const before = proxy.counts.recorded;
    const answer = await client.chat.completions.create({ model: 'anything', messages: question });
    expect(answer.choices[0]!.message).toMatchObject({ content: EPISODE_OVER_MESSAGE });
    expect(answer.choices[0]!.message.tool_calls).toBeUndefined();
    expect(proxy.counts.recorded).toBe(before);

    const routed = await fetch(`${proxy.url}/dreamgym/proxy/model`, {
      method: 'POST',
      body: JSON.stringify({ model: 'no-such-adapter' }),
    });
    expect(await routed.json()).toEqual({ model: 'no-such-adapter' });
    const refused = new OpenAI({ baseURL: proxy.baseURL, apiKey: 'none', maxRetries: 0 });
    // The server itself refuses a model it does not serve: its error passes through unchanged.
    await expect(
      refused.chat.completions.create({
        model: server.modelName,
        messages: question,
        max_tokens: 2,
      }),
    ).rejects.toThrow(/no-such-adapter/);
    proxy.model = undefined;
  }, 60_000);

  it('refuses an answer without token ids, naming what the server needs', async () => {
    const plain = await startOpenAICompatibleServer();
    const strict = await startRecordingProxy({
      upstream: plain.url,
      records: join(folder, 'strict', 'calls.jsonl'),
    });
    try {
      const client = new OpenAI({ baseURL: strict.baseURL, apiKey: 'none', maxRetries: 0 });
      const failure = await client.chat.completions
        .create({ model: 'fake', messages: question })
        .catch((error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((failure as Error).message).toContain("without the prompt's token ids");
      expect((failure as Error).message).toContain('return_token_ids');
      expect((await readProxyRecords(join(folder, 'strict', 'calls.jsonl'))).records).toEqual([]);
    } finally {
      await strict.close();
      await plain.close();
    }
  });
});
