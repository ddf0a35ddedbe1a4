/**
 * Loader of WebArena task configs as DreamGym tasks: WebArena-Lite's 165
 * `test_webarena_lite.raw.json`, WebArena's 812 `test.raw.json`, or WebArena's generated
 * per-task `config_files/<id>.json`. Everything is checked before anything is loaded, and
 * every problem is named in one error (`file:line:column (task_id N) (field ...)`).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import {
  DatasetFormatError,
  type DatasetLoader,
  type DatasetLoadOptions,
  DatasetNotFoundError,
  type Task,
} from '@dreamgym/core';
import { formatFieldPath } from '@dreamgym/core/mdp';
import { type WebarenaConfig, WebarenaConfigSchema } from '../config/config-schema.js';
import { type JsonPosition, parseConfigDocument } from '../config/json-with-lines.js';
import { resolvePlaceholdersDeep, type WebarenaSites } from '../config/sites.js';

/** The WebArena-Lite config file, as VisualAgentBench publishes it. */
export const WEBARENA_LITE_CONFIG_FILE = 'test_webarena_lite.raw.json';

/** The domain name of WebArena-Lite tasks. */
export const WEBARENA_LITE_DOMAIN = 'webarena-lite';

/** A validated config and where it was read. */
export interface LocatedConfig {
  config: WebarenaConfig;
  file: string;
  /** The line where the config starts. */
  line: number;
  /** Where its `task_id` value is, for errors about the id. */
  taskIdAt: JsonPosition;
}

/** How a config file is read: fail naming every problem, or skip and report. */
export interface ReadConfigOptions {
  /** Return the valid configs and report each problem to `onInvalid` instead of failing. */
  skipInvalid?: boolean;
  onInvalid?: (error: DatasetFormatError) => void;
}

/** A config file as read, before anything is loaded from it. */
export interface ConfigFileReading {
  file: string;
  /** The valid configs, in file order, each task id once. */
  configs: LocatedConfig[];
  /** Every problem, in file order: syntax errors, invalid configs, task ids found twice. */
  problems: DatasetFormatError[];
  /** Configs in the file, valid or not (as far as it could be read). */
  total: number;
}

/** `task_id N` of a config value, or `config #i` where it has none. */
function recordIdOf(value: unknown, path: readonly (string | number)[]): string | undefined {
  const taskId = (value as { task_id?: unknown } | null)?.task_id;
  if (typeof taskId === 'number' || typeof taskId === 'string') return `task_id ${taskId}`;
  return typeof path[0] === 'number' ? `config #${path[0]}` : undefined;
}

/** `line:column`. */
const at = (position: JsonPosition) => `${position.line}:${position.column}`;

/**
 * Reads one config file and checks all of it: JSON syntax (read past an error to the next
 * config where the layout allows, see {@link parseConfigDocument}), every config against the
 * schema (every failing field), and every task id against the others in the file. Nothing is
 * thrown for a problem in the file: each is in `problems`, named with its file, line, column,
 * task id and field.
 *
 * @throws DatasetNotFoundError when the file is missing.
 */
export async function inspectWebarenaConfigFile(file: string): Promise<ConfigFileReading> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new DatasetNotFoundError(`WebArena config file ${file} does not exist.`, {
      path: file,
      cause: error,
    });
  }
  const document = parseConfigDocument(text, file);
  const configs: LocatedConfig[] = [];
  const problems: { error: DatasetFormatError; order: number }[] = document.errors.map((error) => ({
    error,
    order: (error.line ?? 0) * 1e6 + (error.column ?? 0),
  }));
  const firstOf = new Map<number, LocatedConfig>();
  for (const { value, path } of document.configs) {
    const recordId = recordIdOf(value, path);
    const start = document.positionOf(path);
    const result = WebarenaConfigSchema.safeParse(value);
    if (!result.success) {
      const located = result.error.issues.map((issue) => ({
        issue,
        field: formatFieldPath(issue.path),
        position: document.positionOf([...path, ...issue.path.map((k) => k as string | number)]),
      }));
      const [first, ...others] = located;
      const more =
        others.length === 0
          ? ''
          : `; and ${others.map((other) => `${other.field ? `\`${other.field}\` ` : ''}at ${at(other.position)}: ${other.issue.message}`).join('; ')}`;
      problems.push({
        order: start.line * 1e6 + start.column,
        error: new DatasetFormatError(`${first!.issue.message}${more}`, {
          file,
          line: first!.position.line,
          column: first!.position.column,
          ...(recordId ? { recordId } : {}),
          ...(first!.field ? { field: first!.field } : {}),
          cause: result.error,
        }),
      });
      continue;
    }
    const taskIdAt = document.positionOf([...path, 'task_id']);
    const located: LocatedConfig = { config: result.data, file, line: start.line, taskIdAt };
    const earlier = firstOf.get(result.data.task_id);
    if (earlier !== undefined) {
      problems.push({
        order: start.line * 1e6 + start.column,
        error: new DatasetFormatError(
          `task_id ${result.data.task_id} appears twice in this file (first at ${at(earlier.taskIdAt)}): this config is not loaded; give it its own id`,
          {
            file,
            line: taskIdAt.line,
            column: taskIdAt.column,
            recordId: `task_id ${result.data.task_id}`,
            field: 'task_id',
          },
        ),
      });
      continue;
    }
    firstOf.set(result.data.task_id, located);
    configs.push(located);
  }
  return {
    file,
    configs,
    problems: problems.sort((a, b) => a.order - b.order).map(({ error }) => error),
    total: document.configs.length + document.unread,
  };
}

/**
 * Reads and validates every config in one file (a JSON array of configs, or one config).
 * Every problem is named with its file, line, column, task id and field: by default in one
 * error that lists them all; with `skipInvalid` each goes to `onInvalid` and the valid configs
 * are returned (those before an unrecoverable syntax error too).
 *
 * @throws DatasetNotFoundError when the file is missing; DatasetFormatError naming every syntax
 * error, invalid config and task id found twice, unless `skipInvalid`.
 */
export async function readWebarenaConfigFile(
  file: string,
  options: ReadConfigOptions = {},
): Promise<LocatedConfig[]> {
  const reading = await inspectWebarenaConfigFile(file);
  reportProblems(reading.problems, options, {
    where: file,
    configs: reading.total,
    valid: reading.configs.length,
  });
  return reading.configs;
}

/** Sends `problems` to `onInvalid` (skipInvalid), or throws one error naming every one. */
function reportProblems(
  problems: readonly DatasetFormatError[],
  options: ReadConfigOptions,
  context: { where: string; configs: number; valid: number },
): void {
  if (problems.length === 0) return;
  if (options.skipInvalid) {
    for (const error of problems) options.onInvalid?.(error);
    return;
  }
  const [first] = problems;
  if (problems.length === 1) throw first!;
  throw new DatasetFormatError(
    `${problems.length} problems in ${context.configs} configs; nothing was loaded (skipInvalid, or --skip-invalid, loads the ${context.valid} valid config${context.valid === 1 ? '' : 's'} and reports these):\n${problems.map((error) => `  ${error.message}`).join('\n')}`,
    {
      file: first!.file,
      ...(first!.line === undefined ? {} : { line: first!.line }),
      ...(first!.column === undefined ? {} : { column: first!.column }),
      cause: problems,
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
export function webarenaConfigToTask(
  located: Pick<LocatedConfig, 'config' | 'file' | 'line'>,
  sites: WebarenaSites = {},
): Task {
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

/** Whether two configs with one task id are copies of one task (same intent), as WebArena's data generation writes them. */
function sameTask(a: WebarenaConfig, b: WebarenaConfig): boolean {
  return a.intent === b.intent;
}

/**
 * Checks the task ids across files: a per-task file (`config_files/<id>.json`) must hold the
 * task its name says, and an id found in two files must be two copies of one task (WebArena's
 * data generation writes `test.raw.json`, `test.json` and `config_files/<id>.json` side by
 * side: the first copy is kept, `*.raw.json` first). Returns the configs to load, in order,
 * and a problem for each config left out for any other reason.
 */
function checkIdsAcrossFiles(dir: string, readings: readonly ConfigFileReading[]) {
  const perTaskDirectory = join(dir, 'config_files');
  const kept = new Map<number, LocatedConfig>();
  const problems: DatasetFormatError[] = [];
  const where = (located: LocatedConfig) =>
    `${relative(dir, located.file)}:${at(located.taskIdAt)}`;
  for (const reading of readings) {
    const named =
      dirname(reading.file) === perTaskDirectory ? basename(reading.file, '.json') : undefined;
    for (const located of reading.configs) {
      const id = located.config.task_id;
      const earlier = kept.get(id);
      const problem = (message: string) =>
        problems.push(
          new DatasetFormatError(message, {
            file: located.file,
            line: located.taskIdAt.line,
            column: located.taskIdAt.column,
            recordId: `task_id ${id}`,
            field: 'task_id',
          }),
        );
      if (named !== undefined && named !== String(id)) {
        problem(
          `config_files/${named}.json holds task_id ${id}: a per-task file is named after its task (task ${id} belongs in config_files/${id}.json${earlier ? `, and ${where(earlier)} already holds it` : ''}); this config is not loaded`,
        );
        continue;
      }
      if (earlier === undefined) kept.set(id, located);
      else if (!sameTask(earlier.config, located.config)) {
        problem(
          `task_id ${id} is also ${where(earlier)}, a different task (intent ${JSON.stringify(earlier.config.intent)}, here ${JSON.stringify(located.config.intent)}): two tasks with one id; this one is not loaded (keep one config set per directory, or give it its own id)`,
        );
      }
    }
  }
  return { configs: [...kept.values()], problems };
}

/**
 * Loads the tasks of every config file in `dir` (see {@link webarenaConfigFiles}). All
 * configs are the `test` split: with `splits` that leave it out, nothing is read. Every file is
 * read and checked before any task is yielded: JSON syntax (read past an error to the next
 * config where the layout allows), every config against the schema, and every task id — twice
 * in one file, a per-task file whose name is not its `task_id`, or one id for two different
 * tasks in two files. A task id in two files for one task (same intent) is a copy, as WebArena's
 * data generation writes them: the first copy is kept, `*.raw.json` first.
 *
 * @throws DatasetFormatError naming every problem in every file (file, line, column, task id,
 * field), before any task is yielded, unless `skipInvalid`, which reports each to `onInvalid`
 * and loads every config that has none.
 */
export async function* loadWebarenaTasks(
  dir: string,
  options: DatasetLoadOptions & { sites?: WebarenaSites } = {},
): AsyncGenerator<Task> {
  if (options.splits && !options.splits.includes('test')) return;
  const readings: ConfigFileReading[] = [];
  for (const file of await webarenaConfigFiles(dir)) {
    readings.push(await inspectWebarenaConfigFile(file));
  }
  const across = checkIdsAcrossFiles(dir, readings);
  const problems = [...readings.flatMap((reading) => reading.problems), ...across.problems];
  reportProblems(
    problems,
    {
      ...(options.skipInvalid ? { skipInvalid: true } : {}),
      ...(options.onInvalid ? { onInvalid: options.onInvalid } : {}),
    },
    {
      where: dir,
      configs: readings.reduce((sum, reading) => sum + reading.total, 0),
      valid: across.configs.length,
    },
  );
  let count = 0;
  for (const located of across.configs) {
    if (options.limit !== undefined && count >= options.limit) return;
    yield webarenaConfigToTask(located, options.sites);
    count += 1;
  }
}

/** The task loader as a core {@link DatasetLoader}, with site URLs to resolve placeholders. */
export function webarenaTaskLoader(sites: WebarenaSites = {}): DatasetLoader<Task> {
  return { load: (dir, options) => loadWebarenaTasks(dir, { ...options, sites }) };
}
