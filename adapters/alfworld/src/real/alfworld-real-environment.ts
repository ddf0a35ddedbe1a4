/**
 * The real ALFWorld {@link Environment}: one session on an AgentGym-protocol ALFWorld server
 * that this environment started (and restarts when it dies) or that it attached to.
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
import { mapAlfworldObservation } from '../state-mapper.js';
import {
  type AlfworldRealOptions,
  type AlfworldRealOptionsInput,
  AlfworldRealOptionsSchema,
} from './options.js';
import {
  AlfworldConnectionError,
  type AlfworldEpisodePayload,
  type AlfworldHealth,
  AlfworldProtocolClient,
  AlfworldServerAnswerError,
} from './protocol-client.js';
import {
  type AlfworldServerExit,
  AlfworldServerProcess,
  defaultAlfworldPython,
} from './server-process.js';

/** What the engine answers to a command it cannot apply. */
export const NOTHING_HAPPENS = 'Nothing happens.';

const GAME_NAME = /^(train|valid_seen|valid_unseen)\/[^/]+\/[^/]+$/;

/**
 * The game a task is played on: `task.meta.game` (the loaders set it), else `task.id`, as
 * a path relative to the data directory (`train/<task>/<trial>`).
 *
 * @throws ConfigError for a generated task or one that names no game file.
 */
export function alfworldGameOf(task: Task): string {
  if (task.origin === 'generated') {
    throw new ConfigError(
      `Task ${task.id} is a generated curriculum task: the real ALFWorld engine plays only the game files of seed tasks (from loadAlfworldGameTasks or expert trajectories).`,
      { field: 'task.origin' },
    );
  }
  const game = typeof task.meta.game === 'string' ? task.meta.game : task.id;
  if (!GAME_NAME.test(game)) {
    throw new ConfigError(
      `Task ${task.id} names no ALFWorld game: expected task.meta.game or task.id of the form <split>/<task>/<trial> (e.g. train/look_at_obj_in_light-AlarmClock-None-DeskLamp-301/trial_T20190907_174127_043461); got ${JSON.stringify(game)}.`,
      { field: 'task.meta.game' },
    );
  }
  return game;
}

function describeExit(exit: AlfworldServerExit): string {
  return exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
}

interface Episode {
  task: Task;
  game: string;
  /** Server generation the episode runs on; a restart makes it stale. */
  generation: number;
  done: boolean;
  /** Set when the server died under the episode: every later step rethrows it. */
  lost?: EnvironmentError;
}

/** The real ALFWorld environment. Create it with {@link connectAlfworldReal}. */
export class AlfworldRealEnvironment implements Environment {
  private closed = false;
  private episode: Episode | undefined;
  private generation = 0;
  private restarting: Promise<void> | undefined;
  private restartCount = 0;
  /** What happened to the last server that went away, for the lost episode's error. */
  private lastFailure = 'stopped answering';
  /** Set when this environment killed a server that stopped answering. */
  private killedForTimeout: string | undefined;
  private plan: string[] | undefined;

  private constructor(
    private readonly options: AlfworldRealOptions,
    private readonly dataDir: string | undefined,
    private readonly pythonPath: string,
    private server: AlfworldServerProcess | undefined,
    private client: AlfworldProtocolClient,
    private sessionId: number,
  ) {
    if (server) this.watch(server);
  }

  /** Starts (or attaches to) a server and opens a session. */
  static async connect(input: AlfworldRealOptionsInput = {}): Promise<AlfworldRealEnvironment> {
    const options = parseOptions(AlfworldRealOptionsSchema, input, 'ALFWorld real-engine');
    const pythonPath = options.pythonPath ?? defaultAlfworldPython();
    if (options.url !== undefined) {
      const client = new AlfworldProtocolClient(options.url, options.requestTimeoutMs);
      await client.health();
      return new AlfworldRealEnvironment(
        options,
        undefined,
        pythonPath,
        undefined,
        client,
        await client.create(),
      );
    }
    const dataDir = resolveDataDir(options.dataDir);
    const server = await AlfworldServerProcess.start({
      dataDir,
      pythonPath,
      port: options.port,
      startTimeoutMs: options.startTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs,
    });
    try {
      const client = new AlfworldProtocolClient(server.url, options.requestTimeoutMs);
      return new AlfworldRealEnvironment(
        options,
        dataDir,
        pythonPath,
        server,
        client,
        await client.create(),
      );
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  /** Base URL of the server this environment talks to. */
  get url(): string {
    return this.client.baseUrl;
  }

  /** Process id of the started server; undefined when attached to a `url`. */
  get serverPid(): number | undefined {
    return this.server?.pid;
  }

  /** How many times the started server died and was restarted. */
  get restarts(): number {
    return this.restartCount;
  }

  /**
   * The planner's plan from the current state (first command first), when the environment
   * was connected with `expertPlan: true`; undefined otherwise or before `reset`.
   */
  expertPlan(): string[] | undefined {
    return this.plan === undefined ? undefined : [...this.plan];
  }

  /** The games of a split on the server (`<split>/<task>/<trial>`), in the index order `/reset` uses. */
  games(split: 'train' | 'valid_seen' | 'valid_unseen' = 'train'): Promise<string[]> {
    this.assertOpen('games');
    return this.client.games(split);
  }

  /** The server's `/health`: its data directory, session count and engine versions. */
  serverInfo(): Promise<AlfworldHealth> {
    this.assertOpen('serverInfo');
    return this.client.health();
  }

  private assertOpen(method: string): void {
    if (this.closed) {
      throw new EnvironmentStateError(
        `${method}() on a closed ALFWorld environment: connect a new one.`,
      );
    }
  }

  private watch(server: AlfworldServerProcess): void {
    void server.exited.then((exit) => {
      if (this.closed || this.server !== server) return;
      this.lastFailure = this.killedForTimeout ?? describeExit(exit);
      this.killedForTimeout = undefined;
      this.generation += 1;
      if (!this.options.restartOnCrash) return;
      const restarting = this.restart();
      // Nobody may be waiting when it fails: the next reset() or step() retries and reports it.
      restarting.catch(() => undefined);
      this.restarting = restarting;
    });
  }

  private async restart(): Promise<void> {
    try {
      const server = await AlfworldServerProcess.start({
        dataDir: this.dataDir!,
        pythonPath: this.pythonPath,
        port: this.options.port,
        startTimeoutMs: this.options.startTimeoutMs,
        requestTimeoutMs: this.options.requestTimeoutMs,
      });
      if (this.closed) {
        await server.stop();
        return;
      }
      this.server = server;
      this.client = new AlfworldProtocolClient(server.url, this.options.requestTimeoutMs);
      this.sessionId = await this.client.create();
      this.restartCount += 1;
      this.watch(server);
    } finally {
      this.restarting = undefined;
    }
  }

  /** Waits for a restart in progress, or starts one if the started server is down. */
  private async ensureServer(): Promise<void> {
    if (this.restarting) await this.restarting;
    if (this.server && this.server.exitStatus !== undefined) {
      if (!this.options.restartOnCrash) {
        throw new EnvironmentError(
          `The ALFWorld server ${describeExit(this.server.exitStatus)} and restartOnCrash is off: connect a new environment.`,
        );
      }
      this.restarting ??= this.restart();
      await this.restarting;
    }
  }

  /** The error of an episode whose server died; waits for the restart first so it can say how it went. */
  private async crashError(episode: Episode, cause?: unknown): Promise<EnvironmentError> {
    let outcome: string;
    try {
      await this.ensureServer();
      outcome = `and was restarted (new process ${this.server?.pid})`;
    } catch (error) {
      outcome = `and could not be restarted (${error instanceof Error ? error.message : String(error)})`;
    }
    return new EnvironmentError(
      `The ALFWorld server ${this.lastFailure} during the episode of task ${episode.task.id} ${outcome}. The episode is lost: call reset() to play again.`,
      { cause },
    );
  }

  async reset(task: Task): Promise<Observation> {
    this.assertOpen('reset');
    const game = alfworldGameOf(task);
    this.episode = undefined;
    this.plan = undefined;
    await this.ensureServer();
    const generation = this.generation;
    const request = {
      game,
      maxSteps: this.options.maxSteps,
      expertPlan: this.options.expertPlan,
    };
    let payload: AlfworldEpisodePayload;
    try {
      payload = await this.client.reset(this.sessionId, request);
    } catch (error) {
      if (this.server === undefined && isMissingSession(error)) {
        // An attached server restarted by someone else forgot our session: open another.
        this.sessionId = await this.client.create();
        payload = await this.client.reset(this.sessionId, request);
      } else if (await this.serverDied(error, generation)) {
        throw await this.crashError({ task, game, generation, done: false }, error);
      } else {
        throw error;
      }
    }
    this.episode = { task, game, generation, done: false };
    this.plan = payload.expert_plan;
    return mapAlfworldObservation({
      text: payload.observation,
      admissibleCommands: payload.available_actions,
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
    if (episode.generation !== this.generation) {
      episode.lost = await this.crashError(episode);
      throw episode.lost;
    }
    let payload: AlfworldEpisodePayload;
    try {
      payload = await this.client.step(this.sessionId, action);
    } catch (error) {
      if (await this.serverDied(error, episode.generation)) {
        episode.lost = await this.crashError(episode, error);
        throw episode.lost;
      }
      throw error;
    }
    episode.done = payload.done;
    this.plan = payload.expert_plan;
    const text = payload.observation;
    return {
      observation: mapAlfworldObservation({ text, admissibleCommands: payload.available_actions }),
      reward: payload.reward,
      done: payload.done,
      truncated: payload.truncated,
      info: {
        won: payload.won,
        success: payload.won,
        invalidAction: text.trim() === NOTHING_HAPPENS || payload.admissible === false,
        steps: payload.steps,
      },
    };
  }

  /**
   * Whether a failed request means the started server is gone. A request that timed out
   * means it hangs: it is killed (and so restarted) rather than waited on forever.
   */
  private async serverDied(error: unknown, generation: number): Promise<boolean> {
    if (!(error instanceof AlfworldConnectionError) || this.server === undefined) return false;
    const server = this.server;
    if (error.timedOut && this.generation === generation) {
      this.killedForTimeout = `did not answer within ${this.options.requestTimeoutMs} ms, was killed`;
      server.child.kill('SIGKILL');
    }
    // The request can fail a moment before the process's exit is reported.
    await Promise.race([server.exited, new Promise((done) => setTimeout(done, 2_000))]);
    return this.generation !== generation;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.episode = undefined;
    const restarting = this.restarting;
    if (restarting) await restarting.catch(() => undefined);
    if (this.server) {
      await this.server.stop();
    } else {
      await this.client.close(this.sessionId).catch(() => undefined);
    }
  }
}

function isMissingSession(error: unknown): boolean {
  return (
    error instanceof AlfworldServerAnswerError &&
    error.status === 404 &&
    /no session/.test(error.message)
  );
}

function resolveDataDir(option: string | undefined): string {
  const fromEnvironment = process.env.DREAMGYM_DATA_DIR;
  const dataDir =
    option ??
    (fromEnvironment && fromEnvironment.trim() !== ''
      ? join(fromEnvironment, 'alfworld')
      : undefined);
  if (dataDir === undefined) {
    throw new ConfigError(
      'The ALFWorld real engine needs its game files: pass dataDir (the folder with train/, valid_seen/, valid_unseen/), set DREAMGYM_DATA_DIR, or pass url to attach to a running server.',
      { field: 'dataDir' },
    );
  }
  const absolute = resolve(dataDir);
  if (!existsSync(absolute) || !statSync(absolute).isDirectory()) {
    throw new DatasetNotFoundError(
      `ALFWorld data directory ${absolute} does not exist. Download the game files (downloadAlfworldData) or fix dataDir / DREAMGYM_DATA_DIR.`,
      { path: absolute },
    );
  }
  return absolute;
}
