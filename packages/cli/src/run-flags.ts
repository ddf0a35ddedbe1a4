/**
 * The flags of the commands that start a run (`dreamgym train`, `dreamgym serve`) over the
 * `--config` file: each sets one field of the loop's configuration, of the domain's set-up or
 * of the policy, with one meaning in every command. What a field then does is the loop's
 * business (core's `DreamGymConfig`); nothing here decides it a second time.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DreamGymLoop, parseDreamGymConfig, parseOptions } from '@dreamgym/core';
import {
  type DomainSetupOptions,
  DomainSetupOptionsSchema,
  LLM_POLICY_PACKAGE,
  type ModelSelection,
  RUN_SPEC_FILE,
  type RunPolicySettings,
  type RunSpec,
  readRunSpec,
} from '@dreamgym/run';
import {
  type CommandIo,
  decimal,
  type FlagSpec,
  type FlagSpecs,
  type FlagValues,
  fail,
  integer,
  recallTarget,
} from './command-arguments.js';
import { modelSettings } from './run-models.js';

/**
 * A flag that sets one field of the loop's configuration: its value as `parse` read it (a
 * number), or as `value` makes it from the text and the field's value in the file (which a
 * flag that switches a part on keeps). A flag never replaces an object the file gave: it sets
 * its one field. `undefined` removes the field.
 */
interface ConfigFlag {
  path: readonly string[];
  parse?: FlagSpec['parse'];
  value?(text: string, flag: string, current: unknown): unknown;
}

/** A flag whose value is one of `choices`, each standing for a field value. */
function choice(choices: Record<string, unknown>, names: string): ConfigFlag['value'] {
  return (text, flag) => {
    if (!Object.hasOwn(choices, text)) fail(`${flag} must be ${names}, got "${text}".`, flag);
    return structuredClone(choices[text]);
  };
}

const CONFIG_FLAGS: Record<string, ConfigFlag> = {
  iterations: { path: ['iterations'], parse: integer },
  seed: { path: ['seed'], parse: integer },
  algorithm: { path: ['algorithm'] },
  'tasks-per-iteration': { path: ['tasksPerIteration'], parse: integer },
  'rollouts-per-task': { path: ['rolloutsPerTask'], parse: integer },
  'max-steps': { path: ['maxSteps'], parse: integer },
  concurrency: { path: ['concurrency'], parse: integer },
  'checkpoint-every': { path: ['checkpointEvery'], parse: integer },
  lambda: { path: ['curriculum', 'lambda'], parse: decimal },
  k: { path: ['retrieval', 'k'], parse: integer },
  'real-budget': { path: ['simToReal', 'realTransitionBudget'], parse: integer },
  'eval-every': { path: ['evaluation', 'every'], parse: integer },
  'eval-env': {
    path: ['evaluation', 'environments'],
    value: choice(
      { real: ['real'], synthetic: ['synthetic'], both: ['synthetic', 'real'] },
      'real, synthetic or both',
    ),
  },
  'eval-mode': {
    path: ['evaluation', 'modes'],
    value: choice(
      { greedy: ['greedy'], sampled: ['sampled'], both: ['greedy', 'sampled'] },
      'greedy, sampled or both',
    ),
  },
  'gap-tasks': { path: ['evaluation', 'gapTasks'], parse: integer },
  'keep-best-on-real': { path: ['selection', 'realTasks'], parse: integer },
  credit: {
    path: ['trainer', 'credit'],
    value: choice({ episode: 'episode', fork: 'fork' }, 'episode or fork'),
  },
  // `bc` keeps the file's cloning settings (`maxTrajectories` ...); `none` removes them.
  'warm-start': {
    path: ['warmStart', 'behaviourCloning'],
    value: (text, flag, current) => {
      if (text === 'bc') return current ?? {};
      if (text === 'none') return undefined;
      return fail(`${flag} must be bc or none, got "${text}".`, flag);
    },
  },
};

/** Switches that turn one part of the loop off (the ablations); serve has its own names for two. */
const OFF_FLAGS: Record<string, readonly string[]> = {
  'no-curriculum': ['curriculum', 'enabled'],
  'no-retrieval': ['retrieval', 'enabled'],
  'no-replay': ['retrieval', 'enabled'],
  'no-history': ['history', 'enabled'],
  'no-replay-write-back': ['replayWriteBack'],
  'no-write-back': ['replayWriteBack'],
};

/** Every flag that sets a field of the loop's configuration, and the field it sets. */
export const LOOP_FLAG_PATHS: ReadonlyMap<string, readonly string[]> = new Map([
  ...Object.entries(CONFIG_FLAGS).map(([name, flag]) => [name, flag.path] as const),
  ...Object.entries(OFF_FLAGS),
]);

/**
 * The parser specs of the loop flags `names` (all of them by default): a value flag takes a
 * string, an ablation switch is a boolean. A command's flag list is taken from here, so a
 * flag is declared once.
 */
export function loopFlagSpecs(names: readonly string[] = [...LOOP_FLAG_PATHS.keys()]): FlagSpecs {
  return Object.fromEntries(
    names.map((name): [string, FlagSpec] => {
      if (Object.hasOwn(CONFIG_FLAGS, name)) {
        const { parse } = CONFIG_FLAGS[name]!;
        return [name, parse ? { type: 'string', parse } : { type: 'string' }];
      }
      if (Object.hasOwn(OFF_FLAGS, name)) return [name, { type: 'boolean' as const }];
      throw new Error(`--${name} is not a loop flag`);
    }),
  );
}

/** Reads a JSON object from `file`; errors name the flag that gave the file. */
export async function readJsonFile(file: string, flag: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    fail(`${flag} ${file} does not exist.`, flag);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    fail(`${file} is not valid JSON: ${(error as Error).message}`, flag);
  }
}

/** `$DREAMGYM_DATA_DIR/<domain>`, or undefined when the variable is unset. */
export function defaultDataDirectory(domain: string, io: CommandIo): string | undefined {
  const root = io.env.DREAMGYM_DATA_DIR;
  return root ? resolve(io.cwd, root, domain) : undefined;
}

/**
 * Sets `path` in `target` (removes it for `undefined`), copying the objects on the way so the
 * input is left as it was.
 */
export function setField(
  target: Record<string, unknown>,
  path: readonly string[],
  value: unknown,
): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    node[key] = { ...((node[key] as Record<string, unknown> | undefined) ?? {}) };
    node = node[key] as Record<string, unknown>;
  }
  if (value === undefined) delete node[path.at(-1)!];
  else node[path.at(-1)!] = value;
}

/** The value at `path` in `source`, or undefined. */
function fieldAt(source: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = source;
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** The loop's configuration: the file's fields with every loop flag given over them. */
export function loopConfigFromFlags(
  values: FlagValues,
  file: Record<string, unknown>,
): Record<string, unknown> {
  const config = structuredClone(file);
  for (const [name, flag] of Object.entries(CONFIG_FLAGS)) {
    const given = values[name];
    if (given === undefined) continue;
    const value =
      flag.value && typeof given === 'string'
        ? flag.value(given, `--${name}`, fieldAt(config, flag.path))
        : given;
    setField(config, flag.path, value);
  }
  for (const [name, path] of Object.entries(OFF_FLAGS)) {
    if (values[name] === true) setField(config, path, false);
  }
  return config;
}

/** The set-up flags, each with how its text is read (a number flag's errors name it). */
const SETUP_FLAGS: FlagSpecs = {
  'adapter-package': { type: 'string' },
  offline: { type: 'string', multiple: true },
  'offline-limit': { type: 'string', parse: integer },
  'skip-invalid': { type: 'boolean' },
  'buffer-cap': { type: 'string', parse: integer },
  'train-tasks': { type: 'string', parse: integer },
  'eval-split': { type: 'string' },
  'eval-tasks': { type: 'string', parse: integer },
  index: { type: 'string' },
  'target-recall': { type: 'string', parse: recallTarget },
  'no-outcome-judge': { type: 'boolean' },
  'no-world-memory': { type: 'boolean' },
};

/** The parser specs of the set-up flags `names`: a command's flag list is taken from here. */
export function setupFlagSpecs(names: readonly (keyof typeof SETUP_FLAGS)[]): FlagSpecs {
  return Object.fromEntries(
    names.map((name) => {
      if (!Object.hasOwn(SETUP_FLAGS, name)) throw new Error(`--${name} is not a set-up flag`);
      return [name, SETUP_FLAGS[name]!];
    }),
  );
}

/**
 * The set-up fields the flags give (`--offline-limit`, `--eval-split` ...), as `parseFlags`
 * read them with {@link setupFlagSpecs}; absent flags give none.
 */
export function setupFlags(values: FlagValues, io: CommandIo): Partial<DomainSetupOptions> {
  const string = (name: string) => (values[name] as string | undefined) || undefined;
  const count = (name: string) => values[name] as number | undefined;
  const fields: Partial<DomainSetupOptions> = {
    adapterPackage: string('adapter-package'),
    offline: (values.offline as string[] | undefined)?.map((file) => resolve(io.cwd, file)),
    offlineLimit: count('offline-limit'),
    trainTasks: count('train-tasks'),
    evalSplit: string('eval-split'),
    evalTasks: count('eval-tasks'),
    index: string('index') as DomainSetupOptions['index'],
    targetRecall: values['target-recall'] as number | undefined,
    skipInvalid: values['skip-invalid'] ? true : undefined,
    bufferCapacity: count('buffer-cap'),
    outcomeJudge: values['no-outcome-judge'] ? false : undefined,
    worldMemory: values['no-world-memory'] ? false : undefined,
  };
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined),
  ) as Partial<DomainSetupOptions>;
}

/**
 * The domain's set-up: `--domain`, `--data` and the set-up flags over the file's `setup`
 * object, checked. Returned as given (no defaults filled in): it is what `run.json` keeps.
 */
export function domainSetupFromFlags(
  values: FlagValues,
  fileSetup: Record<string, unknown>,
  io: CommandIo,
  usage: string,
): DomainSetupOptions {
  const domain = (values.domain as string | undefined) ?? (fileSetup.domain as string | undefined);
  if (!domain) fail(`--domain is required (e.g. --domain alfworld).\n\n${usage}`, '--domain');
  const data =
    (values.data as string | undefined) ??
    (fileSetup.data as string | undefined) ??
    defaultDataDirectory(domain, io);
  if (!data) {
    fail(
      `--data DIR is required (the ${domain} dataset folder), or set DREAMGYM_DATA_DIR to the folder holding ${domain}/.`,
      '--data',
    );
  }
  const setup: DomainSetupOptions = {
    ...(fileSetup as Partial<DomainSetupOptions>),
    domain,
    data: resolve(io.cwd, data),
    ...setupFlags(values, io),
  };
  parseOptions(DomainSetupOptionsSchema, setup, 'domain set-up');
  return setup;
}

/** `--run-dir`, or a new folder `runs/<prefix><domain>-<date>`, resolved. */
export function runFolderFlag(values: FlagValues, io: CommandIo, prefix = ''): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
  return resolve(
    io.cwd,
    (values['run-dir'] as string | undefined) ??
      join('runs', `${prefix}${(values.domain as string | undefined) ?? 'run'}-${stamp}`),
  );
}

/** `--policy` and its flags over the config file's `llmPolicy` object. */
export function policySettingsFromFlags(
  values: FlagValues,
  fileLlmPolicy: unknown,
): RunPolicySettings {
  const string = (name: string) => values[name] as string | undefined;
  const kind = string('policy') ?? (fileLlmPolicy === undefined ? 'linear' : 'llm');
  if (kind !== 'linear' && kind !== 'llm')
    fail(`--policy must be linear or llm, got "${kind}".`, '--policy');
  const llmFlags = ['policy-model', 'policy-action', 'policy-device', 'policy-package'].filter(
    (name) => values[name] !== undefined,
  );
  if (kind === 'linear') {
    if (llmFlags.length > 0)
      fail(
        `--${llmFlags[0]} is a setting of the LLM policy: add --policy llm.`,
        `--${llmFlags[0]}`,
      );
    return { kind: 'linear' };
  }
  if (
    fileLlmPolicy !== undefined &&
    (typeof fileLlmPolicy !== 'object' || fileLlmPolicy === null || Array.isArray(fileLlmPolicy))
  ) {
    fail('The config file\'s "llmPolicy" must be an object of LLM policy settings.', 'llmPolicy');
  }
  const settings: Record<string, unknown> = structuredClone(
    (fileLlmPolicy as Record<string, unknown> | undefined) ?? {},
  );
  // The policy trains in process: --model backs it unless that model is behind a server.
  const model =
    string('policy-model') ?? (string('base-url') === undefined ? string('model') : undefined);
  if (model !== undefined) settings.model = model;
  else if (string('base-url') !== undefined && settings.model === undefined) {
    fail(
      `--policy llm trains its model in process, and --model ${string('model') ?? '(none)'} is served at --base-url: name the policy's local model with --policy-model local|PATH.gguf.`,
      '--policy-model',
    );
  }
  const action = string('policy-action');
  if (action !== undefined) {
    if (action !== 'auto' && action !== 'generate' && action !== 'score')
      fail(`--policy-action must be auto, generate or score, got "${action}".`, '--policy-action');
    settings.actionSelection = action;
  }
  const device = string('policy-device');
  if (device !== undefined) {
    if (!/^(cpu|cuda(:\d+)?)$/.test(device))
      fail(`--policy-device must be cpu, cuda or cuda:N, got "${device}".`, '--policy-device');
    setField(settings, ['trainer', 'device'], device);
  }
  return { kind: 'llm', package: string('policy-package') ?? LLM_POLICY_PACKAGE, settings };
}

/** A `dreamgym train` run folder's settings: how its parts are built, and the loop's configuration. */
export interface SavedRun {
  /** `run.json`: the domain's set-up, the policy, the model flags. */
  spec: RunSpec & { policy: RunPolicySettings; models: Record<string, string> };
  /** `config.json`: the loop's configuration as the loop wrote it. */
  config: Record<string, unknown>;
}

/** Reads what a `dreamgym train` run folder keeps; errors name the file and `--run-dir`. */
export async function readSavedRun(runDirectory: string): Promise<SavedRun> {
  const spec = await readRunSpec(runDirectory);
  if (spec === undefined || spec.command !== 'train') {
    fail(
      `${runDirectory} holds no dreamgym train run (no ${RUN_SPEC_FILE}${spec ? ' of train: it was started by dreamgym serve' : ''}).`,
      '--run-dir',
    );
  }
  return {
    spec: { ...spec, policy: spec.policy ?? { kind: 'linear' }, models: spec.models ?? {} },
    config: await readJsonFile(join(runDirectory, 'config.json'), '--run-dir'),
  };
}

/** What `dreamgym train`'s flags (over its `--config` file, or the run folder it resumes) say. */
export interface TrainRunFlags {
  /** The run folder. */
  runDirectory: string;
  /** Continue the run in the folder (`--resume`). */
  resume: boolean;
  /** With `resume`: go on to more iterations or a larger real budget (`--extend`). */
  extend: boolean;
  /** Train even where the pre-flight check refuses (`--force`). */
  force: boolean;
  /** Whether the folder's own settings were read (a resumed run keeps them). */
  resumesSavedRun: boolean;
  /**
   * The loop's configuration, checked: the file's (or the saved run's) fields with every flag
   * over them and, for a new run, the CLI's defaults (both evaluation modes, the start
   * measured). `evaluation.environments` absent means the adapter's default.
   */
  config: Record<string, unknown>;
  /** The domain's set-up, as given (what `run.json` keeps). */
  setup: DomainSetupOptions;
  /** The policy to train. */
  policy: RunPolicySettings;
  /** The model flags the run keeps, and what they select. */
  models: { flags: Record<string, string>; selection: ModelSelection };
}

/**
 * `dreamgym train`'s run from its flags: the flags over the `--config` file, or on `--resume`
 * over the settings the run folder saved (a resumed run keeps them; the loop refuses a
 * changed configuration, except, with `--extend`, a larger `--iterations` or
 * `--real-budget`). Every flag is read here, once; nothing is loaded.
 */
export async function trainRunFromFlags(
  values: FlagValues,
  io: CommandIo,
  usage: string,
): Promise<TrainRunFlags> {
  const runDirectory = runFolderFlag(values, io);
  if (values.extend && !values.resume) {
    fail('--extend goes on with the run in --run-dir: pass --resume with it.', '--extend');
  }
  // The loop refuses this too, but only once the domain has loaded and the run's files are written.
  const existing = await DreamGymLoop.latestCheckpoint(runDirectory);
  if (existing !== undefined && !values.resume) {
    fail(
      `${runDirectory} already holds a run (checkpoint ${existing}). Pass --resume to continue it, or choose another --run-dir.`,
      '--run-dir',
    );
  }
  const saved =
    values.resume && (await readRunSpec(runDirectory)) !== undefined
      ? await readSavedRun(runDirectory)
      : undefined;
  const file = saved
    ? { ...saved.config, setup: saved.spec.setup }
    : values.config
      ? await readJsonFile(resolve(io.cwd, values.config as string), '--config')
      : {};
  const {
    setup: fileSetup = {},
    llmPolicy,
    ...fileConfig
  } = file as { setup?: Record<string, unknown>; llmPolicy?: unknown };
  const config = loopConfigFromFlags(values, fileConfig);
  if (!saved) newRunDefaults(config, values);
  parseDreamGymConfig(config);
  const flagPolicy = policySettingsFromFlags(values, llmPolicy);
  if (saved && values.policy !== undefined && values.policy !== saved.spec.policy.kind) {
    fail(
      `${runDirectory} trains the ${saved.spec.policy.kind} policy (${RUN_SPEC_FILE}); --resume continues it as it started: drop --policy ${String(values.policy)}.`,
      '--policy',
    );
  }
  const policy = saved?.spec.policy ?? flagPolicy;
  return {
    runDirectory,
    resume: values.resume === true,
    extend: values.extend === true,
    force: values.force === true,
    resumesSavedRun: saved !== undefined,
    config,
    setup: domainSetupFromFlags(values, fileSetup, io, usage),
    policy,
    models: modelSettings(values, {
      policy: policy.kind,
      ...(saved ? { saved: saved.spec.models } : {}),
      runDirectory,
    }),
  };
}

/**
 * The CLI's defaults for a new run, where the config file leaves them: both evaluation modes,
 * and the starting policy measured by the loop before training (the "before" of the run)
 * unless `--no-baseline`. A resumed run keeps what its `config.json` says.
 */
function newRunDefaults(config: Record<string, unknown>, values: FlagValues): void {
  const evaluation = (config.evaluation ?? {}) as { modes?: unknown; atStart?: unknown };
  if (evaluation.modes === undefined)
    setField(config, ['evaluation', 'modes'], ['greedy', 'sampled']);
  setField(
    config,
    ['evaluation', 'atStart'],
    values['no-baseline'] === true ? false : (evaluation.atStart ?? true),
  );
}
