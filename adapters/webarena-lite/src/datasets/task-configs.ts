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

/** How a config file is read: fail on the first bad config file, or skip and report. */
export interface ReadConfigOptions {
  /** Return the valid configs and report each invalid one to `onInvalid` instead of failing. */
  skipInvalid?: boolean;
  onInvalid?: (error: DatasetFormatError) => void;
}

/** `task_id N` of a config value, or `config #i` where it has none. */
function recordIdOf(value: unknown, path: readonly (string | number)[]): string | undefined {
  const taskId = (value as { task_id?: unknown } | null)?.task_id;
  if (typeof taskId === 'number' || typeof taskId === 'string') return `task_id ${taskId}`;
  return typeof path[0] === 'number' ? `config #${path[0]}` : undefined;
}

/**
 * Reads and validates every config in one file (a JSON array of configs, or one config).
 * Every invalid config is named with its file, line, column, task id and field: by default
 * in one error that lists them all; with `skipInvalid` each goes to `onInvalid` and the valid
 * configs are returned.
 *
 * @throws DatasetNotFoundError when the file is missing; DatasetFormatError for a JSON syntax
 * error (its line, column and config), or for invalid configs unless `skipInvalid`.
 */
export async function readWebarenaConfigFile(
  file: string,
  options: ReadConfigOptions = {},
): Promise<LocatedConfig[]> {
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
  const valid: LocatedConfig[] = [];
  const invalid: DatasetFormatError[] = [];
  for (const { value, path } of entries) {
    const result = WebarenaConfigSchema.safeParse(value);
    if (result.success) {
      valid.push({ config: result.data, file, line: document.lineOf(path) });
      continue;
    }
    const issue = result.error.issues[0]!;
    const field = formatFieldPath(issue.path);
    const position = document.positionOf([
      ...path,
      ...issue.path.map((key) => key as string | number),
    ]);
    const recordId = recordIdOf(value, path);
    invalid.push(
      new DatasetFormatError(
        `${issue.message}${result.error.issues.length > 1 ? ` (+${result.error.issues.length - 1} more)` : ''}`,
        {
          file,
          line: position.line,
          column: position.column,
          ...(recordId ? { recordId } : {}),
          ...(field ? { field } : {}),
          cause: result.error,
        },
      ),
    );
  }
  reportInvalid(invalid, entries.length, file, options);
  return valid;
}

/** Sends `invalid` to `onInvalid` (skipInvalid), or throws one error naming every one. */
function reportInvalid(
  invalid: DatasetFormatError[],
  total: number,
  file: string,
  options: ReadConfigOptions,
): void {
  if (invalid.length === 0) return;
  if (options.skipInvalid) {
    for (const error of invalid) options.onInvalid?.(error);
    return;
  }
  const [first] = invalid;
  if (invalid.length === 1) throw first!;
  throw new DatasetFormatError(
    `${invalid.length} of ${total} configs are invalid (skipInvalid, or --skip-invalid, loads the others):\n${invalid.map((error) => `  ${error.message}`).join('\n')}`,
    {
      file,
      ...(first!.line === undefined ? {} : { line: first!.line }),
      ...(first!.column === undefined ? {} : { column: first!.column }),
      cause: invalid,
    },
  );
}

/**
 * The config files of a dataset directory: its `*.raw.json` files first (the configs with site
 * placeholders, which any deployment resolves), then its other `*.json` files, then
 * `config_files/*.json` (WebArena's generated per-task copies).
 */
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
      .sort(
        (a, b) =>
          Number(b.endsWith('.raw.json')) - Number(a.endsWith('.raw.json')) ||
          a.localeCompare(b, 'en', { numeric: true }),
      )
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
 * configs are the `test` split: with `splits` that leave it out, nothing is read. A task id
 * found again in another file is the same task in another copy (WebArena's data generation
 * writes `test.raw.json`, `test.json` and `config_files/<id>.json` side by side): the first
 * copy is kept. Twice in one file is an invalid config.
 *
 * @throws DatasetFormatError naming every invalid config (file, line, column, task id, field),
 * unless `skipInvalid`, which loads the valid ones and reports the others to `onInvalid`.
 */
export async function* loadWebarenaTasks(
  dir: string,
  options: DatasetLoadOptions & { sites?: WebarenaSites } = {},
): AsyncGenerator<Task> {
  if (options.splits && !options.splits.includes('test')) return;
  const seen = new Map<number, { file: string; line: number }>();
  const readOptions: ReadConfigOptions = {
    ...(options.skipInvalid ? { skipInvalid: true } : {}),
    ...(options.onInvalid ? { onInvalid: options.onInvalid } : {}),
  };
  let count = 0;
  for (const file of await webarenaConfigFiles(dir)) {
    let configs: LocatedConfig[];
    try {
      configs = await readWebarenaConfigFile(file, readOptions);
    } catch (error) {
      // A file that is not JSON at all: with skipInvalid, reported and passed over.
      if (!options.skipInvalid || !DatasetFormatError.isInstance(error)) throw error;
      options.onInvalid?.(error);
      continue;
    }
    const duplicates: DatasetFormatError[] = [];
    for (const located of configs) {
      if (options.limit !== undefined && count >= options.limit) return;
      const first = seen.get(located.config.task_id);
      if (first !== undefined) {
        if (first.file !== file) continue; // another copy of the same task
        duplicates.push(
          new DatasetFormatError(
            `task_id ${located.config.task_id} appears twice in this file (first at line ${first.line})`,
            {
              file,
              line: located.line,
              recordId: `task_id ${located.config.task_id}`,
              field: 'task_id',
            },
          ),
        );
        continue;
      }
      seen.set(located.config.task_id, { file, line: located.line });
      yield webarenaConfigToTask(located, options.sites);
      count += 1;
    }
    reportInvalid(duplicates, configs.length, file, readOptions);
  }
}

/** The task loader as a core {@link DatasetLoader}, with site URLs to resolve placeholders. */
export function webarenaTaskLoader(sites: WebarenaSites = {}): DatasetLoader<Task> {
  return { load: (dir, options) => loadWebarenaTasks(dir, { ...options, sites }) };
}
