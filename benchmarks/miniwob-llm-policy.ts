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
import { type DomainAdapter, SeededRandom } from '@dreamgym/core';
import { LlmPolicy, OpenAICompatibleRuntime, resolveModelPath } from '@dreamgym/llama';

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
  server: ModelServer;
  adapter: DomainAdapter;
  workDirectory: string;
  seed: number;
  learningRate: number;
  threads?: number;
  log: (message: string) => void;
}): Promise<LlmPolicy> {
  const { server, adapter, log } = options;
  const runtime = new OpenAICompatibleRuntime({
    baseURL: server.baseURL,
    model: 'smollm2-135m-instruct',
    modelPath: server.modelPath,
    // On two cores shared with other work, a scoring request waits behind others in the
    // server's queue: the default 2 minutes ended two smoke runs at load 18-24.
    timeoutMs: 900_000,
  });
  return LlmPolicy.create({
    runtime,
    prompt: {
      agentInstructions: COMPACT_INSTRUCTIONS,
      historyWindow: MINIWOB_LLM_POLICY.historyWindow,
    },
    actionSelection: MINIWOB_LLM_POLICY.actionSelection,
    parseAction: (text) => adapter.parseAction(text),
    trainer: {
      lora: { rank: MINIWOB_LLM_POLICY.loraRank, topLayers: MINIWOB_LLM_POLICY.topLayers },
      learningRate: options.learningRate,
      seed: options.seed,
      backend: {
        device: 'cpu',
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
