/**
 * The real WebArena-Lite environment: the browser environment of `@dreamgym/browser` on the
 * deployed WebArena sites, each episode logged in with its config's storage state, scored by
 * the config's evaluators when the agent stops (or its step budget runs out).
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import {
  BrowserEnvironment,
  type BrowserEvaluation,
  type BrowserTaskHooks,
  type BrowserTaskStart,
} from '@dreamgym/browser';
import { ConfigError, parseOptions, type Task } from '@dreamgym/core';
import { type WebarenaConfig, WebarenaConfigSchema } from '../config/config-schema.js';
import {
  resolvePlaceholders,
  resolvePlaceholdersDeep,
  sitesIn,
  type WebarenaSites,
} from '../config/sites.js';
import { evaluateWebarenaTask } from '../evaluation/evaluate-task.js';
import { WebarenaRealOptionsSchema, type WebarenaRealSetup } from './options.js';

/** Replaces the task's site placeholders, or says which site URL is missing. */
function resolveForTask(task: Task, text: string, sites: WebarenaSites): string {
  const resolved = resolvePlaceholders(text, sites);
  const missing = sitesIn(resolved);
  if (missing.length > 0) {
    throw new ConfigError(
      `Task ${task.id} uses the ${missing.join(', ')} site${missing.length > 1 ? 's' : ''}: set sites.${missing[0]} to its URL (e.g. sites: { ${missing[0]}: 'http://127.0.0.1:7770' }).`,
      { field: `sites.${missing[0]}` },
    );
  }
  return resolved;
}

/** Where the task's login storage state is, or undefined when it needs none. */
export function storageStatePath(
  task: Task,
  authDirectory: string | undefined,
): string | undefined {
  const declared = task.meta.storageState;
  if (typeof declared !== 'string' || declared === '' || task.meta.requireLogin === false)
    return undefined;
  const path =
    authDirectory === undefined ? resolve(declared) : join(authDirectory, basename(declared));
  if (!existsSync(path)) {
    throw new ConfigError(
      `Task ${task.id} logs in with the storage state ${declared}, which is not at ${path}. Create it by logging in to the site once (WebArena's browser_env/auto_login.py, or BrowserEnvironment.saveStorageState(path) after signing in), or point authDirectory to the folder that holds it.`,
      { field: 'authDirectory' },
    );
  }
  return path;
}

/** The task's config (seed tasks carry it in `meta.config`), or undefined for generated tasks. */
function configOf(task: Task): WebarenaConfig | undefined {
  if (task.meta.config === undefined) return undefined;
  const parsed = WebarenaConfigSchema.safeParse(task.meta.config);
  if (!parsed.success) {
    throw new ConfigError(
      `Task ${task.id} has an invalid meta.config: ${parsed.error.issues[0]!.message}`,
      {
        field: 'task.meta.config',
      },
    );
  }
  return parsed.data;
}

/**
 * Connects to the real WebArena sites: a {@link BrowserEnvironment} whose episodes open the
 * task's start pages (site placeholders resolved from `sites`, one tab per ` |AND| ` URL),
 * logged in with its storage state, and whose `stop [answer]` (or last step of the budget)
 * runs the task's evaluators: reward 1 when they pass, else 0, with `info.evaluation`
 * (`status` `passed` / `failed` / `not_evaluated` and every check). Generated tasks have no
 * evaluator and are reported `not_evaluated`.
 *
 * @throws ConfigError for invalid options; at reset, when a site URL or storage state is missing.
 * @example
 * const environment = await connectWebarenaLiteReal({
 *   sites: { shopping: 'http://127.0.0.1:7770' }, authDirectory: '.auth', judge,
 * });
 * await environment.reset(task);
 */
export async function connectWebarenaLiteReal(
  setup: WebarenaRealSetup = {},
): Promise<BrowserEnvironment> {
  const { judge, refiner, sharedBrowser, countTokens, ...data } = setup;
  const options = parseOptions(WebarenaRealOptionsSchema, data, 'WebArena-Lite', 'real');
  const hooks: BrowserTaskHooks = {
    start(task): BrowserTaskStart {
      const startUrl = task.meta.startUrl;
      if (typeof startUrl !== 'string' || startUrl.trim() === '') {
        throw new ConfigError(
          `Task ${task.id} has no start URL (task.meta.startUrl): load tasks with the adapter's loaders.`,
          {
            field: 'task.meta.startUrl',
          },
        );
      }
      const urls = resolveForTask(task, startUrl, options.sites)
        .split(' |AND| ')
        .map((url) => url.trim());
      const storageState = storageStatePath(task, options.authDirectory);
      const geolocation = task.meta.geolocation as BrowserTaskStart['geolocation'] | undefined;
      return {
        urls,
        ...(storageState ? { storageState } : {}),
        ...(geolocation ? { geolocation } : {}),
      };
    },
    async evaluate(step): Promise<BrowserEvaluation> {
      if (!step.stopped && !step.lastStep) return { reward: 0, done: false };
      const config = configOf(step.task);
      if (!config) {
        return {
          reward: 0,
          done: step.stopped,
          info: {
            evaluation: {
              status: 'not_evaluated',
              reason: `task ${step.task.id} has no evaluation config (a generated task)`,
            },
          },
        };
      }
      const evaluation = await evaluateWebarenaTask({
        config: resolvePlaceholdersDeep(config, options.sites),
        answer: step.answer ?? '',
        page: step.page,
        sites: options.sites,
        ...(judge ? { judge } : {}),
        ...(options.accounts ? { accounts: options.accounts } : {}),
        timeoutMs: options.evaluationTimeoutMs,
      });
      return {
        reward: evaluation.score ?? 0,
        done: step.stopped,
        ...(evaluation.status === 'not_evaluated'
          ? {}
          : { success: evaluation.status === 'passed' }),
        info: { evaluation },
      };
    },
  };
  return BrowserEnvironment.create({
    ...options.browser,
    hooks,
    ...(refiner ? { refiner } : {}),
    ...(sharedBrowser ? { browser: sharedBrowser } : {}),
    ...(countTokens ? { countTokens } : {}),
  });
}
