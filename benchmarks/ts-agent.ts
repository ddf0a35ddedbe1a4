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
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentEpisodeResult, AgentTrainer, EnvironmentEpisode } from '@dreamgym/agents';
import type { Environment, Task } from '@dreamgym/core';
import { syntheticEnvironmentFromConfig } from '@dreamgym/core';
import { wilsonInterval95 } from '@dreamgym/core/eval';
import { playEpisode } from '../examples/ai-sdk-agent/train.js';
import { startAgentTraining } from '../examples/alfworld-agent-training.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '6' },
    'max-steps': { type: 'string', default: '8' },
    iterations: { type: 'string', default: '3' },
    'tasks-per-iteration': { type: 'string', default: '2' },
    group: { type: 'string', default: '3' },
  },
});
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
