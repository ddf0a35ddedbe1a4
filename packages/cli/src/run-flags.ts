/**
 * The flags of the commands that start a run (`dreamgym train`, `dreamgym serve`) over the
 * `--config` file: each sets one field of the loop's configuration, of the domain's set-up or
 * of the policy, with one meaning in every command. What a field then does is the loop's
 * business (core's `DreamGymConfig`); nothing here decides it a second time.
 */
import { join, resolve } from 'node:path';
import { parseOptions } from '@dreamgym/core';
import {
  type DomainSetupOptions,
  DomainSetupOptionsSchema,
  LLM_POLICY_PACKAGE,
  type RunPolicySettings,
} from '@dreamgym/run';
import {
  type CommandIo,
  decimal,
  defaultDataDirectory,
  type FlagValues,
  fail,
  integer,
  recallTarget,
} from './command-arguments.js';

/**
 * A flag that sets one field of the loop's configuration from its text (and the field's value
 * in the file, which a flag that switches a part on keeps). A flag never replaces an object
 * the file gave: it sets its one field. `undefined` removes the field.
 */
interface ConfigFlag {
  path: readonly string[];
  value(text: string, flag: string, current: unknown): unknown;
}

/** A flag whose value is one of `choices`, each standing for a field value. */
function choice(choices: Record<string, unknown>, names: string): ConfigFlag['value'] {
  return (text, flag) => {
    if (!Object.hasOwn(choices, text)) fail(`${flag} must be ${names}, got "${text}".`, flag);
    return structuredClone(choices[text]);
  };
}

const CONFIG_FLAGS: Record<string, ConfigFlag> = {
  iterations: { path: ['iterations'], value: integer },
  seed: { path: ['seed'], value: integer },
  algorithm: { path: ['algorithm'], value: (text) => text },
  'tasks-per-iteration': { path: ['tasksPerIteration'], value: integer },
  'rollouts-per-task': { path: ['rolloutsPerTask'], value: integer },
  'max-steps': { path: ['maxSteps'], value: integer },
  concurrency: { path: ['concurrency'], value: integer },
  'checkpoint-every': { path: ['checkpointEvery'], value: integer },
  lambda: { path: ['curriculum', 'lambda'], value: decimal },
  k: { path: ['retrieval', 'k'], value: integer },
  'real-budget': { path: ['simToReal', 'realTransitionBudget'], value: integer },
  'eval-every': { path: ['evaluation', 'every'], value: integer },
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
  'gap-tasks': { path: ['evaluation', 'gapTasks'], value: integer },
  'keep-best-on-real': { path: ['selection', 'realTasks'], value: integer },
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
export function loopFlagSpecs(
  names: readonly string[] = [...LOOP_FLAG_PATHS.keys()],
): Record<string, { type: 'string' } | { type: 'boolean' }> {
  return Object.fromEntries(
    names.map((name) => {
      if (Object.hasOwn(CONFIG_FLAGS, name)) return [name, { type: 'string' as const }];
      if (Object.hasOwn(OFF_FLAGS, name)) return [name, { type: 'boolean' as const }];
      throw new Error(`--${name} is not a loop flag`);
    }),
  );
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
    const text = values[name];
    if (typeof text === 'string')
      setField(config, flag.path, flag.value(text, `--${name}`, fieldAt(config, flag.path)));
  }
  for (const [name, path] of Object.entries(OFF_FLAGS)) {
    if (values[name] === true) setField(config, path, false);
  }
  return config;
}

/** The set-up fields the flags give (`--offline-limit`, `--eval-split` ...); absent flags give none. */
export function setupFlags(values: FlagValues, io: CommandIo): Partial<DomainSetupOptions> {
  const string = (name: string) => (values[name] as string | undefined) || undefined;
  const count = (name: string) => integer(string(name), `--${name}`);
  const fields: Partial<DomainSetupOptions> = {
    adapterPackage: string('adapter-package'),
    offline: (values.offline as string[] | undefined)?.map((file) => resolve(io.cwd, file)),
    offlineLimit: count('offline-limit'),
    trainTasks: count('train-tasks'),
    evalSplit: string('eval-split'),
    evalTasks: count('eval-tasks'),
    index: string('index') as DomainSetupOptions['index'],
    targetRecall: recallTarget(string('target-recall')),
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
