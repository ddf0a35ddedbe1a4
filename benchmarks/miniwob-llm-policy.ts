/**
 * The MiniWoB++ LLM experiment's policy (issue 52): SmolLM2-135M-Instruct acting through
 * `dreamgym model serve` in its own process (`OpenAICompatibleRuntime`: score selection over
 * the candidate actions by `/v1/completions` prompt log-probabilities, new LoRA weights handed
 * over with `/v1/load_lora_adapter`) and learning in the torch worker. Shared by the settings
 * choice (`miniwob-llm-bc-settings.ts`) and the experiment (`miniwob-llm.ts`), so both train
 * the same adapter shape with the same prompt.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import {
  type DomainAdapter,
  type DreamGymConfigInput,
  SeededRandom,
  type TrainablePolicy,
  type Trajectory,
} from '@dreamgym/core';
import { demonstrationSamples } from '@dreamgym/core/training';
import {
  LlmPolicy,
  type LlmRuntime,
  OpenAICompatibleRuntime,
  resolveModelPath,
} from '@dreamgym/llama';
import { experimentBaseConfig } from './experiment-conditions.js';
import { MINIWOB_MAX_STEPS } from './miniwob-budget-domain.js';

/**
 * The policy's settings, chosen before any held-out result. LoRA rank 8 on the top 4 of 30
 * blocks: on a CPU the worker caches the frozen blocks' outputs, and a point's state
 * (weights and AdamW moments, fp32) stays about 4 MB, small enough to keep every curve point
 * in the repository. The compact prompt (one instruction line, no environment description):
 * MiniWoB++ states are a few lines, so the prompt is dominated by the system text otherwise,
 * and every candidate is scored against the whole prompt. Score selection: every step lists
 * its candidate actions.
 */
export const MINIWOB_LLM_POLICY = {
  model: 'local',
  loraRank: 8,
  topLayers: 4,
  prompt: 'compact',
  historyWindow: 4,
  actionSelection: 'score',
  contextSize: 1024,
} as const;

const COMPACT_INSTRUCTIONS =
  'Each turn, choose one admissible action that makes progress on the task.';

/** `dreamgym model serve` (the built CLI) in its own process. */
export interface ModelServer {
  baseURL: string;
  modelPath: string;
  stop(): Promise<void>;
}

/**
 * Starts `dreamgym model serve --port 0` on the local model and resolves once it listens. One
 * llama.cpp thread by default: decode is fastest and steadiest with one on this machine kind.
 */
export async function startModelServer(options: {
  threads?: number;
  concurrency?: number;
  log: (message: string) => void;
}): Promise<ModelServer> {
  const root = resolve(import.meta.dirname, '..');
  const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      bin,
      'model',
      'serve',
      '--port',
      '0',
      '--quiet',
      '--model',
      MINIWOB_LLM_POLICY.model,
      '--concurrency',
      String(options.concurrency ?? 2),
      '--threads',
      String(options.threads ?? 1),
      '--context-size',
      String(MINIWOB_LLM_POLICY.contextSize),
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
    child.once('exit', (code) =>
      reject(
        new Error(
          `dreamgym model serve (${bin}) exited with ${code} before listening: build the CLI (npx turbo run build --filter=@dreamgym/cli) and check the local model (dreamgym model pull).`,
        ),
      ),
    );
  });
  options.log(`model server: ${baseURL} (pid ${child.pid})`);
  return {
    baseURL,
    modelPath: resolveModelPath(MINIWOB_LLM_POLICY.model).path,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The LLM policy on `server`: acting through the server, learning in a torch worker with
 * `threads` threads at `learningRate` (behaviour cloning passes its own rate per call).
 */
export async function createMiniwobLlmPolicy(options: {
  /** Acting through `dreamgym model serve` (the experiment's CPU path). */
  server?: ModelServer;
  /**
   * Acting in the torch worker instead (`actOn: 'trainer'`, the GPU path of
   * `benchmarks/gpu/miniwob-llm.sh`): `runtime` only tokenises, the worker runs on `device`
   * with weights in `dtype`.
   */
  trainerActing?: { runtime: LlmRuntime; device: string; dtype: 'float32' | 'bfloat16' };
  adapter: DomainAdapter;
  workDirectory: string;
  seed: number;
  learningRate: number;
  threads?: number;
  /** Blocks with LoRA, from the top. Default `MINIWOB_LLM_POLICY.topLayers`. */
  topLayers?: number;
  log: (message: string) => void;
}): Promise<LlmPolicy> {
  const { server, trainerActing, adapter, log } = options;
  if (!server === !trainerActing) {
    throw new Error(
      'createMiniwobLlmPolicy: give exactly one of server (acting through dreamgym model serve) and trainerActing (acting in the torch worker).',
    );
  }
  const runtime =
    trainerActing?.runtime ??
    new OpenAICompatibleRuntime({
      baseURL: server!.baseURL,
      model: 'smollm2-135m-instruct',
      modelPath: server!.modelPath,
      // On two cores shared with other work, a scoring request waits behind others in the
      // server's queue: the default 2 minutes ended two smoke runs at load 18-24.
      timeoutMs: 900_000,
    });
  return LlmPolicy.create({
    runtime,
    ...(trainerActing && { actOn: 'trainer' as const }),
    prompt: {
      agentInstructions: COMPACT_INSTRUCTIONS,
      historyWindow: MINIWOB_LLM_POLICY.historyWindow,
    },
    actionSelection: MINIWOB_LLM_POLICY.actionSelection,
    parseAction: (text) => adapter.parseAction(text),
    trainer: {
      lora: {
        rank: MINIWOB_LLM_POLICY.loraRank,
        topLayers: options.topLayers ?? MINIWOB_LLM_POLICY.topLayers,
      },
      learningRate: options.learningRate,
      seed: options.seed,
      ...(trainerActing && { dtype: trainerActing.dtype }),
      backend: {
        device: trainerActing?.device ?? 'cpu',
        threads: options.threads ?? 1,
        log: (line) => {
          if (!/Warning|warn/.test(line)) log(`worker: ${line}`);
        },
      },
    },
    workDirectory: options.workDirectory,
    random: new SeededRandom(options.seed).fork('llm-policy'),
    id: 'llm:smollm2-135m-instruct',
    log,
  });
}

/** The loop settings of the experiment's conditions (`miniwob-llm.ts` and the GPU driver). */
export interface MiniwobLlmLoopSettings {
  tasksPerIteration: number;
  rollouts: number;
  /** Real pages played at once. */
  realConcurrency: number;
  rlLearningRate: number;
}

/** The loop configuration every condition of the experiment starts from. */
export function miniwobLlmLoopConfig(
  seed: number,
  settings: MiniwobLlmLoopSettings,
): DreamGymConfigInput {
  const { tasksPerIteration, rollouts } = settings;
  const config = experimentBaseConfig({
    seed,
    iterations: 15,
    maxSteps: MINIWOB_MAX_STEPS,
    realConcurrency: settings.realConcurrency,
    rlLearningRate: settings.rlLearningRate,
  });
  return {
    ...config,
    tasksPerIteration,
    rolloutsPerTask: rollouts,
    // As many episodes at once as the model server evaluates requests.
    concurrency: 2,
    trainer: { ...config.trainer, epochs: 1, maxGradNorm: 1 },
    simToReal: { ...config.simToReal!, tasksPerIteration, rolloutsPerTask: rollouts },
    checkpointEvery: 1,
  };
}

/** The start's cloning settings (`results/miniwob-llm/bc-settings.json`'s choice). */
export interface MiniwobLlmCloning {
  epochs: number;
  miniBatchSize: number;
  learningRate: number;
}

/**
 * The start: `untrained` cloned on every step of `demonstrations` for exactly
 * `cloning.epochs` epochs, in an order seeded by `seed`. Returns what it did, epoch by epoch
 * (written as `start-<seed>-cloning.json`).
 */
export async function cloneMiniwobLlmStart(
  untrained: TrainablePolicy,
  options: {
    adapter: DomainAdapter;
    seed: number;
    demonstrations: readonly Trajectory[];
    cloning: MiniwobLlmCloning;
    log: (message: string) => void;
  },
): Promise<Record<string, unknown>> {
  const { adapter, seed, cloning, log } = options;
  const samples = demonstrationSamples(options.demonstrations, (observation, history) =>
    adapter.candidateActions(observation, history),
  );
  const random = new SeededRandom(seed).fork('behaviour-cloning');
  const epochs: Record<string, number>[] = [];
  for (let epoch = 1; epoch <= cloning.epochs; epoch += 1) {
    const started = performance.now();
    const pass = await untrained.imitate(samples, {
      miniBatchSize: cloning.miniBatchSize,
      learningRate: cloning.learningRate,
      random,
    });
    const seconds = (performance.now() - started) / 1000;
    epochs.push({ epoch, trainNegativeLogLikelihood: pass.negativeLogLikelihood, seconds });
    log(
      `start seed ${seed}: cloning epoch ${epoch}/${cloning.epochs}, train NLL ${pass.negativeLogLikelihood.toFixed(3)} (${seconds.toFixed(0)} s)`,
    );
  }
  return { seed, samples: samples.length, ...cloning, epochs };
}
