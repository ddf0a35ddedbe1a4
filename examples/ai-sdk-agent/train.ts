/**
 * Trains the agent of `agent.ts`, unchanged, in DreamGym's synthetic ALFWorld: SmolLM2 is
 * served by the same server as `dreamgym model serve`, the agent's AI SDK model calls it
 * through a capturing `fetch`, its tools are the synthetic environment, and after each
 * iteration the new LoRA adapter is loaded into the server, so the agent's next calls are
 * answered by it.
 *
 *   npx tsx examples/ai-sdk-agent/train.ts --iterations 3
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AgentTrainer, type EnvironmentEpisode, ModelCallCapture } from '@dreamgym/agents';
import { aiSdkTools } from '@dreamgym/agents/ai-sdk';
import { setUpDomain } from '@dreamgym/cli';
import { syntheticEnvironmentFromConfig } from '@dreamgym/core';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import { solveTask } from './agent.js';

/** What {@link startAgentTraining} needs; everything but the data has a default. */
export interface AgentTrainingOptions {
  dataDir: string;
  runDirectory: string;
  trainTasks?: number;
  groupSize?: number;
  tasksPerIteration?: number;
  maxSteps?: number;
  /** Reward of an episode judged outside the environment (default: the environment's own). */
  judge?: (episode: EnvironmentEpisode) => number | undefined;
  log?: (line: string) => void;
}

/** The model server, the capture, and a trainer whose `play` runs the agent of `agent.ts`. */
export async function startAgentTraining(options: AgentTrainingOptions): Promise<{
  trainer: AgentTrainer;
  server: LlamaServer;
  capture: ModelCallCapture;
  close: () => Promise<void>;
}> {
  const domain = await setUpDomain({
    domain: 'alfworld',
    data: resolve(options.dataDir, 'alfworld'),
    trainTasks: options.trainTasks ?? 8,
    evalTasks: 1,
  });
  const model = await LlamaChatModel.load({ model: 'local', contextSize: 4096, concurrency: 1 });
  const server = await startLlamaServer({ model, maxBodyBytes: 4 << 20 });
  const capture = new ModelCallCapture();
  const provider = createOpenAICompatible({
    name: 'dreamgym',
    baseURL: server.baseURL,
    fetch: capture.fetch,
  });
  const maxSteps = options.maxSteps ?? 10;
  try {
    const trainer = await AgentTrainer.start({
      baseURL: server.baseURL,
      model: server.modelName,
      modelPath: model.path,
      capture,
      adapter: domain.adapter,
      tasks: domain.seedTasks,
      environment: () =>
        syntheticEnvironmentFromConfig(
          { maxSteps },
          {
            experienceModel: domain.experienceModel,
            retriever: domain.replayBuffer,
            adapter: domain.adapter,
          },
        ),
      play: async (episode) => {
        try {
          await solveTask(episode.prompt, {
            model: provider(server.modelName),
            tools: aiSdkTools(episode),
            maxSteps: maxSteps + 1,
          });
        } finally {
          const reward = options.judge?.(episode);
          if (reward !== undefined) episode.reportReward(reward);
        }
      },
      runDirectory: options.runDirectory,
      groupSize: options.groupSize ?? 4,
      tasksPerIteration: options.tasksPerIteration ?? 2,
      maxSteps,
      trainer: { learningRate: 1e-4, lora: { rank: 8, topLayers: 4 } },
      ...(options.log ? { log: options.log } : {}),
    });
    return {
      trainer,
      server,
      capture,
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
      iterations: { type: 'string', default: '3' },
      run: { type: 'string', default: 'runs/ai-sdk-agent' },
    },
  });
  const training = await startAgentTraining({
    dataDir: process.env.DREAMGYM_DATA_DIR ?? '../shared/data',
    runDirectory: values.run,
    log: (line) => console.log(line),
  });
  try {
    await training.trainer.train(Number(values.iterations));
    console.log(`The agent's calls now go to ${training.trainer.servedModel}.`);
  } finally {
    await training.close();
  }
}
