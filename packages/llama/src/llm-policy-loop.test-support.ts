/**
 * Test support (not exported): the DreamGym loop on small corridors with an `LlmPolicy`
 * (SmolLM2-135M choosing among the admissible actions by likelihood, LoRA on its top 2
 * layers), shared by the end-to-end test and its crash child. The synthetic environment is
 * the embedded retrieval experience model over real corridor play.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  type DreamGymComponents,
  type DreamGymConfigInput,
  DreamGymLoop,
  HashingEmbedder,
  ReplayBuffer,
  RetrievalExperienceModel,
  SeededRandom,
  type Task,
  type Trajectory,
  trajectoryToTransitions,
} from '@dreamgym/core';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
  playCorridor,
} from '@dreamgym/core/testing';
import { workspacePackages } from '@dreamgym/test-support';
import { build } from 'esbuild';
import type { LlmPolicy } from './llm-policy.js';
import { corridorLlmPolicy } from './llm-policy.test-support.js';
import { DEFAULT_MODEL_NAME, resolveModelPath } from './model-files.js';
import { OpenAICompatibleRuntime } from './openai-runtime.js';

/** Three-room corridors: the key and the door one or two rooms from the entrance. */
export function smallCorridorTasks(): Task[] {
  return [
    corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 }),
    corridorTask({ length: 3, keyRoom: 2, doorRoom: 1 }),
  ];
}

export const llmLoopConfig: DreamGymConfigInput = {
  seed: 5,
  iterations: 2,
  tasksPerIteration: 1,
  rolloutsPerTask: 4,
  maxSteps: 6,
  concurrency: 2,
  algorithm: 'grpo',
  trainer: { epochs: 1, learningRate: 1e-3 },
  curriculum: { enabled: false },
  evaluation: { every: 0, environments: [] },
  checkpointEvery: 1,
};

/** A replay buffer of noisy expert play on `tasks` (phi includes the instruction: the task says where things are). */
export async function corridorReplayBuffer(tasks: readonly Task[]): Promise<ReplayBuffer> {
  const random = new SeededRandom(3);
  const buffer = ReplayBuffer.create({
    embedder: new HashingEmbedder({ dimension: 256 }),
    phiWeights: { instruction: 1 },
  });
  for (const task of tasks) {
    for (let episode = 0; episode < 6; episode += 1) {
      const trajectory = await playCorridor(task, random, {
        noise: episode % 2 === 0 ? 0.1 : 0.5,
        maxSteps: 8,
      });
      await buffer.add(trajectoryToTransitions({ ...trajectory, id: `${task.id}/${episode}` }));
    }
  }
  return buffer;
}

/**
 * The corridor LLM policy of the loop tests: score mode, no history, a short prompt; acting
 * in process, or through the OpenAI-compatible server at `serverBaseURL`.
 */
export function loopPolicy(workDirectory: string, serverBaseURL?: string): Promise<LlmPolicy> {
  return corridorLlmPolicy({
    ...(serverBaseURL
      ? {
          runtime: new OpenAICompatibleRuntime({
            baseURL: serverBaseURL,
            model: DEFAULT_MODEL_NAME,
            modelPath: resolveModelPath('local').path,
          }),
        }
      : {}),
    actionSelection: 'score',
    prompt: {
      agentInstructions: '',
      systemPrompt:
        'You are in a corridor of rooms. Take the key, then open the door. Reply with one action inside <action></action>.',
      historyWindow: 0,
    },
    workDirectory,
  });
}

/** Expert play (no noise) on `tasks`, `episodes` each: demonstrations for behaviour cloning. */
export async function corridorDemonstrations(
  tasks: readonly Task[],
  episodes: number,
): Promise<Trajectory[]> {
  const random = new SeededRandom(4);
  const demonstrations: Trajectory[] = [];
  for (const task of tasks) {
    for (let episode = 0; episode < episodes; episode += 1) {
      demonstrations.push(await playCorridor(task, random, { noise: 0, maxSteps: 8 }));
    }
  }
  return demonstrations;
}

/**
 * The loop in `runDirectory` with a fresh policy and buffer (`config` overrides the test
 * config); the policy acts through the server at `serverBaseURL` when given.
 */
export async function corridorLlmLoop(
  runDirectory: string,
  overrides: Partial<DreamGymComponents> = {},
  config: DreamGymConfigInput = {},
  serverBaseURL?: string,
): Promise<{ loop: DreamGymLoop; policy: LlmPolicy }> {
  const tasks = smallCorridorTasks();
  const replayBuffer = await corridorReplayBuffer(tasks);
  await mkdir(runDirectory, { recursive: true });
  const policy = await loopPolicy(join(runDirectory, 'policy-exports'), serverBaseURL);
  const loop = new DreamGymLoop({
    config: { ...llmLoopConfig, ...config },
    components: {
      adapter: createCorridorAdapter(),
      policy,
      experienceModel: new RetrievalExperienceModel(),
      replayBuffer,
      seedTasks: tasks,
      realEnvironment: () => new CorridorEnvironment({ maxSteps: 6 }),
      ...overrides,
    },
    runDirectory,
  });
  return { loop, policy };
}

/**
 * Bundles a TypeScript entry of this repository (workspace imports resolved to their
 * sources) into node_modules/.cache and starts it with `args`; stdout is piped.
 */
export async function startChild(entry: string, args: readonly string[]): Promise<ChildProcess> {
  const root = resolve(import.meta.dirname, '../../..');
  const outfile = join(
    root,
    'node_modules/.cache/dreamgym-test-children',
    `llm-loop-${process.pid}-${Date.now()}.mjs`,
  );
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // Workspace imports resolve to their sources, as in the repository's vitest config.
    alias: Object.fromEntries(
      workspacePackages(root).flatMap(({ entries }) =>
        entries.map(({ specifier, source }) => [specifier, source]),
      ),
    ),
    outfile,
    logLevel: 'silent',
  });
  return spawn(process.execPath, [outfile, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}
