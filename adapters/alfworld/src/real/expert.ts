/**
 * Expert demonstrations from the game files: plays ALFWorld games on the real engine with
 * an expert policy and writes them in the layout of `expert_trajectories.jsonl`, so that a
 * user who has only the public game files can rebuild the expert data the loaders read.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import {
  ConfigError,
  DatasetNotFoundError,
  EnvironmentError,
  parseOptions,
  readJsonl,
} from '@dreamgym/core';
import { JsonlWriter } from '@dreamgym/core/mdp';
import { z } from 'zod';
import {
  type AlfworldExpertRecord,
  AlfworldExpertRecordSchema,
} from '../datasets/expert-trajectories.js';
import { GAME_FILE } from '../datasets/game-files.js';
import { ALFWORLD_TASK_TYPES } from '../task-types.js';
import { AlfworldRealOptionsSchema } from './options.js';
import { type AlfworldEpisodePayload, AlfworldProtocolClient } from './protocol-client.js';
import { AlfworldServerProcess, defaultAlfworldPython } from './server-process.js';

/** Options of {@link generateAlfworldExpertTrajectories}. */
export const GenerateAlfworldExpertOptionsSchema = z.object({
  /** JSONL file to append to (created with its folder); games already in it are skipped. */
  out: z.string().min(1),
  /**
   * Folder holding the game files (`train/<task>/<trial>/game.tw-pddl` ...). Default
   * `$DREAMGYM_DATA_DIR/alfworld`; with `url` and no `dataDir`, the server's own folder.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Split whose games are played. Default `train` (the split of ALFWorld's expert data).
   * `valid_unseen` is refused: it is evaluation data, never training data.
   */
  split: z.enum(['train', 'valid_seen']).default('train'),
  /**
   * Games to play, as `<split>/<task>/<trial>` (a trailing `/game.tw-pddl` and paths inside
   * `dataDir` are accepted). Default: every game of `split`, in sorted order.
   */
  games: z.array(z.string().min(1)).min(1).optional(),
  /** Play only the first `limit` games of the list (counting games already written). */
  limit: z.number().int().positive().optional(),
  /**
   * The expert. `handcoded` (default): ALFWorld's handcoded expert, the policy behind its
   * expert demonstrations: it searches receptacles by its priors, so its trajectories look
   * like `expert_trajectories.jsonl`'s. `planner`: the PDDL planner's plan from the current
   * state, which knows where every object is and so never searches (shorter trajectories).
   */
  expert: z.enum(['handcoded', 'planner']).default('handcoded'),
  /** Seed of the handcoded expert's random choices (which of two mugs, a fallback move). */
  seed: z.number().int().default(0),
  /** Commands per game before it counts as unsolved. Default 150 (ALFWorld's expert budget). */
  maxSteps: z.number().int().positive().default(150),
  /** Attach to this running server instead of starting one. */
  url: AlfworldRealOptionsSchema.shape.url,
  /** Python for the started server. Default: the project virtualenv. */
  pythonPath: AlfworldRealOptionsSchema.shape.pythonPath,
  /** Milliseconds to wait for a started server. Default 120 000. */
  startTimeoutMs: AlfworldRealOptionsSchema.shape.startTimeoutMs,
  /** Milliseconds per request (a reset loads the game: seconds). Default 60 000. */
  requestTimeoutMs: AlfworldRealOptionsSchema.shape.requestTimeoutMs,
});

/** What happened to one game, reported to `onProgress` as soon as it is known. */
export interface AlfworldExpertProgress {
  /** 1-based position of the game in the list. */
  index: number;
  /** Games in the list. */
  total: number;
  /** `<split>/<task>/<trial>`. */
  game: string;
  /** `written`: solved and appended; `skipped`: already in the output; `failed`: see `reason`. */
  status: 'written' | 'skipped' | 'failed';
  /** Commands played. */
  steps: number;
  /** Seconds spent on the game (load included). */
  seconds: number;
  /** Why the expert did not solve the game. */
  reason?: string;
}

/** Options of {@link generateAlfworldExpertTrajectories} as a caller writes them. */
export type GenerateAlfworldExpertOptions = z.input<typeof GenerateAlfworldExpertOptionsSchema> & {
  /** Called after every game (a CLI prints a line per call). */
  onProgress?: (progress: AlfworldExpertProgress) => void;
};

/** What {@link generateAlfworldExpertTrajectories} did. */
export interface AlfworldExpertSummary {
  /** The JSONL file. */
  output: string;
  /** Games in the list. */
  games: number;
  /** Trajectories appended by this run. */
  written: number;
  /** Games already in the output, not played again. */
  skipped: number;
  /** Games the expert did not solve (nothing written for them), with the reason. */
  failed: Array<{ game: string; reason: string }>;
  /** Commands played in written trajectories. */
  steps: number;
}

const TASK_TYPE = z.enum(ALFWORLD_TASK_TYPES);

/** `train/<task>/<trial>` from what a caller wrote (checked by {@link checkGame}). */
function normaliseGame(game: string, dataDir: string): string {
  let name = game.trim().replace(/\\/g, '/');
  if (isAbsolute(name)) name = relative(dataDir, name).replace(/\\/g, '/');
  name = name.replace(/\/+$/, '');
  if (name.endsWith(`/${GAME_FILE}`)) name = name.slice(0, -GAME_FILE.length - 1);
  return name.replace(/^\.\//, '');
}

function checkGame(name: string, given: string, dataDir: string, split: string): void {
  if (name.startsWith('valid_unseen/')) {
    throw new ConfigError(
      `Game ${JSON.stringify(given)} is in valid_unseen, the evaluation split: expert trajectories are training data and are never made from it.`,
      { field: 'games' },
    );
  }
  if (!name.startsWith(`${split}/`) || name.split('/').length !== 3) {
    throw new ConfigError(
      `Game ${JSON.stringify(given)} is not a ${split} game: name it ${split}/<task>/<trial> (relative to ${dataDir}).`,
      { field: 'games' },
    );
  }
  const file = join(dataDir, name, GAME_FILE);
  if (!existsSync(file)) {
    throw new DatasetNotFoundError(
      `No game file for ${JSON.stringify(given)}: ${file} does not exist. Download the game files (downloadAlfworldData) or fix the game name / dataDir.`,
      { path: file },
    );
  }
}

function listGivenGames(
  games: string[] | undefined,
  dataDir: string,
  split: string,
): string[] | undefined {
  return games?.map((given) => {
    const name = normaliseGame(given, dataDir);
    checkGame(name, given, dataDir, split);
    return name;
  });
}

async function gamesAlreadyWritten(out: string): Promise<Set<string>> {
  const done = new Set<string>();
  if (!existsSync(out)) return done;
  for await (const record of readJsonl(out, AlfworldExpertRecordSchema)) done.add(record.game);
  return done;
}

function resolveDataDir(option: string | undefined): string | undefined {
  if (option !== undefined) return resolve(option);
  const root = process.env.DREAMGYM_DATA_DIR;
  return root && root.trim() !== '' ? resolve(join(root, 'alfworld')) : undefined;
}

/** The next command of the chosen expert, or the reason there is none. */
function nextCommand(
  payload: AlfworldEpisodePayload,
  expert: 'handcoded' | 'planner',
): { command: string } | { reason: string } {
  if (expert === 'planner') {
    const command = payload.expert_plan?.[0];
    return command
      ? { command }
      : {
          reason: `the planner gave no plan after ${payload.steps} commands (observation: ${JSON.stringify(payload.observation.slice(0, 160))})`,
        };
  }
  if (payload.expert_action === undefined) {
    throw new EnvironmentError(
      'The ALFWorld server did not answer `expert_action`: it predates the handcoded expert. Update adapters/alfworld/python on that server.',
    );
  }
  return payload.expert_action
    ? { command: payload.expert_action }
    : {
        reason:
          payload.expert_failure ??
          `ALFWorld's handcoded expert had no command after ${payload.steps} commands`,
      };
}

/**
 * Plays each game with an expert on the real ALFWorld engine and appends the solved ones
 * to `out` in the layout of `expert_trajectories.jsonl`: `{game, task_type, conversations}`
 * with `human` turns the engine's observations (the first with the welcome banner and the
 * task, `You arrive at loc N.` removed) and `gpt` turns the bare commands.
 * {@link loadAlfworldExpertTrajectories} reads the result. Resumable: games already in
 * `out` are skipped, so an interrupted run continues where it stopped. Starts an engine
 * server unless `url` is given.
 *
 * With the default handcoded expert the output reproduces ALFWorld's own demonstrations
 * command for command wherever those never fell back on a random move (their random draws
 * were unseeded, so no seed replays them).
 *
 * @throws ConfigError for a game outside `split` or in `valid_unseen`.
 * @throws DatasetNotFoundError when a game file or the data folder is missing.
 * @throws EnvironmentError naming the game when the engine fails or its server dies.
 *
 * @example
 * const summary = await generateAlfworldExpertTrajectories({
 *   dataDir: 'data/alfworld',
 *   out: 'data/alfworld/expert_trajectories.jsonl',
 *   onProgress: (p) => console.log(`${p.index}/${p.total} ${p.status} ${p.game}`),
 * });
 */
export async function generateAlfworldExpertTrajectories(
  input: GenerateAlfworldExpertOptions,
): Promise<AlfworldExpertSummary> {
  const { onProgress, ...rest } = input;
  const options = parseOptions(GenerateAlfworldExpertOptionsSchema, rest, 'expert generation');
  let dataDir = resolveDataDir(options.dataDir);
  if (dataDir === undefined && options.url === undefined) {
    throw new ConfigError(
      'Expert generation needs the game files: pass dataDir (the folder with train/, valid_seen/), set DREAMGYM_DATA_DIR, or pass url to attach to a running server.',
      { field: 'dataDir' },
    );
  }
  if (dataDir !== undefined && !existsSync(join(dataDir, options.split))) {
    throw new DatasetNotFoundError(
      `ALFWorld data directory ${dataDir} has no ${options.split}/ folder of game files. Download them (downloadAlfworldData) or fix dataDir / DREAMGYM_DATA_DIR.`,
      { path: join(dataDir, options.split) },
    );
  }
  // Checked before the (slow) engine starts when the folder is known here.
  if (dataDir !== undefined) listGivenGames(options.games, dataDir, options.split);
  const output = resolve(options.out);
  const done = await gamesAlreadyWritten(output);

  let server: AlfworldServerProcess | undefined;
  let client: AlfworldProtocolClient;
  if (options.url !== undefined) {
    client = new AlfworldProtocolClient(options.url, options.requestTimeoutMs);
    const health = await client.health();
    dataDir ??= health.data_dir;
  } else {
    server = await AlfworldServerProcess.start({
      dataDir: dataDir!,
      pythonPath: options.pythonPath ?? defaultAlfworldPython(),
      port: 0,
      startTimeoutMs: options.startTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs,
    });
    client = new AlfworldProtocolClient(server.url, options.requestTimeoutMs);
  }
  const summary: AlfworldExpertSummary = {
    output,
    games: 0,
    written: 0,
    skipped: 0,
    failed: [],
    steps: 0,
  };
  const writer = await JsonlWriter.open(output, AlfworldExpertRecordSchema, { append: true });
  try {
    let games: string[];
    games =
      listGivenGames(options.games, dataDir!, options.split) ?? (await client.games(options.split));
    if (options.limit !== undefined) games = games.slice(0, options.limit);
    summary.games = games.length;
    const session = await client.create();
    for (const [position, game] of games.entries()) {
      const started = performance.now();
      const report = (progress: Omit<AlfworldExpertProgress, 'index' | 'total' | 'game'>) =>
        onProgress?.({ index: position + 1, total: games.length, game, ...progress });
      if (done.has(game)) {
        summary.skipped += 1;
        report({ status: 'skipped', steps: 0, seconds: 0 });
        continue;
      }
      const seconds = () => Math.round(performance.now() - started) / 1000;
      const played = await playGame(client, session, game, options, server);
      if ('reason' in played) {
        summary.failed.push({ game, reason: played.reason });
        report({
          status: 'failed',
          steps: played.steps,
          seconds: seconds(),
          reason: played.reason,
        });
        continue;
      }
      await writer.write(played.record);
      done.add(game);
      const steps = (played.record.conversations.length - 1) / 2;
      summary.written += 1;
      summary.steps += steps;
      report({ status: 'written', steps, seconds: seconds() });
    }
    await client.close(session).catch(() => undefined);
  } finally {
    await writer.close();
    await server?.stop();
  }
  return summary;
}

type Played = { record: AlfworldExpertRecord } | { reason: string; steps: number };

async function playGame(
  client: AlfworldProtocolClient,
  session: number,
  game: string,
  options: z.output<typeof GenerateAlfworldExpertOptionsSchema>,
  server: AlfworldServerProcess | undefined,
): Promise<Played> {
  const engine = async (what: string, call: () => Promise<AlfworldEpisodePayload>) => {
    try {
      return await call();
    } catch (error) {
      const exit = server?.exitStatus;
      const died = exit
        ? ` The engine server died (code ${exit.code}, signal ${exit.signal}).`
        : '';
      const tail = server?.recentErrors ? `\n${server.recentErrors}` : '';
      throw new EnvironmentError(
        `The ALFWorld engine failed on game ${game} (${what}): ${error instanceof Error ? error.message : String(error)}.${died}${tail}`,
        { cause: error },
      );
    }
  };
  let payload = await engine('reset', () =>
    client.reset(session, {
      game,
      split: options.split,
      maxSteps: options.maxSteps,
      ...(options.expert === 'planner'
        ? { expertPlan: true }
        : { handcodedExpert: true, seed: options.seed }),
    }),
  );
  const taskType = TASK_TYPE.safeParse(payload.task_type);
  if (!taskType.success) {
    throw new ConfigError(
      `Game ${game} is not in an ALFWorld task folder (<task type>-<object>-<movable receptacle>-<receptacle>-<scene>); the engine reports task type ${JSON.stringify(payload.task_type)}.`,
      { field: 'games' },
    );
  }
  const conversations: AlfworldExpertRecord['conversations'] = [
    { from: 'human', value: payload.observation },
  ];
  while (!payload.won) {
    if (payload.done) {
      return {
        reason: `not solved within ${options.maxSteps} commands (maxSteps)`,
        steps: payload.steps,
      };
    }
    const next = nextCommand(payload, options.expert);
    if ('reason' in next) return { reason: next.reason, steps: payload.steps };
    payload = await engine(`step ${payload.steps + 1}: ${next.command}`, () =>
      client.step(session, next.command),
    );
    conversations.push(
      { from: 'gpt', value: next.command },
      { from: 'human', value: payload.observation },
    );
  }
  return { record: { game, task_type: taskType.data, conversations } };
}
