/**
 * What the agent examples share: an agent, unchanged, trained in DreamGym's synthetic
 * ALFWorld. SmolLM2 is served by the same server as `dreamgym model serve`, the agent's client
 * calls it through a capturing `fetch`, its tools are the synthetic environment, and after
 * each iteration the new LoRA adapter is loaded into the server, so the agent's next calls are
 * answered by it. Each example's `train.ts` says how its framework's agent plays an episode.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AgentTrainer, type EnvironmentEpisode, ModelCallCapture } from '@dreamgym/agents';
import { type DomainSetup, setUpDomain } from '@dreamgym/run';
import { syntheticEnvironmentFromConfig } from '@dreamgym/core';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';

/**
 * Where the agent's client sends its calls: an OpenAI base URL, a model name, a `fetch` (the
 * capture's), and the capture itself for agents recorded another way (AI SDK middleware).
 */
export interface AgentEndpoint {
  baseURL: string;
  model: string;
  fetch: typeof fetch;
  capture: ModelCallCapture;
}

/** Plays one episode with the agent (its steps at most `maxSteps`). */
export type PlayEpisode = (
  episode: EnvironmentEpisode,
  endpoint: AgentEndpoint,
  maxSteps: number,
) => Promise<unknown>;

/** What {@link startAgentTraining} needs; everything but the data has a default. */
export interface AgentTrainingOptions {
  /** How the example's agent plays an episode. */
  play: PlayEpisode;
  dataDir: string;
  runDirectory: string;
  trainTasks?: number;
  /** valid_seen tasks loaded as `domain.evaluationTasks`. Default 1. */
  evalTasks?: number;
  /**
   * Offline trajectories that ground the synthetic environment: the first N (default all,
   * ~3,500 games; set-up then takes ~35 s of CPU, against ~2 s for 200).
   */
  offlineLimit?: number;
  groupSize?: number;
  tasksPerIteration?: number;
  maxSteps?: number;
  /**
   * Reward of an episode judged outside the environment (default: the environment's own);
   * success stays the environment's.
   */
  judge?: (episode: EnvironmentEpisode) => number | undefined;
  log?: (line: string) => void;
}

/** The model server, the capture, and a trainer whose `play` runs the agent of `agent.ts`. */
export async function startAgentTraining(options: AgentTrainingOptions): Promise<{
  trainer: AgentTrainer;
  server: LlamaServer;
  capture: ModelCallCapture;
  /** The ALFWorld set-up: evaluation tasks, the real engine. */
  domain: DomainSetup;
  close: () => Promise<void>;
}> {
  const domain = await setUpDomain({
    domain: 'alfworld',
    data: resolve(options.dataDir, 'alfworld'),
    trainTasks: options.trainTasks ?? 8,
    evalTasks: options.evalTasks ?? 1,
    ...(options.offlineLimit === undefined ? {} : { offlineLimit: options.offlineLimit }),
  });
  const model = await LlamaChatModel.load({ model: 'local', contextSize: 4096, concurrency: 1 });
  const server = await startLlamaServer({ model, maxBodyBytes: 4 << 20 });
  const capture = new ModelCallCapture();
  const endpoint = { baseURL: server.baseURL, model: server.modelName, fetch: capture.fetch, capture };
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
          await options.play(episode, endpoint, maxSteps);
        } finally {
          const reward = options.judge?.(episode);
          if (reward !== undefined) episode.reportReward(reward, episode.success);
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
      domain,
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

/** Trains with `play` for `--iterations` (default 3) into `--run` (default runs/<name>). */
export async function trainFromCommandLine(name: string, play: PlayEpisode): Promise<void> {
  const { values } = parseArgs({
    options: {
      iterations: { type: 'string', default: '3' },
      run: { type: 'string', default: `runs/${name}` },
    },
  });
  const training = await startAgentTraining({
    play,
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
