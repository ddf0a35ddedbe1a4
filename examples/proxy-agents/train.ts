/**
 * Trains an agent that DreamGym does not touch, through its base URL: the Python agent
 * (`python-agent/agent.py`, the `openai` SDK and the MCP Python client) or the TypeScript one
 * (`typescript-agent/agent.ts`, the `openai` package and the MCP TypeScript client), each started
 * as a plain subprocess per episode with OPENAI_BASE_URL at the recording proxy and MCP_URL at the
 * environment's MCP tools. SmolLM2 is served by `dreamgym model serve`'s server in this process;
 * `ProxyTrainer` updates its LoRA adapter from the proxy's records and routes the agent's later
 * calls to it.
 *
 *   npx tsx examples/proxy-agents/train.ts --agent python --iterations 2
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { promisify } from 'node:util';
import type { Environment, StepResult, Task } from '@dreamgym/core';
import {
  CorridorEnvironment,
  corridorTasks,
  createCorridorAdapter,
} from '@dreamgym/core/testing';
import { ProxyTrainer, type ProxyTrainerOptions } from '@dreamgym/agents/proxy';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';

const root = resolve(import.meta.dirname, '..', '..');

/** The two agents: the command that starts each (its files are never changed). */
export const AGENTS = {
  python: {
    file: join(import.meta.dirname, 'python-agent', 'agent.py'),
    command: (file: string) => [join(root, '.venv', 'bin', 'python'), file],
  },
  typescript: {
    file: join(import.meta.dirname, 'typescript-agent', 'agent.ts'),
    command: (file: string) => [process.execPath, '--import', 'tsx', file],
  },
} as const;
export type AgentName = keyof typeof AGENTS;

/**
 * The corridor with a per-step rubric: a step that moves towards the task pays 0.1 more than
 * one that does not, and the task's own reward (1 on success) on top, so the episodes of one
 * group differ even when none succeeds.
 */
class ShapedCorridor implements Environment {
  private readonly inner = new CorridorEnvironment({ maxSteps: 20 });
  reset(task: Task) {
    return this.inner.reset(task);
  }
  async step(action: string): Promise<StepResult> {
    const result = await this.inner.step(action);
    const shaped = result.info.invalidAction === true ? -0.1 : 0.1 / Math.max(1, action.length / 8);
    return { ...result, reward: result.reward + shaped };
  }
  close() {
    return this.inner.close();
  }
}

/** Options of {@link startProxyTraining}. */
export interface ProxyTrainingOptions {
  agent: AgentName;
  runDirectory: string;
  groupSize?: number;
  tasksPerIteration?: number;
  maxSteps?: number;
  /** Model turns per episode the agent takes at most (its MAX_TURNS). */
  maxTurns?: number;
  log?: (line: string) => void;
}

/** The model server and a trainer whose episodes run the agent as a subprocess. */
export async function startProxyTraining(options: ProxyTrainingOptions): Promise<{
  trainer: ProxyTrainer;
  server: LlamaServer;
  close: () => Promise<void>;
}> {
  const model = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  const server = await startLlamaServer({ model, maxBodyBytes: 4 << 20 });
  const { file, command } = AGENTS[options.agent];
  const [program, ...args] = command(file);
  const trainerOptions: ProxyTrainerOptions = {
    upstream: server.baseURL,
    model: server.modelName,
    modelPath: model.path,
    environment: () => new ShapedCorridor(),
    adapter: createCorridorAdapter(),
    tasks: corridorTasks(3),
    groupSize: options.groupSize ?? 2,
    tasksPerIteration: options.tasksPerIteration ?? 1,
    maxSteps: options.maxSteps ?? 3,
    runDirectory: options.runDirectory,
    trainer: { learningRate: 1e-3 },
    // The environment's reward, less a little per answer token: the episodes of a group differ
    // even when the small model plays them alike, so every iteration has a learning signal.
    judge: (episode) =>
      episode.reward -
      0.001 * episode.records.reduce((total, record) => total + record.completionTokenIds.length, 0),
    ...(options.log ? { log: options.log } : {}),
    run: async (episode) => {
      await promisify(execFile)(program!, [...args, ...[]], {
        cwd: root,
        timeout: 300_000,
        env: {
          ...process.env,
          OPENAI_BASE_URL: episode.openaiBaseURL,
          OPENAI_API_KEY: 'not-needed',
          OPENAI_MODEL: episode.model,
          MCP_URL: episode.mcpURL,
          MAX_TURNS: String(options.maxTurns ?? 3),
        },
      });
    },
  };
  try {
    const trainer = await ProxyTrainer.start(trainerOptions);
    return {
      trainer,
      server,
      close: async () => {
        await trainer.close();
        await server.close();
        await model.dispose();
      },
    };
  } catch (error) {
    await server.close();
    await model.dispose();
    throw error;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      agent: { type: 'string', default: 'python' },
      iterations: { type: 'string', default: '2' },
      run: { type: 'string', default: 'runs/proxy-agent' },
    },
  });
  const training = await startProxyTraining({
    agent: values.agent as AgentName,
    runDirectory: values.run!,
    log: (line) => console.error(line),
  });
  try {
    await training.trainer.train(Number(values.iterations));
  } finally {
    await training.close();
  }
}
