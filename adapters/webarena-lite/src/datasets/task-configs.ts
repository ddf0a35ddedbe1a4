/**
 * Loader of WebArena task configs as DreamGym tasks: WebArena-Lite's 165
 * `test_webarena_lite.raw.json`, WebArena's 812 `test.raw.json`, or WebArena's generated
 * per-task `config_files/<id>.json`, validated with `file:line` errors.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Task,
} from '@dreamgym/core';
import { formatFieldPath } from '@dreamgym/core/mdp';
import { type WebarenaConfig, WebarenaConfigSchema } from '../config/config-schema.js';
import { parseJsonWithLines } from '../config/json-with-lines.js';
import { resolvePlaceholdersDeep, type WebarenaSites } from '../config/sites.js';

/** The WebArena-Lite config file, as VisualAgentBench publishes it. */
export const WEBARENA_LITE_CONFIG_FILE = 'test_webarena_lite.raw.json';

/** The domain name of WebArena-Lite tasks. */
export const WEBARENA_LITE_DOMAIN = 'webarena-lite';

/** A validated config and where it was read. */
export interface LocatedConfig {
  config: WebarenaConfig;
  file: string;
  line: number;
}

/**
 * Reads and validates every config in one file (a JSON array of configs, or one config).
 *
 * @throws DatasetNotFoundError when the file is missing; DatasetFormatError naming the
 * file, line and field of the first invalid config.
 */
export async function readWebarenaConfigFile(file: string): Promise<LocatedConfig[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new DatasetNotFoundError(`WebArena config file ${file} does not exist.`, {
      path: file,
      cause: error,
    });
  }
  const document = parseJsonWithLines(text, file);
  const entries: { value: unknown; path: (string | number)[] }[] = Array.isArray(document.value)
    ? document.value.map((value, index) => ({ value, path: [index] }))
    : [{ value: document.value, path: [] }];
  return entries.map(({ value, path }) => {
    const result = WebarenaConfigSchema.safeParse(value);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      const field = formatFieldPath(issue.path);
      throw new DatasetFormatError(
        `${issue.message}${result.error.issues.length > 1 ? ` (+${result.error.issues.length - 1} more)` : ''}`,
        {
          file,
          line: document.lineOf([...path, ...issue.path.map((key) => key as string | number)]),
          ...(field ? { field } : {}),
          cause: result.error,
        },
      );
    }
    return { config: result.data, file, line: document.lineOf(path) };
  });
}

/** The config files of a dataset directory: its `*.json` files, then `config_files/*.json`. */
export async function webarenaConfigFiles(dir: string): Promise<string[]> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new DatasetNotFoundError(
      `WebArena data directory ${dir} does not exist. Pass the directory that holds ${WEBARENA_LITE_CONFIG_FILE} (with --data DIR or $DREAMGYM_DATA_DIR/webarena-lite), or download it with datasets.download(dir).`,
      { path: dir },
    );
  }
  const jsonIn = async (directory: string) =>
    (await readdir(directory).catch(() => [] as string[]))
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
      .map((name) => join(directory, name));
  const files = [...(await jsonIn(dir)), ...(await jsonIn(join(dir, 'config_files')))];
  if (files.length === 0) {
    throw new DatasetNotFoundError(
      `${dir} holds no WebArena config files: expected ${WEBARENA_LITE_CONFIG_FILE}, WebArena's test.raw.json, or config_files/<id>.json.`,
      { path: dir },
    );
  }
  return files;
}

/** The DreamGym task id of a config. */
export function webarenaTaskId(config: Pick<WebarenaConfig, 'task_id'>): string {
  return `webarena:${config.task_id}`;
}

/**
 * A config as a seed {@link Task}: the intent is the instruction; `meta` carries the start
 * URL, login and evaluation spec the real connector needs (`meta.config`), with site
 * placeholders resolved for the sites given.
 */
export function webarenaConfigToTask(located: LocatedConfig, sites: WebarenaSites = {}): Task {
  const config = resolvePlaceholdersDeep(located.config, sites);
  return {
    id: webarenaTaskId(config),
    domain: WEBARENA_LITE_DOMAIN,
    instruction: config.intent,
    origin: 'seed',
    meta: {
      split: 'test',
      taskId: config.task_id,
      sites: config.sites,
      startUrl: config.start_url,
      requireLogin: config.require_login,
      ...(config.storage_state ? { storageState: config.storage_state } : {}),
      ...(config.geolocation ? { geolocation: config.geolocation } : {}),
      ...(config.intent_template === undefined ? {} : { intentTemplate: config.intent_template }),
      ...(config.intent_template_id === undefined
        ? {}
        : { intentTemplateId: config.intent_template_id }),
      ...(config.instantiation_dict === undefined
        ? {}
        : { instantiationDict: config.instantiation_dict }),
      evalTypes: config.eval.eval_types,
      config,
      source: { file: basename(located.file), line: located.line },
    },
  };
}

/**
 * Streams the tasks of every config file in `dir` (see {@link webarenaConfigFiles}). All
 * configs are the `test` split: with `splits` that leave it out, nothing is read.
 *
 * @throws DatasetFormatError for an invalid config, or a task id that appears twice.
 */
export async function* loadWebarenaTasks(
  dir: string,
  options: DatasetLoadOptions & { sites?: WebarenaSites } = {},
): AsyncGenerator<Task> {
  if (options.splits && !options.splits.includes('test')) return;
  const seen = new Map<number, string>();
  let count = 0;
  for (const file of await webarenaConfigFiles(dir)) {
    for (const located of await readWebarenaConfigFile(file)) {
      if (options.limit !== undefined && count >= options.limit) return;
      const first = seen.get(located.config.task_id);
      if (first !== undefined) {
        throw new DatasetFormatError(
          `task_id ${located.config.task_id} appears twice (first at ${first})`,
          {
            file,
            line: located.line,
            field: 'task_id',
          },
        );
      }
      seen.set(located.config.task_id, `${file}:${located.line}`);
      yield webarenaConfigToTask(located, options.sites);
      count += 1;
    }
  }
}

/** The task loader as a core {@link DatasetLoader}, with site URLs to resolve placeholders. */
export function webarenaTaskLoader(sites: WebarenaSites = {}): DatasetLoader<Task> {
  return { load: (dir, options) => loadWebarenaTasks(dir, { ...options, sites }) };
}
