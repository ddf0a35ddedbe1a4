/**
 * Offline exploration data on the real engine: random and epsilon-expert episodes on
 * ALFWorld train games, written as core `Trajectory` JSONL. The paper seeds the replay
 * buffer with demonstrations mixed with exploration, so that the experience model also
 * sees failures, dead ends and `Nothing happens.`, which expert data never shows.
 */
import { join } from 'node:path';
import {
  ConfigError,
  JsonlWriter,
  type Observation,
  parseOptions,
  SeededRandom,
  type Step,
  type Task,
  TrajectorySchema,
} from '@dreamgym/core';
import { z } from 'zod';
import { GAME_FILE, readAlfworldGameFile } from '../datasets/game-files.js';
import type { AlfworldRealEnvironment } from './alfworld-real-environment.js';
import { connectAlfworldReal } from './connect.js';
import { AlfworldRealOptionsSchema } from './options.js';

/** Options of {@link exploreAlfworld}. */
export const ExploreAlfworldOptionsSchema = z.object({
  /** JSONL file the trajectories are written to (its folder is created). */
  output: z.string().min(1),
  /** Append to `output` instead of replacing it. Default false. */
  append: z.boolean().default(false),
  /** Number of episodes to play. Default 100. */
  episodes: z.number().int().positive().default(100),
  /**
   * Share of episodes played by the uniformly random policy over admissible commands; the
   * others are epsilon-expert. Default 0.5.
   */
  randomShare: z.number().min(0).max(1).default(0.5),
  /**
   * Epsilon of the epsilon-expert policy: at each step, a random admissible command with
   * probability epsilon, else the first command of the planner's plan from the current
   * state. Default 0.3.
   */
  epsilon: z.number().min(0).max(1).default(0.3),
  /** Seed of the policies and of the game order. Default 0. */
  seed: z.number().int().default(0),
  /** Step limit per episode. Default 50. */
  maxSteps: z.number().int().positive().default(50),
  /**
   * Train games to play (`train/<task>/<trial>`), cycled in a seeded shuffle. Default: all
   * train games of the server. Evaluation splits are refused: exploration data feeds
   * training and replay buffers.
   */
  games: z.array(z.string().min(1)).min(1).optional(),
  /** Game-file folder (`train/` ...). Default: the connector's, else the server's `/health`. */
  dataDir: z.string().min(1).optional(),
  /** Attach to this server instead of starting one. */
  url: AlfworldRealOptionsSchema.shape.url,
  /** Python for the started server. */
  pythonPath: AlfworldRealOptionsSchema.shape.pythonPath,
  /** Milliseconds per request. Default 60 000. */
  requestTimeoutMs: AlfworldRealOptionsSchema.shape.requestTimeoutMs,
});
/** Options of {@link exploreAlfworld} as a caller writes them. */
export type ExploreAlfworldOptions = z.input<typeof ExploreAlfworldOptionsSchema>;

/** What {@link exploreAlfworld} wrote. */
export interface ExploreAlfworldSummary {
  /** The JSONL file. */
  output: string;
  /** Trajectories written. */
  episodes: number;
  /** Episodes that ended with the task done. */
  successes: number;
  /** Episodes (and successes) per policy. */
  byPolicy: Record<'random' | 'epsilon-expert', { episodes: number; successes: number }>;
  /** Real transitions played. */
  steps: number;
}

type ExplorationPolicy = 'random' | 'epsilon-expert';

function assertTrainGame(game: string): void {
  if (!game.startsWith('train/')) {
    throw new ConfigError(
      `Exploration plays train games only (its trajectories feed training and replay buffers); ${JSON.stringify(game)} is not under train/.`,
      { field: 'games' },
    );
  }
}

async function playEpisode(
  environment: AlfworldRealEnvironment,
  task: Task,
  policy: ExplorationPolicy,
  epsilon: number,
  random: SeededRandom,
): Promise<{ steps: Step[]; finalObservation: Observation; success: boolean }> {
  let observation = await environment.reset(task);
  const steps: Step[] = [];
  for (;;) {
    const admissible = observation.actions ?? [];
    const plan = environment.expertPlan();
    const followExpert =
      policy === 'epsilon-expert' &&
      plan !== undefined &&
      plan.length > 0 &&
      random.float() >= epsilon;
    let action: string;
    if (followExpert) action = plan![0]!;
    else if (admissible.length > 0) action = random.choice(admissible);
    else action = 'look';
    const result = await environment.step(action);
    steps.push({
      observation,
      action,
      reward: result.reward,
      done: result.done,
      info: { policy: followExpert ? 'expert' : 'random' },
    });
    observation = result.observation;
    if (result.done)
      return { steps, finalObservation: observation, success: result.info.won === true };
  }
}

/**
 * Plays `episodes` random and epsilon-expert episodes on train games with the real engine
 * and writes them as `Trajectory` JSONL (`source: 'offline'`: collected before training,
 * like the demonstrations; `meta.exploration` names the policy). Starts a server unless
 * `url` is given.
 *
 * @example
 * await exploreAlfworld({ output: 'data/alfworld-exploration.jsonl', episodes: 200, dataDir });
 */
export async function exploreAlfworld(
  input: ExploreAlfworldOptions,
): Promise<ExploreAlfworldSummary> {
  const options = parseOptions(ExploreAlfworldOptionsSchema, input, 'exploration');
  for (const game of options.games ?? []) assertTrainGame(game);
  const random = new SeededRandom(options.seed);
  const environment = await connectAlfworldReal({
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.url === undefined ? {} : { url: options.url }),
    ...(options.pythonPath === undefined ? {} : { pythonPath: options.pythonPath }),
    requestTimeoutMs: options.requestTimeoutMs,
    maxSteps: options.maxSteps,
    expertPlan: options.randomShare < 1,
  });
  const summary: ExploreAlfworldSummary = {
    output: options.output,
    episodes: 0,
    successes: 0,
    byPolicy: {
      random: { episodes: 0, successes: 0 },
      'epsilon-expert': { episodes: 0, successes: 0 },
    },
    steps: 0,
  };
  const writer = await JsonlWriter.open(options.output, TrajectorySchema, {
    append: options.append,
  });
  try {
    const dataDir = options.dataDir ?? (await environment.serverInfo()).data_dir;
    const games = random.shuffle([...(options.games ?? (await environment.games('train')))]);
    const tasks = new Map<string, Task>();
    for (let index = 0; index < options.episodes; index += 1) {
      const game = games[index % games.length]!;
      let task = tasks.get(game);
      if (task === undefined) {
        task = await readAlfworldGameFile(join(dataDir, game, GAME_FILE), game);
        tasks.set(game, task);
      }
      const policy: ExplorationPolicy =
        random.float() < options.randomShare ? 'random' : 'epsilon-expert';
      const episode = await playEpisode(environment, task, policy, options.epsilon, random);
      await writer.write({
        id: `explore:${options.seed}:${index}:${game}`,
        task,
        steps: episode.steps,
        finalObservation: episode.finalObservation,
        source: 'offline',
        success: episode.success,
        meta: {
          exploration: policy,
          ...(policy === 'epsilon-expert' ? { epsilon: options.epsilon } : {}),
          seed: options.seed,
        },
      });
      summary.episodes += 1;
      summary.steps += episode.steps.length;
      summary.byPolicy[policy].episodes += 1;
      if (episode.success) {
        summary.successes += 1;
        summary.byPolicy[policy].successes += 1;
      }
    }
  } finally {
    await writer.close();
    await environment.close();
  }
  return summary;
}
