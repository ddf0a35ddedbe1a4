/**
 * Offline exploration data on the real engine: random and perturbed-expert (or planner
 * epsilon-expert) episodes on ALFWorld train games, written as core `Trajectory` JSONL. The
 * paper seeds the replay buffer with demonstrations mixed with exploration, so that the
 * experience model also sees failures, dead ends and `Nothing happens.`, which expert data
 * never shows.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  ConfigError,
  DatasetNotFoundError,
  type Observation,
  parseOptions,
  SeededRandom,
  type Step,
  type Task,
  TrajectorySchema,
} from '@dreamgym/core';
import { JsonlWriter, type TrajectoryInput } from '@dreamgym/core/mdp';
import { z } from 'zod';
import {
  EXPERT_TRAJECTORIES_FILE,
  loadAlfworldExpertTrajectories,
} from '../datasets/expert-trajectories.js';
import { GAME_FILE, readAlfworldGameFile } from '../datasets/game-files.js';
import type { AlfworldRealEnvironment } from './alfworld-real-environment.js';
import { connectAlfworldReal } from './connect.js';
import { AlfworldRealOptionsSchema } from './options.js';

/**
 * How a perturbed-expert episode departs from the game's recorded expert commands (one kind,
 * drawn per episode): `skip` leaves out one command that is not a `go to` (the take, heat,
 * cool, clean, put or use step) and keeps replaying; `epsilon` takes a random admissible
 * command instead of the next recorded one with probability `epsilon` at each step; `prefix`
 * follows the expert for a random number of commands, then acts randomly.
 */
export const ALFWORLD_EXPLORATION_PERTURBATIONS = ['skip', 'epsilon', 'prefix'] as const;
type Perturbation = (typeof ALFWORLD_EXPLORATION_PERTURBATIONS)[number];

/** Options of {@link exploreAlfworld}. */
export const ExploreAlfworldOptionsSchema = z.object({
  /** JSONL file the trajectories are written to (its folder is created). */
  output: z.string().min(1),
  /** Append to `output` instead of replacing it. Default false. */
  append: z.boolean().default(false),
  /** Number of episodes to play. Default 100. */
  episodes: z.number().int().positive().default(100),
  /**
   * Share of episodes played by the uniformly random policy over admissible commands (rounded
   * to a whole number of episodes, in a seeded order); the others are played by
   * `expertPolicy`. Default 0.5.
   */
  randomShare: z.number().min(0).max(1).default(0.5),
  /**
   * The policy of the episodes that are not random. `perturbed` (default): `perturbed-expert`,
   * a replay of the game's recorded expert commands (`expert_trajectories.jsonl` of the data
   * folder) with one seeded perturbation per episode (see `perturbations`); it needs no
   * planner, so an episode costs what its engine steps cost. `planner`: `epsilon-expert`, the
   * first command of the PDDL planner's plan from the current state, or with probability
   * `epsilon` a random admissible command; the planner runs after every step (tens of seconds
   * per episode).
   */
  expertPolicy: z.enum(['perturbed', 'planner']).default('perturbed'),
  /**
   * The perturbations a perturbed-expert episode draws its one from, uniformly. Default all:
   * `skip`, `epsilon`, `prefix` (see {@link ALFWORLD_EXPLORATION_PERTURBATIONS}).
   */
  perturbations: z
    .array(z.enum(ALFWORLD_EXPLORATION_PERTURBATIONS))
    .min(1)
    .default([...ALFWORLD_EXPLORATION_PERTURBATIONS]),
  /**
   * Probability of a random admissible command at each step of an `epsilon` perturbed-expert
   * episode and of a planner epsilon-expert episode. Default 0.3.
   */
  epsilon: z.number().min(0).max(1).default(0.3),
  /** Seed of the policies, the perturbations and the game order. Default 0. */
  seed: z.number().int().default(0),
  /** Step limit per episode: an episode cut by it ends with `truncated` on its last step. Default 50. */
  maxSteps: z.number().int().positive().default(50),
  /**
   * Train games to play (`train/<task>/<trial>`), cycled in a seeded shuffle. Default: all
   * train games of the server (with perturbed-expert episodes, those that have an expert
   * record). Evaluation splits are refused: exploration data feeds training and replay
   * buffers.
   */
  games: z.array(z.string().min(1)).min(1).optional(),
  /** Game-file folder (`train/` ...). Default: the connector's, else the server's `/health`. */
  dataDir: z.string().min(1).optional(),
  /**
   * Episodes played at once, each on its own engine session: started servers are one per
   * session (a server runs one engine step at a time), so 2 uses two cores. With `url`, the
   * sessions share that one server and gain nothing. The output is the same for any value:
   * episode `i` is played with its own seeded generator and written in episode order. Default 1.
   */
  concurrency: z.number().int().min(1).max(16).default(1),
  /** Attach to this server instead of starting one. */
  url: AlfworldRealOptionsSchema.shape.url,
  /** Python for the started server. */
  pythonPath: AlfworldRealOptionsSchema.shape.pythonPath,
  /** Milliseconds per request. Default 60 000. */
  requestTimeoutMs: AlfworldRealOptionsSchema.shape.requestTimeoutMs,
});

/** The policies of exploration episodes (`meta.exploration` of each trajectory). */
export type AlfworldExplorationPolicy = 'random' | 'perturbed-expert' | 'epsilon-expert';

/** One episode written, reported to `onEpisode`. */
export interface AlfworldExplorationProgress {
  /** 0-based episode index (the order of the output). */
  index: number;
  /** Episodes written so far, this one included (`index + 1`). */
  completed: number;
  /** Episodes to play. */
  total: number;
  /** `train/<task>/<trial>`. */
  game: string;
  policy: AlfworldExplorationPolicy;
  success: boolean;
  /** Whether `maxSteps` cut the episode. */
  truncated: boolean;
  /** Commands played. */
  steps: number;
}

/** Options of {@link exploreAlfworld} as a caller writes them. */
export type ExploreAlfworldOptions = z.input<typeof ExploreAlfworldOptionsSchema> & {
  /**
   * Called after each episode is written, in episode order (a CLI prints progress from it).
   * When it throws, exploration stops and rejects with its error.
   */
  onEpisode?: (progress: AlfworldExplorationProgress) => void;
};

/** Episodes, successes and truncations of one policy. */
export interface AlfworldExplorationCounts {
  episodes: number;
  successes: number;
  /** Episodes cut by `maxSteps`. */
  truncated: number;
}

/** What {@link exploreAlfworld} wrote. */
export interface ExploreAlfworldSummary {
  /** The JSONL file. */
  output: string;
  /** Trajectories written. */
  episodes: number;
  /** Episodes that ended with the task done. */
  successes: number;
  /** Episodes cut by `maxSteps`. */
  truncated: number;
  /** Episodes, successes and truncations per policy. */
  byPolicy: Record<AlfworldExplorationPolicy, AlfworldExplorationCounts>;
  /** Real transitions played. */
  steps: number;
}

/** What a policy chose, and the step's `info`. */
interface Decision {
  action: string;
  info: Record<string, unknown>;
}
type Decide = (observation: Observation) => Decision;

interface PlayedEpisode {
  steps: Step[];
  finalObservation: Observation;
  success: boolean;
  truncated: boolean;
}

/** A command only changes where the agent is; skipping it shows no interesting failure. */
const GO_TO = /^go to /;

function assertTrainGame(game: string): void {
  if (!game.startsWith('train/')) {
    throw new ConfigError(
      `Exploration plays train games only (its trajectories feed training and replay buffers); ${JSON.stringify(game)} is not under train/.`,
      { field: 'games' },
    );
  }
}

function randomCommand(observation: Observation, random: SeededRandom): string {
  const admissible = observation.actions ?? [];
  return admissible.length > 0 ? random.choice(admissible) : 'look';
}

/**
 * Plays one episode with `decide`. A step cut by the step limit carries `truncated` (the
 * schema field and `info.truncated`): without it the last random command of a capped episode
 * would look like the command that ended it.
 */
async function playEpisode(
  environment: AlfworldRealEnvironment,
  task: Task,
  decide: Decide,
): Promise<PlayedEpisode> {
  let observation = await environment.reset(task);
  const steps: Step[] = [];
  for (;;) {
    const { action, info } = decide(observation);
    const result = await environment.step(action);
    const truncated = result.truncated === true;
    steps.push({
      observation,
      action,
      reward: result.reward,
      done: result.done,
      ...(truncated ? { truncated: true } : {}),
      info: truncated ? { ...info, truncated: true } : info,
    });
    observation = result.observation;
    if (result.done) {
      return { steps, finalObservation: observation, success: result.info.won === true, truncated };
    }
  }
}

function randomPolicy(random: SeededRandom): Decide {
  return (observation) => ({
    action: randomCommand(observation, random),
    info: { policy: 'random' },
  });
}

function plannerEpsilonExpert(
  environment: AlfworldRealEnvironment,
  epsilon: number,
  random: SeededRandom,
): Decide {
  return (observation) => {
    const plan = environment.expertPlan();
    if (plan !== undefined && plan.length > 0 && random.float() >= epsilon)
      return { action: plan[0]!, info: { policy: 'expert' } };
    return { action: randomCommand(observation, random), info: { policy: 'random' } };
  };
}

/**
 * The perturbed-expert policy over one game's recorded expert commands, and the
 * trajectory's `meta` that names its perturbation. Steps that replay a recorded command have
 * `info.policy: 'expert'`, the others `'random'`; the step played where the `skip`
 * perturbation left a command out carries `info.skippedExpert`.
 */
function perturbedExpert(
  commands: readonly string[],
  perturbation: Perturbation,
  epsilon: number,
  random: SeededRandom,
): { decide: Decide; meta: Record<string, unknown> } {
  let skipIndex = -1;
  let prefixLength = commands.length;
  let meta: Record<string, unknown>;
  if (perturbation === 'skip') {
    const manipulations = commands.flatMap((command, index) =>
      GO_TO.test(command) ? [] : [index],
    );
    skipIndex = random.choice(manipulations.length > 0 ? manipulations : commands.map((_, i) => i));
    meta = { perturbation, skipped: { index: skipIndex, command: commands[skipIndex] } };
  } else if (perturbation === 'prefix') {
    // At least one recorded command, and (when there are two or more) at least one left out.
    prefixLength = 1 + random.int(Math.max(1, commands.length - 1));
    meta = { perturbation, prefix: prefixLength };
  } else {
    meta = { perturbation, epsilon };
  }
  let next = 0;
  const decide: Decide = (observation) => {
    const info: Record<string, unknown> = {};
    if (next === skipIndex) {
      info.skippedExpert = commands[next];
      next += 1;
    }
    // A random command is a detour: the next recorded command stays next.
    const detour = perturbation === 'epsilon' && random.float() < epsilon;
    if (!detour && next < prefixLength) {
      // A recorded command that is not admissible here (the perturbation took away what it
      // needs: the object was never taken, the agent is elsewhere) is skipped, up to the next
      // one that is. `go to` commands are almost always admissible, so this drops only the
      // impossible manipulations and resumes at the expert's next move: the episode keeps the
      // expert's course and shows the perturbation's consequence (the task left undone),
      // instead of turning into the random walk that random episodes already cover.
      const admissible = new Set(observation.actions ?? []);
      let found = next;
      while (found < prefixLength && !admissible.has(commands[found]!)) found += 1;
      if (found < prefixLength) {
        if (found > next) info.skippedInadmissible = commands.slice(next, found);
        next = found + 1;
        return { action: commands[found]!, info: { policy: 'expert', ...info } };
      }
    }
    // Past the prefix, past the last recorded command, or no recorded command left that is
    // admissible here: random until the episode ends (won by chance, or cut by maxSteps).
    return { action: randomCommand(observation, random), info: { policy: 'random', ...info } };
  };
  return { decide, meta };
}

/** The recorded expert commands of each game of `dataDir`'s `expert_trajectories.jsonl`. */
async function loadExpertCommands(dataDir: string): Promise<Map<string, string[]>> {
  const file = join(dataDir, EXPERT_TRAJECTORIES_FILE);
  if (!existsSync(file)) {
    throw new DatasetNotFoundError(
      `Perturbed-expert exploration replays the recorded expert commands of ${file}, which does not exist. Put ALFWorld's expert_trajectories.jsonl in the data folder (or build it with dreamgym data expert), or explore with randomShare 1 or expertPolicy 'planner'.`,
      { path: file },
    );
  }
  const commands = new Map<string, string[]>();
  for await (const trajectory of loadAlfworldExpertTrajectories(dataDir)) {
    commands.set(
      trajectory.task.id,
      trajectory.steps.map((step) => step.action),
    );
  }
  return commands;
}

/** Connects `count` environments; closes those that connected when one fails. */
async function connectAll(
  count: number,
  connect: () => Promise<AlfworldRealEnvironment>,
): Promise<AlfworldRealEnvironment[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, connect));
  const failed = settled.find((result) => result.status === 'rejected');
  const connected = settled.flatMap((result) =>
    result.status === 'fulfilled' ? [result.value] : [],
  );
  if (failed) {
    await Promise.allSettled(connected.map((environment) => environment.close()));
    throw failed.reason;
  }
  return connected;
}

function emptyCounts(): AlfworldExplorationCounts {
  return { episodes: 0, successes: 0, truncated: 0 };
}

/**
 * Plays `episodes` exploration episodes on train games with the real engine and writes them
 * as `Trajectory` JSONL (`source: 'offline'`: collected before training, like the
 * demonstrations; `meta.exploration` names the policy, `meta.perturbation` a perturbed-expert
 * episode's perturbation). By default half are random and half perturbed-expert replays of the
 * recorded expert commands; `expertPolicy: 'planner'` plays planner epsilon-expert episodes
 * instead. Starts a server (one per `concurrency`) unless `url` is given.
 *
 * @example
 * await exploreAlfworld({ output: 'data/alfworld-exploration.jsonl', episodes: 200, dataDir });
 */
export async function exploreAlfworld(
  input: ExploreAlfworldOptions,
): Promise<ExploreAlfworldSummary> {
  const options = parseOptions(ExploreAlfworldOptionsSchema, input, 'exploration');
  const onEpisode = input.onEpisode;
  for (const game of options.games ?? []) assertTrainGame(game);
  const base = new SeededRandom(options.seed);
  const randomCount = Math.round(options.episodes * options.randomShare);
  const expertPolicy: AlfworldExplorationPolicy =
    options.expertPolicy === 'planner' ? 'epsilon-expert' : 'perturbed-expert';
  const usesExpert = randomCount < options.episodes;
  const environments = await connectAll(options.concurrency, () =>
    connectAlfworldReal({
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.url === undefined ? {} : { url: options.url }),
      ...(options.pythonPath === undefined ? {} : { pythonPath: options.pythonPath }),
      requestTimeoutMs: options.requestTimeoutMs,
      maxSteps: options.maxSteps,
      // The planner runs after every step: only the planner policy pays for it.
      expertPlan: usesExpert && expertPolicy === 'epsilon-expert',
    }),
  );
  const summary: ExploreAlfworldSummary = {
    output: options.output,
    episodes: 0,
    successes: 0,
    truncated: 0,
    byPolicy: {
      random: emptyCounts(),
      'perturbed-expert': emptyCounts(),
      'epsilon-expert': emptyCounts(),
    },
    steps: 0,
  };
  let writer: JsonlWriter<typeof TrajectorySchema> | undefined;
  try {
    const first = environments[0]!;
    const dataDir = options.dataDir ?? (await first.serverInfo()).data_dir;
    const expertCommands =
      usesExpert && expertPolicy === 'perturbed-expert'
        ? await loadExpertCommands(dataDir)
        : undefined;
    let pool = options.games ?? (await first.games('train'));
    if (pool.length === 0) {
      throw new ConfigError(
        `The ALFWorld server over ${dataDir} has no train games: exploration has nothing to play. Point dataDir at the folder with train/<task>/<trial>/${GAME_FILE} (downloadAlfworldData).`,
        { field: 'dataDir' },
      );
    }
    if (expertCommands !== undefined) {
      const missing = options.games?.find((game) => !expertCommands.has(game));
      if (missing !== undefined) {
        throw new ConfigError(
          `Game ${JSON.stringify(missing)} has no record in ${join(dataDir, EXPERT_TRAJECTORIES_FILE)}: perturbed-expert episodes replay the recorded expert commands. Leave it out, or explore with randomShare 1 or expertPolicy 'planner'.`,
          { field: 'games' },
        );
      }
      pool = pool.filter((game) => expertCommands.has(game));
      if (pool.length === 0) {
        throw new ConfigError(
          `No train game of ${dataDir} has a record in ${EXPERT_TRAJECTORIES_FILE}: perturbed-expert episodes have nothing to replay. Check the data folder, or explore with randomShare 1.`,
          { field: 'dataDir' },
        );
      }
    }
    const games = base.shuffle([...pool]);
    const policies = base.shuffle(
      Array.from({ length: options.episodes }, (_, index) =>
        index < randomCount ? ('random' as const) : expertPolicy,
      ),
    );
    writer = await JsonlWriter.open(options.output, TrajectorySchema, {
      append: options.append,
    });
    const output = writer;
    const tasks = new Map<string, Promise<Task>>();
    const taskOf = (game: string): Promise<Task> => {
      let task = tasks.get(game);
      if (task === undefined) {
        task = readAlfworldGameFile(join(dataDir, game, GAME_FILE), game);
        tasks.set(game, task);
      }
      return task;
    };

    // Episodes finish out of order with several sessions: each waits in `finished` until
    // the ones before it are written, and one chain of writes keeps the file's lines whole
    // and reports the episodes in the order of the file.
    const finished = new Map<
      number,
      { record: TrajectoryInput; progress: Omit<AlfworldExplorationProgress, 'completed'> }
    >();
    let nextToWrite = 0;
    let writing: Promise<void> = Promise.resolve();
    const flush = (): Promise<void> => {
      writing = writing.then(async () => {
        for (let next = finished.get(nextToWrite); next; next = finished.get(nextToWrite)) {
          finished.delete(nextToWrite);
          nextToWrite += 1;
          const completed = nextToWrite;
          await output.write(next.record);
          onEpisode?.({ ...next.progress, completed });
        }
      });
      return writing;
    };

    let nextEpisode = 0;
    let failed = false;
    const work = async (environment: AlfworldRealEnvironment): Promise<void> => {
      while (!failed && nextEpisode < options.episodes) {
        const index = nextEpisode;
        nextEpisode += 1;
        const game = games[index % games.length]!;
        const policy = policies[index]!;
        // Its own generator per episode: the output does not depend on which session plays it.
        const random = base.fork(`episode:${index}`);
        const task = await taskOf(game);
        let decide: Decide;
        let meta: Record<string, unknown>;
        if (policy === 'random') {
          decide = randomPolicy(random);
          meta = {};
        } else if (policy === 'epsilon-expert') {
          decide = plannerEpsilonExpert(environment, options.epsilon, random);
          meta = { epsilon: options.epsilon };
        } else {
          const perturbation = random.choice(options.perturbations);
          ({ decide, meta } = perturbedExpert(
            expertCommands!.get(game)!,
            perturbation,
            options.epsilon,
            random,
          ));
        }
        const episode = await playEpisode(environment, task, decide);
        const record: TrajectoryInput = {
          id: `explore:${options.seed}:${index}:${game}`,
          task,
          steps: episode.steps,
          finalObservation: episode.finalObservation,
          source: 'offline',
          success: episode.success,
          meta: {
            exploration: policy,
            ...meta,
            ...(episode.truncated ? { truncated: true } : {}),
            seed: options.seed,
          },
        };
        const counts = summary.byPolicy[policy];
        summary.episodes += 1;
        summary.steps += episode.steps.length;
        counts.episodes += 1;
        if (episode.success) {
          summary.successes += 1;
          counts.successes += 1;
        }
        if (episode.truncated) {
          summary.truncated += 1;
          counts.truncated += 1;
        }
        finished.set(index, {
          record,
          progress: {
            index,
            total: options.episodes,
            game,
            policy,
            success: episode.success,
            truncated: episode.truncated,
            steps: episode.steps.length,
          },
        });
        await flush();
      }
    };
    const results = await Promise.allSettled(
      environments.map((environment) =>
        work(environment).catch((error: unknown) => {
          failed = true;
          throw error;
        }),
      ),
    );
    const failure = results.find((result) => result.status === 'rejected');
    if (failure) throw failure.reason;
  } finally {
    await writer?.close();
    await Promise.allSettled(environments.map((environment) => environment.close()));
  }
  return summary;
}
