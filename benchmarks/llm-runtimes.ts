/**
 * The LLM policy's runtimes side by side (issue 31): the same DreamGym loop on corridors with
 * an `LlmPolicy` acting through
 *   in-process   llama.cpp in this process (`LlamaPolicyRuntime`), new weights as a GGUF
 *                LoRA adapter reloaded after each update;
 *   server       `dreamgym model serve` in its own process through `OpenAICompatibleRuntime`,
 *                new weights as a PEFT folder loaded with `/v1/load_lora_adapter`;
 *   trainer      the torch worker itself (`actOn: 'trainer'`), nothing handed over.
 * Seconds per iteration split into generation (acting), update (the worker's gradient step)
 * and hand-over (export or adapter write, plus reload or adapter load), alternating the
 * runtimes per round so machine load falls on all of them alike.
 *
 * Run: `npx tsx benchmarks/llm-runtimes.ts [--iterations 3] [--rounds 2] [--threads 1]`.
 * Writes `runtimes` into benchmarks/results/llm-policy.json (the rest of the file is kept).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DreamGymLoop, RetrievalExperienceModel, SeededRandom } from '@dreamgym/core';
import { corridorTask, createCorridorAdapter } from '@dreamgym/core/testing';
import {
  LlamaPolicyRuntime,
  LlmPolicy,
  type LlmPolicyStats,
  type LlmRuntime,
  OpenAICompatibleRuntime,
} from '../packages/llama/src/index.js';
import { corridorReplayBuffer } from '../packages/llama/src/llm-policy-loop.test-support.js';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    threads: { type: 'string', default: '1' },
  },
});
const iterations = Number(values.iterations);
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const root = resolve(import.meta.dirname, '..');
const resultsFile = join(root, 'benchmarks', 'results', 'llm-policy.json');
const log = (message: string) =>
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const adapter = createCorridorAdapter();
const tasks = () => [
  corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 }),
  corridorTask({ length: 3, keyRoom: 2, doorRoom: 1 }),
  corridorTask({ length: 4, keyRoom: 2, doorRoom: 3 }),
];
const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-llm-runtimes-'));
const loadAtStart = loadavg();

/** `dreamgym model serve` in its own process; resolves with its base URL once it listens. */
async function startServer(): Promise<{ baseURL: string; child: ChildProcess }> {
  const child = spawn(
    join(root, 'node_modules', '.bin', 'tsx'),
    [
      join(root, 'packages', 'cli', 'src', 'bin.ts'),
      'model',
      'serve',
      '--port',
      '0',
      '--quiet',
      '--concurrency',
      '2',
      '--threads',
      String(threads),
      '--context-size',
      '1024',
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const baseURL = await new Promise<string>((resolvePromise, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
      if (match) resolvePromise(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`dreamgym model serve exited with ${code}`)));
  });
  return { baseURL, child };
}

type Kind = 'in-process' | 'server' | 'trainer';

async function runtimeFor(kind: Kind): Promise<{ runtime: LlmRuntime; stop: () => Promise<void> }> {
  if (kind === 'server') {
    const { baseURL, child } = await startServer();
    const local = await LlamaPolicyRuntime.load({ model: 'local', concurrency: 1 });
    const modelPath = local.modelPath;
    await local.close();
    return {
      runtime: new OpenAICompatibleRuntime({ baseURL, model: 'smollm2-135m-instruct', modelPath }),
      stop: async () => {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        await exited;
      },
    };
  }
  const runtime = await LlamaPolicyRuntime.load({
    model: 'local',
    contextSize: 1024,
    concurrency: 2,
    threads,
  });
  return { runtime, stop: async () => {} };
}

interface IterationSplit {
  seconds: number;
  generation: number;
  update: number;
  handOver: number;
  decisions: number;
}

async function measure(kind: Kind, round: number): Promise<IterationSplit[]> {
  const { runtime, stop } = await runtimeFor(kind);
  const policy = await LlmPolicy.create({
    runtime,
    prompt: {
      agentInstructions: adapter.prompts.agentInstructions,
      environmentDescription: adapter.prompts.environmentDescription,
      historyWindow: 2,
    },
    actionSelection: 'score',
    actOn: kind === 'trainer' ? 'trainer' : 'runtime',
    parseAction: (text) => adapter.parseAction(text),
    trainer: {
      lora: { rank: 8, topLayers: 2 },
      learningRate: 4e-3,
      seed: 1,
      backend: { device: 'cpu', threads },
    },
    workDirectory: join(scratch, `${kind}-${round}`),
    random: new SeededRandom(1),
  });
  const splits: IterationSplit[] = [];
  let previous: LlmPolicyStats = policy.stats();
  let started = performance.now();
  try {
    await new DreamGymLoop({
      config: {
        seed: 5,
        iterations,
        tasksPerIteration: 3,
        rolloutsPerTask: 4,
        maxSteps: 8,
        concurrency: 2,
        algorithm: 'grpo',
        trainer: { epochs: 2 },
        curriculum: { enabled: false },
        evaluation: { every: 0, environments: [] },
        checkpointEvery: 1000,
      },
      components: {
        adapter,
        policy,
        experienceModel: new RetrievalExperienceModel(),
        replayBuffer: await corridorReplayBuffer(tasks()),
        seedTasks: tasks(),
        onIteration: () => {
          const now = performance.now();
          const stats = policy.stats();
          const split = {
            seconds: (now - started) / 1000,
            generation: stats.actSeconds - previous.actSeconds,
            update: stats.updateSeconds - previous.updateSeconds,
            handOver:
              stats.exportSeconds -
              previous.exportSeconds +
              stats.reloadSeconds -
              previous.reloadSeconds,
            decisions: stats.decisions - previous.decisions,
          };
          splits.push(split);
          log(
            `${kind} round ${round} iteration ${splits.length}: ${split.seconds.toFixed(1)} s = generation ${split.generation.toFixed(1)} + update ${split.update.toFixed(1)} + hand-over ${split.handOver.toFixed(1)}; ${split.decisions} decisions`,
          );
          previous = stats;
          started = now;
        },
      },
      runDirectory: join(scratch, `${kind}-${round}-run`),
    }).run();
  } finally {
    await policy.close();
    await stop();
  }
  return splits;
}

const kinds: Kind[] = ['in-process', 'server', 'trainer'];
const measured = new Map<Kind, IterationSplit[]>(kinds.map((kind) => [kind, []]));
try {
  for (let round = 1; round <= rounds; round += 1) {
    for (const kind of round % 2 === 1 ? kinds : [...kinds].reverse()) {
      measured.get(kind)!.push(...(await measure(kind, round)));
    }
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}

const mean = (splits: IterationSplit[], key: keyof IterationSplit) =>
  splits.reduce((total, split) => total + split[key], 0) / Math.max(1, splits.length);
const runtimes = kinds.map((kind) => {
  const splits = measured.get(kind)!;
  return {
    runtime: kind,
    iterations: splits.length,
    secondsPerIteration: mean(splits, 'seconds'),
    generationSeconds: mean(splits, 'generation'),
    updateSeconds: mean(splits, 'update'),
    handOverSeconds: mean(splits, 'handOver'),
    decisionsPerIteration: mean(splits, 'decisions'),
    generationSecondsPerDecision:
      mean(splits, 'generation') / Math.max(1, mean(splits, 'decisions')),
    perIteration: splits,
  };
});
const inProcess = runtimes[0]!;
const ratios = Object.fromEntries(
  runtimes.slice(1).map((entry) => [
    entry.runtime,
    {
      iteration: entry.secondsPerIteration / inProcess.secondsPerIteration,
      generationPerDecision:
        entry.generationSecondsPerDecision / inProcess.generationSecondsPerDecision,
    },
  ]),
);
const previousResults = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as Record<string, unknown>)
  : {};
await writeFile(
  resultsFile,
  `${JSON.stringify(
    {
      ...previousResults,
      runtimes: {
        date: new Date().toISOString(),
        what: 'The same corridor DreamGym loop (3 tasks x 4 rollouts, max 8 steps, score selection, GRPO 2 epochs, LoRA rank 8 on the top 2 layers, CPU) with the LLM policy acting in-process (llama.cpp), through dreamgym model serve in its own process (OpenAICompatibleRuntime, PEFT adapters loaded by name) and on the trainer (actOn: trainer); runtimes alternated per round.',
        machine: { cpus: cpus().length, loadAverage: { start: loadAtStart, end: loadavg() } },
        threads,
        rounds,
        results: runtimes,
        ratiosToInProcess: ratios,
        target:
          'the runtime over model serve within 10% of in-process speed (secondsPerIteration ratio <= 1.10)',
      },
    },
    null,
    2,
  )}\n`,
);
for (const entry of runtimes) {
  log(
    `${entry.runtime}: ${entry.secondsPerIteration.toFixed(1)} s/iteration (generation ${entry.generationSeconds.toFixed(1)}, update ${entry.updateSeconds.toFixed(1)}, hand-over ${entry.handOverSeconds.toFixed(1)}); ${(1000 * entry.generationSecondsPerDecision).toFixed(0)} ms generation per decision`,
  );
}
log(`ratios to in-process: ${JSON.stringify(ratios)}`);
log(`wrote runtimes into ${resultsFile}`);
