/**
 * MiniWoB++ on the browser environment: the task pages of the PyPI package `miniwob`
 * (in the project's virtualenv: `npx @dreamgym/cli doctor --fix --only miniwob`) served on 127.0.0.1, an
 * episode started with a seed through the page's own script (`Math.seedrandom`,
 * `core.startEpisodeReal()`), and the task's own reward read back from the page
 * (`WOB_REWARD_GLOBAL`, `WOB_RAW_REWARD_GLOBAL`, `WOB_DONE_GLOBAL`, `WOB_REWARD_REASON`).
 *
 * The pieces a MiniWoB++ adapter builds on: {@link startMiniwobServer},
 * {@link startMiniwobEpisode}, {@link readMiniwobReward} and {@link miniwobTaskHooks}
 * (start and score MiniWoB++ tasks on a `BrowserEnvironment`).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, EnvironmentError, type Task } from '@dreamgym/core';
import type { Page } from 'playwright-core';
import type { BrowserTaskHooks } from '../environment/options.js';
import { type StaticServer, serveDirectory } from '../static-server.js';

/** The Python interpreter of the project virtualenv (`.venv/bin/python` above the working or module directory), else `python3`. */
export function defaultMiniwobPython(): string {
  const starts = [process.cwd()];
  try {
    starts.push(dirname(fileURLToPath(import.meta.url)));
  } catch {
    // no module URL (bundled): the working directory alone
  }
  for (const start of starts) {
    let directory = resolve(start);
    for (;;) {
      const candidate = join(directory, '.venv', 'bin', 'python');
      if (existsSync(candidate)) return candidate;
      const parent = dirname(directory);
      if (parent === directory) break;
      directory = parent;
    }
  }
  return 'python3';
}

const LOCATE_SCRIPT =
  "import importlib.util, os, sys\nspec = importlib.util.find_spec('miniwob')\nif spec is None or not spec.submodule_search_locations: sys.exit(3)\nprint(os.path.join(list(spec.submodule_search_locations)[0], 'html'))";

/**
 * The `html/` directory of the installed `miniwob` package (task pages under `miniwob/`,
 * shared scripts under `core/` and `common/`), found through `pythonPath` without importing
 * the package.
 *
 * @throws EnvironmentError when Python or the package is missing, saying how to install it.
 */
export async function locateMiniwobHtml(pythonPath = defaultMiniwobPython()): Promise<string> {
  const output = await new Promise<string>((done, fail) => {
    execFile(pythonPath, ['-c', LOCATE_SCRIPT], { timeout: 30_000 }, (error, stdout) => {
      if (error) {
        fail(
          new EnvironmentError(
            `The PyPI package miniwob was not found with ${pythonPath} (${error.code === 3 ? 'not installed' : error.message.split('\n')[0]}). Install it in the project's virtualenv, from the project folder: npx @dreamgym/cli doctor --fix --only miniwob (it runs python3 -m venv .venv && .venv/bin/python -m pip install --no-deps miniwob==1.1.0), or pass htmlDirectory, or pythonPath to a Python that has it.`,
            { cause: error },
          ),
        );
      } else done(stdout.trim());
    });
  });
  if (!existsSync(join(output, 'miniwob', 'click-test.html'))) {
    throw new EnvironmentError(
      `${output} does not hold MiniWoB++ task pages (miniwob/click-test.html is missing).`,
    );
  }
  return output;
}

/** Options of {@link startMiniwobServer}. */
export interface MiniwobServerOptions {
  /** The package's `html/` directory. Default: found with {@link locateMiniwobHtml}. */
  htmlDirectory?: string;
  /** Python used to find the package. Default: the project virtualenv's. */
  pythonPath?: string;
  /** Port on 127.0.0.1; 0 picks a free one. Default 0. */
  port?: number;
}

/** A running MiniWoB++ page server. */
export interface MiniwobServer extends StaticServer {
  /** The URL of a task's page, e.g. `taskUrl('click-test')`. */
  taskUrl(task: string): string;
  /** The names of every task page (`click-test`, `enter-text`...), sorted. */
  tasks(): Promise<string[]>;
}

/**
 * Serves MiniWoB++'s pages from the installed `miniwob` package on 127.0.0.1.
 *
 * @example
 * const server = await startMiniwobServer();
 * await page.goto(server.taskUrl('click-test'));
 * await startMiniwobEpisode(page, { seed: 1 });
 */
export async function startMiniwobServer(
  options: MiniwobServerOptions = {},
): Promise<MiniwobServer> {
  const htmlDirectory = options.htmlDirectory ?? (await locateMiniwobHtml(options.pythonPath));
  const server = await serveDirectory(
    htmlDirectory,
    options.port === undefined ? {} : { port: options.port },
  );
  return {
    ...server,
    taskUrl: (task) => {
      if (!/^[a-z0-9-]+$/.test(task)) {
        throw new ConfigError(`"${task}" is not a MiniWoB++ task name (such as click-test).`, {
          field: 'task',
        });
      }
      return `${server.url}miniwob/${task}.html`;
    },
    tasks: async () =>
      (await readdir(join(htmlDirectory, 'miniwob')))
        .filter((file) => file.endsWith('.html'))
        .map((file) => file.slice(0, -'.html'.length))
        .sort(),
  };
}

/** Options of {@link startMiniwobEpisode}. */
export interface MiniwobEpisodeOptions {
  /** Seed of the task's random generator (`Math.seedrandom(seed)`): the same seed gives the same instance. */
  seed: number | string;
  /** The task's data mode (`train` or `test` for tasks that split their data). Default `train`. */
  mode?: string;
  /**
   * Episode time limit in milliseconds (`core.EPISODE_MAX_TIME`); the timed reward decays
   * over it and the page ends the episode with -1 when it runs out. Default: the page's own
   * (10 000 ms). Agents that think for seconds need more (BrowserGym uses 10^6).
   */
  timeLimitMs?: number;
  /** Milliseconds to wait for the page to be ready. Default 10 000. */
  timeoutMs?: number;
}

/** The state of a MiniWoB++ episode, as the page reports it. */
export interface MiniwobReward {
  /** The episode ended (the task's success or failure, or its time limit). */
  done: boolean;
  /** The task's reward in [-1, 1], scaled down by the time taken. */
  reward: number;
  /** The reward without the time scaling: 1 on success, -1 (or a partial score) on failure. */
  rawReward: number;
  /** The task's reason for the reward, when it gives one. */
  reason: unknown;
}

/**
 * Starts an episode on a MiniWoB++ task page that is already loaded: seeds the task's
 * random generator, sets the data mode and time limit, and calls the page's
 * `core.startEpisodeReal()`. Returns the instruction the page shows (`#query`).
 *
 * @throws EnvironmentError when the page is not a MiniWoB++ task page or does not get ready.
 */
export async function startMiniwobEpisode(
  page: Page,
  options: MiniwobEpisodeOptions,
): Promise<{ instruction: string }> {
  const timeout = options.timeoutMs ?? 10_000;
  try {
    await page.waitForFunction(
      'typeof core !== "undefined" && typeof core.startEpisodeReal === "function"',
      undefined,
      {
        timeout,
      },
    );
  } catch (error) {
    throw new EnvironmentError(
      `${page.url()} is not a MiniWoB++ task page (no core.startEpisodeReal).`,
      {
        cause: error,
      },
    );
  }
  await page.evaluate(
    ({ seed, mode, timeLimitMs }) => {
      const scope = globalThis as unknown as {
        Math: { seedrandom: (seed: string | number) => void };
        core: {
          EPISODE_MAX_TIME: number;
          setDataMode(mode: string): void;
          startEpisodeReal(): void;
        };
      };
      scope.Math.seedrandom(seed);
      scope.core.setDataMode(mode);
      if (timeLimitMs !== null) scope.core.EPISODE_MAX_TIME = timeLimitMs;
      scope.core.startEpisodeReal();
    },
    { seed: options.seed, mode: options.mode ?? 'train', timeLimitMs: options.timeLimitMs ?? null },
  );
  await page.waitForFunction('WOB_TASK_READY === true', undefined, { timeout });
  const instruction = (await page.evaluate('core.getUtterance()')) as unknown;
  return { instruction: typeof instruction === 'string' ? instruction : String(instruction ?? '') };
}

/** Reads the episode's reward and termination from the page's globals. */
export async function readMiniwobReward(page: Page): Promise<MiniwobReward> {
  return (await page.evaluate(
    '({ done: WOB_DONE_GLOBAL === true, reward: Number(WOB_REWARD_GLOBAL), rawReward: Number(WOB_RAW_REWARD_GLOBAL), reason: WOB_REWARD_REASON })',
  )) as MiniwobReward;
}

/** Options of {@link miniwobTaskHooks}. */
export interface MiniwobHooksOptions {
  /** The running page server. */
  server: MiniwobServer;
  /** Which reward the environment returns: the raw task reward (default) or the time-scaled one. */
  reward?: 'raw' | 'timed';
  /** Episode time limit (see {@link MiniwobEpisodeOptions.timeLimitMs}). */
  timeLimitMs?: number;
}

/**
 * The MiniWoB++ task of a `Task`: `task.meta.miniwobTask` (else `task.id` up to a `:`), and
 * its seed, `task.meta.seed` (else the number after the `:`, else 0).
 */
export function miniwobTaskOf(task: Task): { name: string; seed: number | string } {
  const [idName, idSeed] = task.id.split(':');
  const name = typeof task.meta.miniwobTask === 'string' ? task.meta.miniwobTask : idName!;
  const seed =
    typeof task.meta.seed === 'number' || typeof task.meta.seed === 'string'
      ? task.meta.seed
      : idSeed !== undefined && idSeed !== ''
        ? idSeed
        : 0;
  return { name, seed };
}

/**
 * Hooks that run MiniWoB++ tasks on a `BrowserEnvironment`: each episode opens the task's
 * page, starts it with the task's seed, and every step reads the page's reward; the episode
 * ends when the page says so. The page's instruction becomes `observation.meta.instruction`.
 *
 * @example
 * const server = await startMiniwobServer();
 * const environment = await BrowserEnvironment.create({ hooks: miniwobTaskHooks({ server }) });
 * await environment.reset({ id: 'click-test:3', domain: 'miniwob', instruction: 'click-test', origin: 'seed', meta: {} });
 */
export function miniwobTaskHooks(options: MiniwobHooksOptions): BrowserTaskHooks {
  return {
    start: (task) => ({ urls: [options.server.taskUrl(miniwobTaskOf(task).name)] }),
    onReset: async ({ task, page }) =>
      startMiniwobEpisode(page, {
        seed: miniwobTaskOf(task).seed,
        ...(options.timeLimitMs === undefined ? {} : { timeLimitMs: options.timeLimitMs }),
      }),
    evaluate: async ({ page }) => {
      const state = await readMiniwobReward(page);
      const reward = state.done ? (options.reward === 'timed' ? state.reward : state.rawReward) : 0;
      return {
        reward,
        done: state.done,
        ...(state.done ? { success: state.rawReward > 0 } : {}),
        info: { miniwob: state },
      };
    },
  };
}
