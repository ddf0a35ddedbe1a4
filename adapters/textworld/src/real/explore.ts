/**
 * Offline exploration data on the real engine: random and perturbed-walkthrough episodes on
 * the training games, written as core `Trajectory` JSONL. The replay buffer then holds
 * failures as well as the walkthroughs' successes: burned and eaten ingredients (lost games),
 * meals prepared without an ingredient, refusals, step limits.
 */
import {
  ConfigError,
  type Observation,
  parseOptions,
  SeededRandom,
  type Step,
  type Task,
  TrajectorySchema,
} from '@dreamgym/core';
import { JsonlWriter } from '@dreamgym/core/mdp';
import { z } from 'zod';
import { loadTextworldTasks } from '../datasets/tasks.js';
import { loadTextworldTrajectories } from '../datasets/trajectories.js';
import { connectTextworldReal } from './connect.js';
import { TextworldRealOptionsSchema } from './options.js';
import type { TextworldRealEnvironment } from './textworld-real-environment.js';

/**
 * How a perturbed-walkthrough episode departs from the game's walkthrough (one kind, drawn
 * per episode): `skip` leaves out one command that is not a `go`, `inventory` or `examine` and
 * keeps replaying; `epsilon` plays a random admissible command instead of the next one with
 * probability `epsilon` at each step; `prefix` follows the walkthrough for a random number of
 * commands, then acts randomly.
 */
export const TEXTWORLD_EXPLORATION_PERTURBATIONS = ['skip', 'epsilon', 'prefix'] as const;
type Perturbation = (typeof TEXTWORLD_EXPLORATION_PERTURBATIONS)[number];

/** Options of {@link exploreTextworld}. */
export const ExploreTextworldOptionsSchema = z.object({
  /** JSONL file the trajectories are written to (its folder is created). */
  output: z.string().min(1),
  /** Append to `output` instead of replacing it. Default false. */
  append: z.boolean().default(false),
  /** The data directory (`tasks.jsonl`, `expert_trajectories.jsonl`, `games/`). */
  dataDir: z.string().min(1),
  /** Episodes to play. Default 100. */
  episodes: z.number().int().positive().default(100),
  /**
   * Share of episodes played by the uniformly random policy over admissible commands (in a
   * seeded order); the others replay the game's walkthrough with one perturbation. Default 0.5.
   */
  randomShare: z.number().min(0).max(1).default(0.5),
  /** The perturbations a perturbed-walkthrough episode draws its one from. Default all. */
  perturbations: z
    .array(z.enum(TEXTWORLD_EXPLORATION_PERTURBATIONS))
    .min(1)
    .default([...TEXTWORLD_EXPLORATION_PERTURBATIONS]),
  /** Probability of a random command at each step of an `epsilon` episode. Default 0.3. */
  epsilon: z.number().min(0).max(1).default(0.3),
  /** Seed of the policies, the perturbations and the game order. Default 0. */
  seed: z.number().int().default(0),
  /** Step limit per episode. Default 50. */
  maxSteps: z.number().int().positive().default(50),
  /**
   * Episodes played at once, each on its own engine server (one core each). The output is the
   * same for any value: episode `i` has its own seeded generator and is written in order.
   * Default 1.
   */
  concurrency: z.number().int().min(1).max(16).default(1),
  /** Python for the started servers. */
  pythonPath: TextworldRealOptionsSchema.shape.pythonPath,
});

/** The policies of exploration episodes (`meta.exploration` of each trajectory). */
export type TextworldExplorationPolicy = 'random' | 'perturbed-walkthrough';

/** One episode written, reported to `onEpisode`. */
export interface TextworldExplorationProgress {
  /** 0-based episode index (the order of the output). */
  index: number;
  /** Episodes written so far, this one included. */
  completed: number;
  total: number;
  game: string;
  policy: TextworldExplorationPolicy;
  success: boolean;
  truncated: boolean;
  steps: number;
}

/** Options of {@link exploreTextworld} as a caller writes them. */
export type ExploreTextworldOptions = z.input<typeof ExploreTextworldOptionsSchema> & {
  /** Called after each episode is written, in episode order. */
  onEpisode?: (progress: TextworldExplorationProgress) => void;
};

/** What {@link exploreTextworld} wrote. */
export interface ExploreTextworldSummary {
  output: string;
  episodes: number;
  successes: number;
  /** Episodes the game ended with a loss (a burned or eaten ingredient). */
  losses: number;
  /** Episodes cut by `maxSteps`. */
  truncated: number;
  /** Real transitions played. */
  steps: number;
  byPolicy: Record<TextworldExplorationPolicy, { episodes: number; successes: number }>;
}

type Decide = (observation: Observation) => { action: string; info: Record<string, unknown> };

/** Commands whose omission shows no interesting failure. */
const HARMLESS = /^(go |inventory$|look$|examine )/;

function randomCommand(observation: Observation, random: SeededRandom): string {
  const admissible = observation.actions ?? [];
  return admissible.length > 0 ? random.choice(admissible) : 'look';
}

function perturbedWalkthrough(
  commands: readonly string[],
  perturbation: Perturbation,
  epsilon: number,
  random: SeededRandom,
): { decide: Decide; meta: Record<string, unknown> } {
  let skipIndex = -1;
  let prefixLength = commands.length;
  let meta: Record<string, unknown>;
  if (perturbation === 'skip') {
    const important = commands.flatMap((command, index) => (HARMLESS.test(command) ? [] : [index]));
    skipIndex = random.choice(important.length > 0 ? important : commands.map((_, i) => i));
    meta = { perturbation, skipped: { index: skipIndex, command: commands[skipIndex] } };
  } else if (perturbation === 'prefix') {
    prefixLength = 1 + random.int(Math.max(1, commands.length - 1));
    meta = { perturbation, prefix: prefixLength };
  } else {
    meta = { perturbation, epsilon };
  }
  let next = 0;
  const decide: Decide = (observation) => {
    if (next === skipIndex) next += 1;
    const detour = perturbation === 'epsilon' && random.float() < epsilon;
    if (!detour && next < prefixLength) {
      // A command the perturbation made impossible (the knife was never taken) is passed over,
      // up to the next one the engine accepts: the episode keeps the walkthrough's course.
      const admissible = new Set(observation.actions ?? []);
      let found = next;
      while (found < prefixLength && !admissible.has(commands[found]!)) found += 1;
      if (found < prefixLength) {
        next = found + 1;
        return { action: commands[found]!, info: { policy: 'walkthrough' } };
      }
    }
    return { action: randomCommand(observation, random), info: { policy: 'random' } };
  };
  return { decide, meta };
}

async function playEpisode(
  environment: TextworldRealEnvironment,
  task: Task,
  decide: Decide,
): Promise<{ steps: Step[]; final: Observation; won: boolean; lost: boolean; truncated: boolean }> {
  let observation = await environment.reset(task);
  const steps: Step[] = [];
  for (;;) {
    const { action, info } = decide(observation);
    const result = await environment.step(action);
    steps.push({
      observation,
      action,
      reward: result.reward,
      done: result.done,
      ...(result.truncated ? { truncated: true } : {}),
      info,
    });
    observation = result.observation;
    if (result.done) {
      return {
        steps,
        final: observation,
        won: result.info.won === true,
        lost: result.info.lost === true,
        truncated: result.truncated === true,
      };
    }
  }
}

/**
 * Plays exploration episodes on the training games of `dataDir` and writes them as core
 * `Trajectory` JSONL (`source: 'offline'`, `meta.exploration` naming the policy).
 * `dreamgym data explore --domain textworld` calls it, and `dreamgym train` through the
 * exploration cache (`"setup": { "exploration": { "episodes": N } }` in its config).
 *
 * @throws ConfigError when the data directory has no training games with walkthroughs.
 * @example
 * const summary = await exploreTextworld({ dataDir: 'data/textworld', output: 'explore.jsonl', episodes: 40 });
 */
export async function exploreTextworld(
  input: ExploreTextworldOptions,
): Promise<ExploreTextworldSummary> {
  const options = parseOptions(ExploreTextworldOptionsSchema, input, 'TextWorld exploration');
  const tasks: Task[] = [];
  for await (const task of loadTextworldTasks(options.dataDir)) tasks.push(task);
  const walkthroughs = new Map<string, string[]>();
  for await (const trajectory of loadTextworldTrajectories(options.dataDir)) {
    walkthroughs.set(
      trajectory.task.id,
      trajectory.steps.map((step) => step.action),
    );
  }
  const games = tasks.filter((task) => walkthroughs.has(task.id));
  if (games.length === 0) {
    throw new ConfigError(
      `${options.dataDir} has no training games with a recorded walkthrough: build it with buildTextworldDataset({ dir }).`,
      { field: 'dataDir' },
    );
  }
  const random = new SeededRandom(options.seed);
  const order = random.shuffle([...games]);
  const randomEpisodes = new Set(
    random
      .shuffle(Array.from({ length: options.episodes }, (_, index) => index))
      .slice(0, Math.round(options.randomShare * options.episodes)),
  );
  const concurrency = Math.min(options.concurrency, options.episodes);
  const environments = await Promise.all(
    Array.from({ length: concurrency }, () =>
      connectTextworldReal({
        dataDir: options.dataDir,
        maxSteps: options.maxSteps,
        ...(options.pythonPath ? { pythonPath: options.pythonPath } : {}),
      }),
    ),
  );
  const writer = await JsonlWriter.open(options.output, TrajectorySchema, {
    append: options.append,
  });
  const summary: ExploreTextworldSummary = {
    output: options.output,
    episodes: 0,
    successes: 0,
    losses: 0,
    truncated: 0,
    steps: 0,
    byPolicy: {
      random: { episodes: 0, successes: 0 },
      'perturbed-walkthrough': { episodes: 0, successes: 0 },
    },
  };
  try {
    for (let start = 0; start < options.episodes; start += concurrency) {
      const batch = Array.from(
        { length: Math.min(concurrency, options.episodes - start) },
        (_, offset) => start + offset,
      );
      const played = await Promise.all(
        batch.map(async (index, slot) => {
          const task = order[index % order.length]!;
          const episodeRandom = new SeededRandom(options.seed).fork(`episode-${index}`);
          const policy: TextworldExplorationPolicy = randomEpisodes.has(index)
            ? 'random'
            : 'perturbed-walkthrough';
          let decide: Decide;
          let meta: Record<string, unknown> = {};
          if (policy === 'random') {
            decide = (observation) => ({
              action: randomCommand(observation, episodeRandom),
              info: { policy: 'random' },
            });
          } else {
            const perturbed = perturbedWalkthrough(
              walkthroughs.get(task.id)!,
              episodeRandom.choice(options.perturbations),
              options.epsilon,
              episodeRandom,
            );
            decide = perturbed.decide;
            meta = perturbed.meta;
          }
          const episode = await playEpisode(environments[slot]!, task, decide);
          return { index, task, policy, meta, episode };
        }),
      );
      for (const { index, task, policy, meta, episode } of played) {
        await writer.write({
          id: `explore:${options.seed}:${index}`,
          task,
          steps: episode.steps,
          finalObservation: episode.final,
          source: 'offline',
          success: episode.won,
          meta: { exploration: policy, ...meta, lost: episode.lost },
        });
        summary.episodes += 1;
        summary.steps += episode.steps.length;
        if (episode.won) summary.successes += 1;
        if (episode.lost) summary.losses += 1;
        if (episode.truncated) summary.truncated += 1;
        summary.byPolicy[policy].episodes += 1;
        if (episode.won) summary.byPolicy[policy].successes += 1;
        input.onEpisode?.({
          index,
          completed: summary.episodes,
          total: options.episodes,
          game: task.id,
          policy,
          success: episode.won,
          truncated: episode.truncated,
          steps: episode.steps.length,
        });
      }
    }
  } finally {
    await writer.close();
    await Promise.all(environments.map((environment) => environment.close()));
  }
  return summary;
}
