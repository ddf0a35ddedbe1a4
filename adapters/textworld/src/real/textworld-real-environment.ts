/**
 * The real TextWorld {@link Environment}: one session on a TextWorld server that this
 * environment started (and starts again when it died) or that it attached to.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ConfigError,
  DatasetNotFoundError,
  type Environment,
  EnvironmentError,
  EnvironmentStateError,
  type Observation,
  parseOptions,
  type StepResult,
  type Task,
} from '@dreamgym/core';
import { mapTextworldObservation } from '../state-mapper.js';
import {
  type TextworldRealOptions,
  type TextworldRealOptionsInput,
  TextworldRealOptionsSchema,
} from './options.js';
import {
  TextworldConnectionError,
  type TextworldEpisodePayload,
  type TextworldGameInfo,
  type TextworldHealth,
  TextworldProtocolClient,
} from './protocol-client.js';
import {
  defaultTextworldPython,
  startTextworldServer,
  type TextworldServerProcess,
} from './python-process.js';

/** The splits of a TextWorld data directory. */
export const TEXTWORLD_SPLITS = ['train', 'valid', 'test'] as const;
/** A split of a TextWorld data directory. */
export type TextworldSplit = (typeof TEXTWORLD_SPLITS)[number];

const GAME_NAME = /^(train|valid|test)\/[A-Za-z0-9._-]+$/;

/**
 * The game a task is played on: `task.meta.game` (the tasks loader sets it), else `task.id`,
 * as `<split>/<name>` (`train/cooking-r2-s1`).
 *
 * @throws ConfigError for a generated task or one that names no game.
 */
export function textworldGameOf(task: Task): string {
  if (task.origin === 'generated') {
    throw new ConfigError(
      `Task ${task.id} is a generated curriculum task: the real TextWorld engine plays only the generated games of seed tasks (from the tasks loader).`,
      { field: 'task.origin' },
    );
  }
  const game = typeof task.meta.game === 'string' ? task.meta.game : task.id;
  if (!GAME_NAME.test(game)) {
    throw new ConfigError(
      `Task ${task.id} names no TextWorld game: expected task.meta.game or task.id of the form <split>/<name> (e.g. train/cooking-r2-s1); got ${JSON.stringify(game)}.`,
      { field: 'task.meta.game' },
    );
  }
  return game;
}

interface Episode {
  task: Task;
  done: boolean;
  /** Set when the server died under the episode: every later step rethrows it. */
  lost?: EnvironmentError;
}

/** The real TextWorld environment. Create it with {@link connectTextworldReal}. */
export class TextworldRealEnvironment implements Environment {
  private closed = false;
  private episode: Episode | undefined;
  private plan: string[] | undefined;
  private info: TextworldGameInfo | undefined;

  private constructor(
    private readonly options: TextworldRealOptions,
    private readonly dataDir: string | undefined,
    private server: TextworldServerProcess | undefined,
    private client: TextworldProtocolClient,
    private sessionId: number,
  ) {}

  /** Starts (or attaches to) a server and opens a session. */
  static async connect(input: TextworldRealOptionsInput = {}): Promise<TextworldRealEnvironment> {
    const options = parseOptions(TextworldRealOptionsSchema, input, 'TextWorld real-engine');
    if (options.url !== undefined) {
      const client = new TextworldProtocolClient(options.url, options.requestTimeoutMs);
      await client.health();
      return new TextworldRealEnvironment(
        options,
        undefined,
        undefined,
        client,
        await client.create(),
      );
    }
    const dataDir = resolveDataDir(options.dataDir);
    const server = await TextworldRealEnvironment.start(options, dataDir);
    try {
      const client = new TextworldProtocolClient(server.url, options.requestTimeoutMs);
      return new TextworldRealEnvironment(options, dataDir, server, client, await client.create());
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  private static start(
    options: TextworldRealOptions,
    dataDir: string,
  ): Promise<TextworldServerProcess> {
    return startTextworldServer({
      dataDir,
      pythonPath: options.pythonPath ?? defaultTextworldPython(),
      port: options.port,
      startTimeoutMs: options.startTimeoutMs,
    });
  }

  /** Base URL of the server this environment talks to. */
  get url(): string {
    return this.client.baseUrl;
  }

  /** Process id of the started server; undefined when attached to a `url`. */
  get serverPid(): number | undefined {
    return this.server?.pid;
  }

  /**
   * The engine's winning commands from the current state (first command first), when
   * connected with `expertPlan: true`; undefined otherwise or before `reset`.
   */
  expertPlan(): string[] | undefined {
    return this.plan === undefined ? undefined : [...this.plan];
  }

  /** What the engine knows about the game of the last `reset` (objective, recipe, walkthrough). */
  gameInfo(): TextworldGameInfo | undefined {
    return this.info;
  }

  /** The games of a split on the server (`<split>/<name>`), sorted. */
  games(split: TextworldSplit = 'train'): Promise<string[]> {
    this.assertOpen('games');
    return this.client.games(split);
  }

  /** The server's `/health`: its data directory, session count and engine versions. */
  serverInfo(): Promise<TextworldHealth> {
    this.assertOpen('serverInfo');
    return this.client.health();
  }

  private assertOpen(method: string): void {
    if (this.closed) {
      throw new EnvironmentStateError(
        `${method}() on a closed TextWorld environment: connect a new one.`,
      );
    }
  }

  /** Starts the server again when the one this environment started has died. */
  private async ensureServer(): Promise<void> {
    if (this.server === undefined || !this.server.ended) return;
    this.server = await TextworldRealEnvironment.start(this.options, this.dataDir!);
    this.client = new TextworldProtocolClient(this.server.url, this.options.requestTimeoutMs);
    this.sessionId = await this.client.create();
  }

  /** The error for a request that failed: a lost episode when the started server died. */
  private async failure(error: unknown, task: Task): Promise<unknown> {
    if (!(error instanceof TextworldConnectionError) || this.server === undefined) return error;
    const server = this.server;
    // The request can fail a moment before the process's exit is reported.
    await Promise.race([server.exited, new Promise((done) => setTimeout(done, 2_000))]);
    if (!server.ended) return error;
    return new EnvironmentError(
      `The TextWorld server (process ${server.pid}) died during the episode of task ${task.id}; the episode is lost. reset() starts a new server and plays again.`,
      { cause: error },
    );
  }

  async reset(task: Task): Promise<Observation> {
    this.assertOpen('reset');
    const game = textworldGameOf(task);
    this.episode = undefined;
    this.plan = undefined;
    this.info = undefined;
    await this.ensureServer();
    let payload: TextworldEpisodePayload;
    try {
      payload = await this.client.reset(this.sessionId, {
        game,
        maxSteps: this.options.maxSteps,
        expertPlan: this.options.expertPlan,
      });
    } catch (error) {
      throw await this.failure(error, task);
    }
    this.episode = { task, done: false };
    this.plan = payload.expert_plan;
    this.info = payload.info;
    return mapTextworldObservation({
      text: payload.observation,
      admissibleCommands: payload.available_actions,
      ...(payload.info ? { objective: payload.info.objective } : {}),
    });
  }

  async step(action: string): Promise<StepResult> {
    this.assertOpen('step');
    const episode = this.episode;
    if (episode === undefined) {
      throw new EnvironmentStateError('step() before reset(): start an episode with reset(task).');
    }
    if (episode.lost) throw episode.lost;
    if (episode.done) {
      throw new EnvironmentStateError(
        `step() after the episode of task ${episode.task.id} ended (done): call reset(task) to start another.`,
      );
    }
    let payload: TextworldEpisodePayload;
    try {
      payload = await this.client.step(this.sessionId, action);
    } catch (error) {
      const failure = await this.failure(error, episode.task);
      if (failure instanceof EnvironmentError && failure !== error) episode.lost = failure;
      throw failure;
    }
    episode.done = payload.done;
    this.plan = payload.expert_plan;
    return {
      observation: mapTextworldObservation({
        text: payload.observation,
        admissibleCommands: payload.available_actions,
        ...(this.info ? { objective: this.info.objective } : {}),
      }),
      reward: payload.reward,
      done: payload.done,
      truncated: payload.truncated,
      info: {
        won: payload.won,
        lost: payload.lost,
        success: payload.won,
        invalidAction: payload.admissible === false,
        score: payload.score,
        maxScore: payload.max_score,
        steps: payload.steps,
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.episode = undefined;
    if (this.server) {
      await this.server.stop();
    } else {
      await this.client.close(this.sessionId).catch(() => undefined);
    }
  }
}

function resolveDataDir(option: string | undefined): string {
  const fromEnvironment = process.env.DREAMGYM_DATA_DIR;
  const dataDir =
    option ??
    (fromEnvironment && fromEnvironment.trim() !== ''
      ? join(fromEnvironment, 'textworld')
      : undefined);
  if (dataDir === undefined) {
    throw new ConfigError(
      'The TextWorld real engine needs its games: pass dataDir (the folder buildTextworldDataset wrote), set DREAMGYM_DATA_DIR, or pass url to attach to a running server.',
      { field: 'dataDir' },
    );
  }
  const absolute = resolve(dataDir);
  if (!existsSync(absolute) || !statSync(absolute).isDirectory()) {
    throw new DatasetNotFoundError(
      `TextWorld data directory ${absolute} does not exist. Generate it with buildTextworldDataset({ dir }) (or adapter.datasets.download(dir)), or fix dataDir / DREAMGYM_DATA_DIR.`,
      { path: absolute },
    );
  }
  return absolute;
}
