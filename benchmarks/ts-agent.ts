/**
 * An AI SDK agent, unchanged (`examples/ai-sdk-agent/agent.ts`), trained in DreamGym's
 * synthetic ALFWorld (issue 32): its success on held-out ALFWorld games in the synthetic and the real
 * environment before and after training, and what the capture costs per model call.
 *
 * SmolLM2-135M-Instruct behind `dreamgym model serve`'s server (llama.cpp, CPU), tool calls in
 * the server's grammar-constrained JSON format, LoRA trained by the torch worker on the CPU.
 * The training reward is the environment's (1 on success) plus a format reward: 0.05 times the
 * share of the step budget the agent spent in well-formed tool calls, and 0.05 times the share
 * of its actions the domain's grammar accepts (without it, an agent that never succeeds gives
 * GRPO no signal at all: a first run with the grammar share alone had every reward 0). Success
 * is always the environment's.
 *
 * Usage:
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/ts-agent.ts \
 *     [--tasks 6] [--max-steps 8] [--iterations 3] [--tasks-per-iteration 2] [--group 3]
 * Writes benchmarks/results/ts-agent.json.
 *
 *   npx tsx benchmarks/ts-agent.ts --front-ends [--episodes 5]
 * measures only what each capture front-end costs per model call (the fetch capture and the
 * AI SDK middleware under the same AI SDK agent, the Agents JS trace processor under an Agents
 * JS agent, in the corridor with the real SmolLM2) and how fast `importTraces` turns their
 * records into trajectories; it merges `captureFrontEnds` into ts-agent.json.
 */
import { appendFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  type AgentEpisodeResult,
  type AgentTrainer,
  EnvironmentEpisode,
  importTraces,
  type ModelCall,
  ModelCallCapture,
} from '@dreamgym/agents';
import { aiSdkTools, captureMiddleware } from '@dreamgym/agents/ai-sdk';
import { CaptureTraceProcessor, openAIAgentsTools } from '@dreamgym/agents/openai-agents';
import type { Environment, Task } from '@dreamgym/core';
import { syntheticEnvironmentFromConfig } from '@dreamgym/core';
import { wilsonInterval95 } from '@dreamgym/core/eval';
import { CorridorEnvironment, corridorTask, createCorridorAdapter } from '@dreamgym/core/testing';
import { LlamaChatModel, startLlamaServer } from '@dreamgym/llama';
import { Agent, addTraceProcessor, OpenAIProvider, Runner } from '@openai/agents';
import { generateText, type LanguageModel, stepCountIs, wrapLanguageModel } from 'ai';
import { playEpisode } from '../examples/ai-sdk-agent/train.js';
import { startAgentTraining } from '../examples/alfworld-agent-training.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '6' },
    'max-steps': { type: 'string', default: '8' },
    iterations: { type: 'string', default: '3' },
    'tasks-per-iteration': { type: 'string', default: '2' },
    group: { type: 'string', default: '3' },
    'front-ends': { type: 'boolean', default: false },
    episodes: { type: 'string', default: '5' },
  },
});
if (values['front-ends']) {
  await measureFrontEnds(
    Number(values.episodes),
    resolve(import.meta.dirname, 'results', 'ts-agent.json'),
  );
  process.exit(0);
}
const number = (name: keyof typeof values) => Number(values[name]);
const maxSteps = number('max-steps');
const dataDir = resolve(process.env.DREAMGYM_DATA_DIR ?? '../shared/data');
const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

/** Share of the episode's actions the grammar accepted. */
const validShare = (episode: EnvironmentEpisode) =>
  episode.steps.length === 0
    ? 0
    : episode.steps.filter((step) => !step.invalid).length / episode.steps.length;

const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-ts-agent-'));
const training = await startAgentTraining({
  play: playEpisode,
  dataDir,
  runDirectory: join(scratch, 'run'),
  // Training takes the seed tasks in order (iterations x tasks per iteration of them); the
  // last `--tasks` are held out for evaluation. valid_seen games cannot start a synthetic
  // episode: the embedded model needs a task's first observation, which only train games carry.
  trainTasks: number('iterations') * number('tasks-per-iteration') + number('tasks'),
  groupSize: number('group'),
  tasksPerIteration: number('tasks-per-iteration'),
  maxSteps,
  judge: (episode) =>
    (episode.success ? 1 : 0) +
    0.05 * (episode.steps.length / maxSteps) +
    0.05 * validShare(episode),
  log,
});
const { trainer, domain } = training;
const synthetic = (): Environment =>
  syntheticEnvironmentFromConfig(
    { maxSteps },
    {
      experienceModel: domain.experienceModel,
      retriever: domain.replayBuffer,
      adapter: domain.adapter,
    },
  );

interface Measured {
  successRate: number;
  interval: [number, number];
  episodes: number;
  meanSteps: number;
  invalidShare: number;
  failures: number;
}

async function measure(
  label: string,
  tasks: readonly Task[],
  environment: () => Environment | Promise<Environment>,
  agentTrainer: AgentTrainer,
): Promise<{ measured: Measured; episodes: AgentEpisodeResult[] }> {
  const episodes: AgentEpisodeResult[] = [];
  for (const task of tasks) {
    episodes.push(await agentTrainer.playEpisode(task, environment));
    const done = episodes.filter((episode) => episode.success).length;
    log(`${label}: ${episodes.length}/${tasks.length} episodes, ${done} succeeded`);
  }
  const successes = episodes.filter((episode) => episode.success).length;
  const steps = episodes.reduce((total, episode) => total + episode.steps, 0);
  const invalid = episodes.reduce((total, episode) => total + episode.invalidActions, 0);
  return {
    measured: {
      successRate: successes / episodes.length,
      interval: wilsonInterval95(successes, episodes.length),
      episodes: episodes.length,
      meanSteps: steps / episodes.length,
      invalidShare: steps === 0 ? 0 : invalid / steps,
      failures: episodes.filter((episode) => episode.error !== undefined).length,
    },
    episodes,
  };
}

const results: Record<string, unknown> = {};
const calls: number[] = [];
const callMilliseconds: number[] = [];
const started = performance.now();
try {
  const tasks = domain.seedTasks.slice(-number('tasks'));
  for (const phase of ['before', 'after'] as const) {
    if (phase === 'after') {
      const trainingStarted = performance.now();
      await trainer.train(number('iterations'));
      results.training = {
        iterations: trainer.metrics,
        seconds: (performance.now() - trainingStarted) / 1000,
        servedModel: trainer.servedModel,
      };
    }
    const entry: Record<string, Measured> = {};
    for (const [name, factory] of [
      ['synthetic', synthetic],
      ['real', domain.realEnvironment],
    ] as const) {
      const { measured, episodes } = await measure(`${phase} ${name}`, tasks, factory, trainer);
      entry[name] = measured;
      for (const episode of episodes) {
        for (const call of episode.calls) {
          calls.push(call.overheadMilliseconds);
          callMilliseconds.push(call.milliseconds);
        }
      }
    }
    results[phase] = entry;
  }
} finally {
  await training.close();
  await rm(scratch, { recursive: true, force: true });
}

const sorted = [...calls].sort((a, b) => a - b);
const quantile = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const output = {
  benchmark: 'ts-agent',
  date: new Date().toISOString(),
  protocol:
    "examples/ai-sdk-agent/agent.ts (generateText, toolChoice required, one act tool) unchanged; SmolLM2-135M-Instruct (Q4_1 GGUF) behind startLlamaServer, tool calls in its grammar-constrained JSON format; LoRA rank 8 on the top 4 blocks, lr 1e-4, trained by the torch worker on the CPU with GRPO groups per task in the synthetic ALFWorld (embedded retrieval experience model). Training reward: success + 0.05 x share of the step budget used in well-formed tool calls + 0.05 x share of grammatical actions; success is the environment's. Evaluation: train-split games held out from training (valid_seen games carry no first observation for the synthetic environment), one episode each, the agent sampling at the server's temperature 1.",
  scale: {
    evaluationTasks: number('tasks'),
    maxSteps,
    iterations: number('iterations'),
    tasksPerIteration: number('tasks-per-iteration'),
    groupSize: number('group'),
    cpus: cpus().length,
    device: 'cpu (no accelerator)',
  },
  ...results,
  capture: {
    calls: calls.length,
    overheadMilliseconds: {
      median: quantile(0.5),
      p99: quantile(0.99),
      max: sorted.at(-1),
      mean: calls.reduce((total, value) => total + value, 0) / Math.max(1, calls.length),
    },
    callMillisecondsMedian: [...callMilliseconds].sort((a, b) => a - b)[
      Math.floor(callMilliseconds.length / 2)
    ],
    target: 'overhead < 1 ms per model call',
  },
  seconds: (performance.now() - started) / 1000,
};
const file = resolve(import.meta.dirname, 'results', 'ts-agent.json');
await writeFile(file, `${JSON.stringify(output, null, 2)}\n`);
console.log(JSON.stringify(output, null, 2));
log(`wrote ${file}`);

/** Median, 99th percentile and maximum of `values`. */
function spread(values: readonly number[]): { median: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { median: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}

/**
 * What each capture front-end costs per model call, on the same corridor task and server, and
 * how fast their records import as trajectories; merged into `file` as `captureFrontEnds`.
 */
async function measureFrontEnds(episodes: number, file: string): Promise<void> {
  const adapter = createCorridorAdapter();
  const task = corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 });
  const steps = 3;
  const llama = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  const server = await startLlamaServer({ model: llama });
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-front-ends-'));
  const begin = (end: () => void) =>
    EnvironmentEpisode.begin({
      environment: new CorridorEnvironment(),
      task,
      adapter,
      maxSteps: steps,
      onEnd: end,
    });
  const aiSdkAgent = async (model: LanguageModel, episode: EnvironmentEpisode) =>
    generateText({
      model,
      system: 'Walk the corridor with the act tool.',
      prompt: episode.prompt,
      tools: aiSdkTools(episode),
      toolChoice: 'required',
      stopWhen: stepCountIs(steps + 1),
      maxOutputTokens: 48,
    }).catch(() => undefined);
  const runs: Record<string, ModelCall[]> = { fetch: [], middleware: [], traceProcessor: [] };
  const started = performance.now();
  try {
    for (let index = 0; index < episodes; index += 1) {
      const viaFetch = new ModelCallCapture();
      const provider = createOpenAICompatible({
        name: 'local',
        baseURL: server.baseURL,
        fetch: viaFetch.fetch,
      });
      const fetched = await viaFetch.episode(`fetch#${index}`, async (end) =>
        aiSdkAgent(provider(server.modelName), await begin(end)),
      );
      runs.fetch!.push(...fetched.calls);

      const viaMiddleware = new ModelCallCapture();
      const plain = createOpenAICompatible({ name: 'local', baseURL: server.baseURL });
      const wrapped = wrapLanguageModel({
        model: plain(server.modelName),
        middleware: captureMiddleware(viaMiddleware),
      });
      const middled = await viaMiddleware.episode(`middleware#${index}`, async (end) =>
        aiSdkAgent(wrapped, await begin(end)),
      );
      runs.middleware!.push(...middled.calls);
    }
    const viaTraces = new ModelCallCapture();
    addTraceProcessor(new CaptureTraceProcessor(viaTraces));
    const openai = await new OpenAIProvider({
      baseURL: server.baseURL,
      apiKey: 'local',
      useResponses: false,
    }).getModel(server.modelName);
    for (let index = 0; index < episodes; index += 1) {
      const traced = await viaTraces.episode(`traces#${index}`, async (end) => {
        const episode = await begin(end);
        const agent = new Agent({
          name: 'Corridor walker',
          instructions: 'Walk the corridor with the act tool.',
          model: openai,
          modelSettings: {
            toolChoice: 'required',
            maxTokens: 48,
            providerData: { return_token_ids: true, logprobs: true },
          },
          resetToolChoice: false,
          tools: openAIAgentsTools(episode),
        });
        await new Runner()
          .run(agent, episode.prompt, { maxTurns: steps + 1 })
          .catch(() => undefined);
      });
      runs.traceProcessor!.push(...traced.calls);
    }
  } finally {
    await server.close();
    await llama.dispose();
  }
  const modelSeconds = (performance.now() - started) / 1000;

  // The import's speed: the middleware's records, copied under many episode ids.
  const trace = join(scratch, 'trace.jsonl');
  const copies = 200;
  for (let copy = 0; copy < copies; copy += 1) {
    const lines = runs.middleware!.map((call) =>
      JSON.stringify({ ...call, episodeId: `${call.episodeId}/${copy}` }),
    );
    appendFileSync(trace, `${lines.join('\n')}\n`);
  }
  const importStarted = performance.now();
  const imported = await importTraces([trace], { domain: 'corridor' });
  const importSeconds = (performance.now() - importStarted) / 1000;
  await rm(scratch, { recursive: true, force: true });

  const frontEnds = Object.fromEntries(
    Object.entries(runs).map(([name, calls]) => [
      name,
      {
        calls: calls.length,
        // Calls per episode: fewer than the step limit where the agent's loop threw (caught).
        callsPerEpisode: [...new Set(calls.map((call) => call.episodeId))].map(
          (id) => calls.filter((call) => call.episodeId === id).length,
        ),
        withTokens: calls.filter((call) => (call.completionTokenIds?.length ?? 0) > 0).length,
        overheadMilliseconds: spread(calls.map((call) => call.overheadMilliseconds)),
        callMillisecondsMedian: spread(calls.map((call) => call.milliseconds)).median,
      },
    ]),
  );
  const measured = {
    date: new Date().toISOString(),
    protocol: `${episodes} corridor episodes (3 rooms, at most ${steps} actions) per front-end, SmolLM2-135M behind startLlamaServer on 127.0.0.1: the same AI SDK agent (generateText, toolChoice required) captured by capture.fetch and by captureMiddleware; an Agents JS agent (OpenAIChatCompletionsModel, providerData asking for token ids) captured by CaptureTraceProcessor. overheadMilliseconds is what each front-end adds to a call (the fetch capture: parsing and copying the request and reply; the middleware: reading the result and recording; the trace processor: its onSpanEnd). Import: the middleware's records copied under ${copies} episode ids each, read and converted by importTraces.`,
    cpus: cpus().length,
    frontEnds,
    modelSeconds,
    import: {
      calls: imported.calls,
      trajectories: imported.trajectories.length,
      seconds: importSeconds,
      callsPerSecond: imported.calls / importSeconds,
    },
  };
  let previous: Record<string, unknown> = {};
  try {
    previous = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // No earlier results: this run's are the file.
  }
  await writeFile(
    file,
    `${JSON.stringify({ ...previous, captureFrontEnds: measured }, null, 2)}\n`,
  );
  console.log(JSON.stringify(measured, null, 2));
}
