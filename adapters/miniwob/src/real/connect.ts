/**
 * The real MiniWoB++ environment: the task pages of the installed `miniwob` package served on
 * 127.0.0.1, played in Chromium through `@dreamgym/browser`. Each episode opens the task's
 * page, seeds it and starts it with the page's own script; the observation is the AX-tree
 * state (normalised by the state mapper, with candidate actions); actions are the web
 * grammar (element notes dropped); the reward, raw reward and `done` are the task's own.
 */
import {
  type Browser,
  BrowserEnvironment,
  BrowserEnvironmentOptionsSchema,
  type MiniwobServer,
  miniwobTaskHooks,
  startMiniwobServer,
} from '@dreamgym/browser';
import {
  ActionParseError,
  type Environment,
  type Observation,
  parseOptions,
  type StepResult,
  type Task,
} from '@dreamgym/core';
import { z } from 'zod';
import { parseMiniwobAction } from '../action-grammar.js';
import { mapMiniwobObservation } from '../state-mapper.js';

/** Options of {@link connectMiniwobReal}. */
export const MiniwobRealOptionsSchema = z.object({
  /** Actions per episode; after this many the episode ends with `done` and `truncated`. Default 10. */
  maxSteps: z.number().int().positive().default(10),
  /**
   * Which reward a step returns at the end of an episode: the task's raw reward (default: 1 on
   * success, -1 or a partial score on failure) or MiniWoB++'s time-scaled one.
   */
  reward: z.enum(['raw', 'timed']).default('raw'),
  /**
   * The page's episode time limit in milliseconds (`core.EPISODE_MAX_TIME`): the page ends
   * the episode with -1 when it runs out. MiniWoB++'s own 10 000 ms suits a human; the default
   * 600 000 leaves room for a slow agent on a loaded machine.
   */
  timeLimitMs: z.number().int().positive().default(600_000),
  /** Milliseconds an element action waits for its element (hidden ones time out). Default 2 000. */
  actionTimeoutMs: z.number().int().positive().default(2_000),
  /** Milliseconds to wait after an action before observing (animations). Default 50. */
  settleMs: z.number().int().nonnegative().default(50),
  /** The `html/` directory of the `miniwob` package. Default: found through `pythonPath`. */
  htmlDirectory: z.string().min(1).optional(),
  /** A Python with the `miniwob` package. Default: the project virtualenv's (`.venv/bin/python`), else `python3`. */
  pythonPath: z.string().min(1).optional(),
  /** Further browser options (`viewport`, `chromium.executablePath`...). */
  browserOptions: BrowserEnvironmentOptionsSchema.partial().optional(),
});
/** Options of {@link connectMiniwobReal}, as a caller writes them. */
export type MiniwobRealOptionsInput = z.input<typeof MiniwobRealOptionsSchema>;
/** Options of {@link connectMiniwobReal}, after defaults. */
export type MiniwobRealOptions = z.output<typeof MiniwobRealOptionsSchema>;

/** The connector's options plus the shared parts that are not data. */
export interface MiniwobRealSetup extends MiniwobRealOptionsInput {
  /** A running page server to share (else the environment starts and stops its own). */
  server?: MiniwobServer;
  /** A browser to share (else the environment launches and closes its own). */
  browser?: Browser;
  /**
   * The tokenizer of the model that reads the observations (the policy's, e.g.
   * `LlamaChatModel.countTokens`): `browserOptions.maxObservationTokens` is counted in its
   * tokens. Default: the browser's conservative estimate.
   */
  countTokens?: (text: string) => number;
}

function parseRealOptions(options: MiniwobRealOptionsInput): MiniwobRealOptions {
  return parseOptions(MiniwobRealOptionsSchema, options, 'MiniWoB++', 'real');
}

/**
 * A MiniWoB++ environment: `BrowserEnvironment` with MiniWoB++'s task hooks, MiniWoB++'s state
 * mapper on every observation, and the element notes of actions dropped before the browser
 * carries them out. Tasks name their page and seed in `meta.miniwobTask` and `meta.seed`
 * (else the id: `click-test:3`).
 */
export class MiniwobEnvironment implements Environment {
  private constructor(
    private readonly inner: BrowserEnvironment,
    private ownedServer: MiniwobServer | undefined,
    /** The page server the episodes run on. */
    readonly server: MiniwobServer,
  ) {}

  /** Starts the page server and Chromium unless shared ones are given. */
  static async create(setup: MiniwobRealSetup = {}): Promise<MiniwobEnvironment> {
    const { server: sharedServer, browser: sharedBrowser, countTokens, ...data } = setup;
    const options = parseRealOptions(data);
    const server =
      sharedServer ??
      (await startMiniwobServer({
        ...(options.htmlDirectory === undefined ? {} : { htmlDirectory: options.htmlDirectory }),
        ...(options.pythonPath === undefined ? {} : { pythonPath: options.pythonPath }),
      }));
    try {
      // Without a shared browser, the browser environment launches its own (and restarts it
      // after a crash).
      const inner = await BrowserEnvironment.create({
        // MiniWoB++ pages keep no cookies or storage: an episode navigates the last one's tab,
        // as MiniWoB++'s own environment does, instead of opening a new context and renderer.
        reuseTab: true,
        ...options.browserOptions,
        maxSteps: options.maxSteps,
        actionTimeoutMs: options.actionTimeoutMs,
        settleMs: options.settleMs,
        ...(sharedBrowser ? { browser: sharedBrowser } : {}),
        ...(countTokens ? { countTokens } : {}),
        hooks: miniwobTaskHooks({
          server,
          reward: options.reward,
          timeLimitMs: options.timeLimitMs,
        }),
      });
      return new MiniwobEnvironment(inner, sharedServer ? undefined : server, server);
    } catch (error) {
      if (!sharedServer) await server.close().catch(() => undefined);
      throw error;
    }
  }

  async reset(task: Task): Promise<Observation> {
    return mapMiniwobObservation(await this.inner.reset(task));
  }

  async step(action: string): Promise<StepResult> {
    let webAction = action;
    try {
      webAction = parseMiniwobAction(action).webAction;
    } catch (error) {
      // The browser answers it as an invalid action (info.invalidAction), as the contract asks.
      if (!ActionParseError.isInstance(error)) throw error;
    }
    const result = await this.inner.step(webAction);
    return { ...result, observation: mapMiniwobObservation(result.observation) };
  }

  /** A PNG screenshot of the task page. */
  screenshot(options: { path?: string } = {}): Promise<Buffer> {
    return this.inner.screenshot(options);
  }

  async close(): Promise<void> {
    await this.inner.close();
    const server = this.ownedServer;
    this.ownedServer = undefined;
    await server?.close().catch(() => undefined);
  }
}

/**
 * Connects to the real MiniWoB++ environment (starting its page server and Chromium unless
 * shared ones are given).
 *
 * @throws EnvironmentError when the `miniwob` package or Chromium is missing, saying how to install them.
 * @example
 * const environment = await connectMiniwobReal({ maxSteps: 5 });
 * const observation = await environment.reset({ id: 'click-button:3', domain: 'miniwob', instruction: '', origin: 'seed', meta: {} });
 * const result = await environment.step(observation.actions![0]!); // the page's reward when it ends
 */
export function connectMiniwobReal(setup: MiniwobRealSetup = {}): Promise<MiniwobEnvironment> {
  return MiniwobEnvironment.create(setup);
}
