/**
 * The recording proxy's figures (issue 54), written to `benchmarks/results/proxy-agents.json`:
 *
 * 1. overhead per call beside a direct call to the same server, median and p99: against a
 *    server that answers at once with token ids (so the proxy's own cost is what is measured),
 *    and against SmolLM2 behind `dreamgym model serve`'s server (the proxy's own milliseconds
 *    from its records, and both walls);
 * 2. 1,000 concurrent calls from 32 episodes (half attributed by header, half by per-episode
 *    base URL): calls lost and misattributed;
 * 3. streamed and unstreamed records of the same calls (SmolLM2, temperature 0): equal token
 *    for token;
 * 4. the two agents of `examples/proxy-agents` (Python and TypeScript, plain subprocesses),
 *    success before and after training with SmolLM2 on the corridor, at the scale recorded.
 *
 *   npx tsx benchmarks/proxy-agents.ts [--calls 300] [--model-calls 30] [--iterations 3] [--eval 6] [--skip-agents]
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ProxyRecord, readProxyRecords, startRecordingProxy } from '@dreamgym/agents/proxy';
import { corridorTasks } from '@dreamgym/core/testing';
import { LlamaChatModel, startLlamaServer } from '@dreamgym/llama';
import { type AgentName, startProxyTraining } from '../examples/proxy-agents/train.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '300' },
    'model-calls': { type: 'string', default: '30' },
    iterations: { type: 'string', default: '3' },
    eval: { type: 'string', default: '6' },
    'skip-agents': { type: 'boolean', default: false },
    /** Only the agents' part (the proxy's figures already in the results file are kept). */
    'agents-only': { type: 'boolean', default: false },
    agents: { type: 'string', default: 'python,typescript' },
  },
});
const CALLS = Number(values.calls);
const resultsFile = join(import.meta.dirname, 'results', 'proxy-agents.json');

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
const round = (value: number) => Math.round(value * 1000) / 1000;
const summary = (values: readonly number[]) => ({
  median: round(quantile(values, 0.5)),
  p99: round(quantile(values, 0.99)),
  n: values.length,
});

/** A server that answers every chat completion at once, with token ids (vLLM's fields). */
async function instantServer() {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (part) => {
      body += part;
    });
    request.on('end', () => {
      const parsed = JSON.parse(body) as { messages: Array<{ content: string }> };
      const text = JSON.stringify({
        id: 'chatcmpl-instant',
        object: 'chat.completion',
        created: 0,
        model: 'instant',
        prompt_token_ids: [1, 2, 3, parsed.messages.length],
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: parsed.messages.at(-1)!.content },
            finish_reason: 'stop',
            token_ids: [7, 8],
            logprobs: {
              content: [
                { token: 'a', logprob: -0.1 },
                { token: 'b', logprob: -0.2 },
              ],
            },
          },
        ],
      });
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      response.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function post(baseURL: string, body: unknown, headers: Record<string, string> = {}) {
  const started = performance.now();
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const reply = (await response.json()) as { choices?: Array<{ message: { content: string } }> };
  if (!response.ok) throw new Error(`status ${response.status}: ${JSON.stringify(reply)}`);
  return { milliseconds: performance.now() - started, reply };
}

/** Direct and proxied calls, interleaved, to the same server. */
async function overhead(
  upstream: string,
  folder: string,
  body: Record<string, unknown>,
  calls: number,
) {
  const proxy = await startRecordingProxy({ upstream, records: join(folder, 'calls.jsonl') });
  const direct: number[] = [];
  const proxied: number[] = [];
  try {
    for (let index = 0; index < 10; index += 1) {
      await post(upstream, body);
      await post(proxy.baseURL, body);
    }
    for (let index = 0; index < calls; index += 1) {
      direct.push((await post(upstream, body)).milliseconds);
      proxied.push((await post(proxy.baseURL, body)).milliseconds);
    }
  } finally {
    await proxy.close();
  }
  const { records } = await readProxyRecords(join(folder, 'calls.jsonl'));
  const own = records.slice(20).map((record) => record.overheadMilliseconds);
  const differences = direct.map((value, index) => proxied[index]! - value);
  return {
    direct: summary(direct),
    proxied: summary(proxied),
    wallDifference: summary(differences),
    proxyOwnMilliseconds: summary(own),
  };
}

async function concurrency(upstream: string, folder: string) {
  const proxy = await startRecordingProxy({ upstream, records: join(folder, 'calls.jsonl') });
  const sent: Array<{ nonce: string; episode: string }> = [];
  let failed = 0;
  const errors = new Map<string, number>();
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: 1000 }, async (_, index) => {
        const episode = `episode-${index % 32}`;
        const nonce = `call-${index}`;
        sent.push({ nonce, episode });
        const body = { model: 'instant', messages: [{ role: 'user', content: nonce }] };
        try {
          if (index % 2 === 0) await post(proxy.baseURL, body, { 'x-dreamgym-episode': episode });
          else await post(proxy.episodeBaseURL(episode), body);
        } catch (error) {
          failed += 1;
          const cause = (error as { cause?: { code?: string; message?: string } }).cause;
          const key = String(cause?.code ?? cause?.message ?? (error as Error).message);
          errors.set(key, (errors.get(key) ?? 0) + 1);
        }
      }),
    );
  } finally {
    await proxy.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const { records } = await readProxyRecords(join(folder, 'calls.jsonl'));
  const byNonce = new Map(
    records.map((record) => [
      (record.messages[0] as { content: string }).content,
      record.episodeId,
    ]),
  );
  const lost = sent.filter(({ nonce }) => !byNonce.has(nonce)).length;
  const misattributed = sent.filter(
    ({ nonce, episode }) => byNonce.has(nonce) && byNonce.get(nonce) !== episode,
  ).length;
  const episodes = new Set(records.map((record) => record.episodeId)).size;
  return {
    calls: 1000,
    episodes,
    failed,
    recorded: records.length,
    lost,
    misattributed,
    seconds: round(seconds),
  };
}

async function streaming(baseURL: string, modelName: string, folder: string) {
  const proxy = await startRecordingProxy({
    upstream: baseURL,
    records: join(folder, 'calls.jsonl'),
  });
  const prompts = [
    'Name one colour.',
    'Say hello in French.',
    'What is 2 + 2?',
    'Write one word about the sea.',
    'Name a fruit.',
    'Give a number between 1 and 9.',
    'Name an animal that flies.',
    'Say yes or no.',
    'Name a city in Europe.',
    'What colour is the sky?',
  ];
  const tools = [
    {
      type: 'function',
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
  let pairs = 0;
  let equal = 0;
  let tokens = 0;
  try {
    for (const [index, prompt] of prompts.entries()) {
      const body = {
        model: modelName,
        messages: [{ role: 'user', content: prompt }],
        temperature: 0,
        seed: index,
        max_tokens: index % 2 === 0 ? 16 : 48,
        ...(index % 2 === 1 ? { tools } : {}),
      };
      await post(proxy.baseURL, body);
      const response = await fetch(`${proxy.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...body, stream: true }),
      });
      await response.text();
    }
  } finally {
    await proxy.close();
  }
  const { records } = await readProxyRecords(join(folder, 'calls.jsonl'));
  const same = (record: ProxyRecord) =>
    JSON.stringify([
      record.promptTokenIds,
      record.completionTokenIds,
      record.logprobs,
      record.content,
      record.toolCalls.map((call) => [call.name, call.arguments]),
      record.finishReason,
    ]);
  for (let index = 0; index + 1 < records.length; index += 2) {
    pairs += 1;
    tokens += records[index]!.completionTokenIds.length;
    if (
      !records[index]!.stream &&
      records[index + 1]!.stream &&
      same(records[index]!) === same(records[index + 1]!)
    ) {
      equal += 1;
    }
  }
  return { pairs, equal, answerTokensCompared: tokens };
}

async function agentRun(
  agent: AgentName,
  folder: string,
  iterations: number,
  evalEpisodes: number,
) {
  const training = await startProxyTraining({
    agent,
    runDirectory: join(folder, agent),
    log: (line) => console.error(`[${agent}] ${line}`),
  });
  const task = corridorTasks(3)[0]!;
  const evaluate = async () => {
    const episodes = [];
    for (let index = 0; index < evalEpisodes; index += 1)
      episodes.push(await training.trainer.playEpisode(task));
    return {
      episodes: episodes.length,
      success: episodes.filter((episode) => episode.success).length / episodes.length,
      meanReward: round(
        episodes.reduce((total, episode) => total + episode.reward, 0) / episodes.length,
      ),
      modelCalls: episodes.reduce((total, episode) => total + episode.records.length, 0),
    };
  };
  try {
    const before = await evaluate();
    const started = performance.now();
    const metrics = await training.trainer.train(iterations);
    const trainingSeconds = (performance.now() - started) / 1000;
    const after = await evaluate();
    return {
      before,
      after,
      iterations: metrics.map((each) => ({
        iteration: each.iteration,
        successRate: each.successRate,
        meanReward: round(each.meanReward),
        samples: each.samples,
        modelCalls: each.modelCalls,
        loss: each.loss,
        handOverSeconds: round(each.handOverSeconds),
        seconds: round(each.seconds),
      })),
      servedModel: training.trainer.servedModel,
      trainingSeconds: round(trainingSeconds),
    };
  } finally {
    await training.close();
  }
}

const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-proxy-bench-'));
const results: Record<string, unknown> = values['agents-only']
  ? {}
  : {
      measuredAt: new Date().toISOString(),
      machine:
        'the shared 2-vCPU build machine (load average noted per part; other jobs ran alongside)',
    };
try {
  if (!values['agents-only']) await proxyFigures();
  if (!values['skip-agents']) {
    const agents: Record<string, unknown> = {};
    for (const agent of values.agents!.split(',') as AgentName[]) {
      agents[agent] = await agentRun(
        agent,
        join(scratch, 'agents'),
        Number(values.iterations),
        Number(values.eval),
      );
      console.error(`${agent}:`, JSON.stringify(agents[agent]));
    }
    results.agents = {
      measuredAt: new Date().toISOString(),
      loadAverage: round(loadavg()[0]!),
      scale: `the corridor (3 rooms, task corridor-3-0-0; a shaped per-step reward on top of the task reward), SmolLM2-135M-Instruct Q4_1 served by dreamgym model serve, groups of 2 episodes, 1 task per iteration, 3 actions and 3 model turns per episode, learning rate 1e-3, ${values.iterations} iterations, ${values.eval} episodes before and after`,
      environment:
        'the corridor engine (deterministic, real rules); the synthetic environment was not run here',
      ...agents,
    };
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
await mkdir(join(import.meta.dirname, 'results'), { recursive: true });
const kept = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as Record<string, unknown>)
  : {};
await writeFile(resultsFile, `${JSON.stringify({ ...kept, ...results }, null, 2)}\n`);
console.error(`wrote ${resultsFile}`);

/** Parts 1-3: the proxy's overhead, concurrency and streaming figures. */
async function proxyFigures(): Promise<void> {
  const instant = await instantServer();
  try {
    results.overheadInstantServer = {
      loadAverage: round(loadavg()[0]!),
      ...(await overhead(
        instant.baseURL,
        join(scratch, 'instant'),
        { model: 'instant', messages: [{ role: 'user', content: 'hi' }] },
        CALLS,
      )),
    };
    console.error('overhead (instant server):', JSON.stringify(results.overheadInstantServer));
    results.concurrency = await concurrency(instant.baseURL, join(scratch, 'concurrency'));
    console.error('concurrency:', JSON.stringify(results.concurrency));
  } finally {
    await instant.close();
  }
  const model = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  const server = await startLlamaServer({ model });
  try {
    results.overheadSmolLM2 = {
      loadAverage: round(loadavg()[0]!),
      ...(await overhead(
        server.baseURL,
        join(scratch, 'smollm2'),
        {
          model: server.modelName,
          messages: [{ role: 'user', content: 'Say hi.' }],
          max_tokens: 1,
          temperature: 0,
        },
        Number(values['model-calls']),
      )),
    };
    console.error('overhead (SmolLM2):', JSON.stringify(results.overheadSmolLM2));
    results.streaming = await streaming(
      server.baseURL,
      server.modelName,
      join(scratch, 'streaming'),
    );
    console.error('streaming:', JSON.stringify(results.streaming));
  } finally {
    await server.close();
    await model.dispose();
  }
}
