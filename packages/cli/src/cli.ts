/**
 * The `dreamgym` command: `train`, `eval`, `report`, `data explore`.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ConfigError,
  type DreamGymConfigInput,
  DreamGymError,
  DreamGymLoop,
  type EvaluationMetrics,
  evaluatePolicy,
  LinearSoftmaxPolicy,
  loadRunPolicy,
  type Policy,
  parseDreamGymConfig,
  SeededRandom,
  SyntheticEnvironment,
  type Task,
} from '@dreamgym/core';
import {
  type DomainSetup,
  type DomainSetupOptions,
  DomainSetupOptionsSchema,
  setUpDomain,
} from './domain-setup.js';
import { loadRun, renderReport } from './html-report.js';
import { ProgressReporter } from './progress.js';

/** Where the command writes: injectable for tests. */
export interface CommandIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

const USAGE = `Usage: dreamgym <command> [options]

Commands:
  train          train a policy with DreamGym (synthetic experience, then optional sim-to-real)
  eval           evaluate a run's policy on the real or synthetic environment
  report         write an HTML report (plots, ablation table) of one or more runs
  data explore   play exploration episodes on the real environment and save them as offline data

Run \`dreamgym <command> --help\` for a command's options.`;

const TRAIN_USAGE = `Usage: dreamgym train --domain NAME [options]

Domain and data:
  --domain NAME              domain adapter, loaded from @dreamgym/NAME (e.g. alfworld)
  --adapter-package NAME     adapter package to load instead of @dreamgym/NAME
  --data DIR                 the domain's dataset folder (default: $DREAMGYM_DATA_DIR/NAME)
  --offline FILE             extra offline trajectories (JSONL), repeatable
  --offline-limit N          use only the first N of the dataset's offline trajectories
  --train-tasks N            seed tasks: the first N training tasks (default all)
  --eval-split NAME          split of the evaluation tasks (default valid_seen)
  --eval-tasks N             evaluation tasks: the first N of the split (default all)
  --index auto|flat|hnsw     replay-buffer index (default auto)

Run:
  --config FILE              JSON file with the loop configuration (any field of DreamGymConfig)
                             and an optional "setup" object with the options above
  --run-dir DIR              run folder (default runs/NAME-<date>); holds metrics, checkpoints
  --resume                   continue the run in --run-dir from its last checkpoint
  --no-baseline              do not evaluate the untrained policy first

Loop (override the config file):
  --iterations N  --seed N  --algorithm grpo|dr-grpo|ppo  --tasks-per-iteration N
  --rollouts-per-task N  --max-steps N  --lambda X  --k N  --concurrency N
  --real-budget N            sim-to-real: real transitions to spend after the synthetic phase
  --eval-every K             evaluate every K iterations and after the last (0: only after the last)
  --eval-env real|synthetic|both   where evaluations run (default real; synthetic needs
                             evaluation tasks with a known initial state)
  --no-replay  --no-curriculum  --no-history   ablations`;

const EVAL_USAGE = `Usage: dreamgym eval --run-dir DIR [options]

  --run-dir DIR              a \`dreamgym train\` run folder (its latest checkpoint is evaluated)
  --environment real|synthetic   where to evaluate (default real)
  --eval-split NAME  --eval-tasks N  --episodes N  --max-steps N  --seed N
  --sample                   sample actions instead of taking the most likely one`;

const REPORT_USAGE = `Usage: dreamgym report --run-dir DIR [--run-dir DIR ...] [--out FILE] [--title TEXT]

Writes a self-contained HTML page (default <first run-dir>/report.html) with success rate,
reward, task-pool and buffer growth per iteration, and a table comparing the runs.`;

const EXPLORE_USAGE = `Usage: dreamgym data explore --domain NAME --out FILE [options]

  --data DIR  --episodes N  --epsilon X  --random-share X  --seed N  --max-steps N  --append`;

function fail(message: string, field?: string): never {
  throw new ConfigError(message, field === undefined ? {} : { field });
}

type FlagValues = Record<string, string | boolean | string[] | undefined>;
type FlagSpecs = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;

function parse(args: string[], options: FlagSpecs, usage: string): { values: FlagValues } {
  try {
    const { values } = parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    });
    return { values: values as FlagValues };
  } catch (error) {
    fail(`${(error as Error).message}\n\n${usage}`);
  }
}

function integer(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  const number = Number(value);
  if (!Number.isInteger(number)) fail(`${flag} must be an integer, got "${value}".`, flag);
  return number;
}

function decimal(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined || typeof value === 'boolean') return undefined;
  const number = Number(value);
  if (!Number.isFinite(number)) fail(`${flag} must be a number, got "${value}".`, flag);
  return number;
}

function percent(metrics: EvaluationMetrics): string {
  const [low, high] = metrics.successInterval95;
  return `${(metrics.successRate * 100).toFixed(1)}% [95% CI ${(low * 100).toFixed(1)}-${(high * 100).toFixed(1)}%] on ${metrics.episodes} ${metrics.environment} episodes`;
}

async function readJsonFile(file: string, flag: string): Promise<Record<string, unknown>> {
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

function defaultDataDirectory(domain: string, io: CommandIo): string | undefined {
  const root = io.env.DREAMGYM_DATA_DIR;
  return root ? resolve(io.cwd, root, domain) : undefined;
}

const TRAIN_OPTIONS: FlagSpecs = {
  domain: { type: 'string' },
  'adapter-package': { type: 'string' },
  data: { type: 'string' },
  offline: { type: 'string', multiple: true },
  'offline-limit': { type: 'string' },
  'train-tasks': { type: 'string' },
  'eval-split': { type: 'string' },
  'eval-tasks': { type: 'string' },
  index: { type: 'string' },
  config: { type: 'string' },
  'run-dir': { type: 'string' },
  resume: { type: 'boolean' },
  'no-baseline': { type: 'boolean' },
  iterations: { type: 'string' },
  seed: { type: 'string' },
  algorithm: { type: 'string' },
  'tasks-per-iteration': { type: 'string' },
  'rollouts-per-task': { type: 'string' },
  'max-steps': { type: 'string' },
  lambda: { type: 'string' },
  k: { type: 'string' },
  concurrency: { type: 'string' },
  'real-budget': { type: 'string' },
  'eval-every': { type: 'string' },
  'eval-env': { type: 'string' },
  'no-replay': { type: 'boolean' },
  'no-curriculum': { type: 'boolean' },
  'no-history': { type: 'boolean' },
};

/** Merges flags over the config file into the loop config and the domain set-up. */
function trainSettings(
  values: FlagValues,
  file: Record<string, unknown>,
  io: CommandIo,
): { config: DreamGymConfigInput; setup: DomainSetupOptions } {
  const { setup: fileSetup = {}, ...fileConfig } = file as { setup?: Record<string, unknown> };
  const config = structuredClone(fileConfig) as Record<string, unknown> & DreamGymConfigInput;
  const set = (path: string[], value: unknown) => {
    if (value === undefined) return;
    let target = config as Record<string, unknown>;
    for (const key of path.slice(0, -1)) {
      target[key] = { ...((target[key] as Record<string, unknown> | undefined) ?? {}) };
      target = target[key] as Record<string, unknown>;
    }
    target[path.at(-1)!] = value;
  };
  const string = (name: string) => values[name] as string | undefined;
  set(['iterations'], integer(string('iterations'), '--iterations'));
  set(['seed'], integer(string('seed'), '--seed'));
  set(['algorithm'], string('algorithm'));
  set(['tasksPerIteration'], integer(string('tasks-per-iteration'), '--tasks-per-iteration'));
  set(['rolloutsPerTask'], integer(string('rollouts-per-task'), '--rollouts-per-task'));
  set(['maxSteps'], integer(string('max-steps'), '--max-steps'));
  set(['concurrency'], integer(string('concurrency'), '--concurrency'));
  set(['curriculum', 'lambda'], decimal(string('lambda'), '--lambda'));
  set(['retrieval', 'k'], integer(string('k'), '--k'));
  set(['simToReal', 'realTransitionBudget'], integer(string('real-budget'), '--real-budget'));
  set(['evaluation', 'every'], integer(string('eval-every'), '--eval-every'));
  const evalEnvironment = string('eval-env');
  if (evalEnvironment !== undefined) {
    const environments = { real: ['real'], synthetic: ['synthetic'], both: ['synthetic', 'real'] }[
      evalEnvironment
    ];
    if (!environments)
      fail(`--eval-env must be real, synthetic or both, got "${evalEnvironment}".`, '--eval-env');
    set(['evaluation', 'environments'], environments);
  } else if (
    (config.evaluation as { environments?: unknown } | undefined)?.environments === undefined
  ) {
    // Real success is what matters; the real environment also knows every task's start.
    set(['evaluation', 'environments'], ['real']);
  }
  if (values['no-replay']) set(['retrieval', 'enabled'], false);
  if (values['no-curriculum']) set(['curriculum', 'enabled'], false);
  if (values['no-history']) set(['history', 'enabled'], false);

  const domain = string('domain') ?? (fileSetup.domain as string | undefined);
  if (!domain) fail(`--domain is required (e.g. --domain alfworld).\n\n${TRAIN_USAGE}`, '--domain');
  const data =
    string('data') ?? (fileSetup.data as string | undefined) ?? defaultDataDirectory(domain, io);
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
    ...(string('adapter-package') ? { adapterPackage: string('adapter-package')! } : {}),
    ...(values.offline
      ? { offline: (values.offline as string[]).map((file) => resolve(io.cwd, file)) }
      : {}),
    ...(string('offline-limit')
      ? { offlineLimit: integer(string('offline-limit'), '--offline-limit')! }
      : {}),
    ...(string('train-tasks')
      ? { trainTasks: integer(string('train-tasks'), '--train-tasks')! }
      : {}),
    ...(string('eval-split') ? { evalSplit: string('eval-split')! } : {}),
    ...(string('eval-tasks') ? { evalTasks: integer(string('eval-tasks'), '--eval-tasks')! } : {}),
    ...(string('index') ? { index: string('index') as 'auto' } : {}),
  };
  const checked = DomainSetupOptionsSchema.safeParse(setup);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    fail(`Invalid option \`${issue.path.join('.')}\`: ${issue.message}`, issue.path.join('.'));
  }
  parseDreamGymConfig(config);
  return { config, setup };
}

/** Evaluates `policy` on the domain's real environment or its synthetic one. */
function evaluateOnDomain(
  domain: DomainSetup,
  options: {
    policy: Policy;
    environment: 'real' | 'synthetic';
    tasks: readonly Task[];
    maxSteps: number;
    k: number;
    greedy: boolean;
    concurrency: number;
    random: SeededRandom;
    episodesPerTask?: number;
  },
): Promise<EvaluationMetrics> {
  const { environment, k, ...rest } = options;
  return evaluatePolicy({
    ...rest,
    environment,
    environmentFactory:
      environment === 'real'
        ? domain.realEnvironment
        : () =>
            new SyntheticEnvironment({
              model: domain.experienceModel,
              retriever: domain.replayBuffer,
              adapter: domain.adapter,
              k,
              maxSteps: options.maxSteps,
            }),
    candidateActions: (observation, history) =>
      domain.adapter.candidateActions(observation, history),
  }).then((evaluation) => evaluation.metrics);
}

async function trainCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parse(args, TRAIN_OPTIONS, TRAIN_USAGE);
  if (values.help) {
    io.stdout.write(`${TRAIN_USAGE}\n`);
    return 0;
  }
  const runDirectory = resolve(
    io.cwd,
    (values['run-dir'] as string | undefined) ??
      join(
        'runs',
        `${(values.domain as string | undefined) ?? 'run'}-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}`,
      ),
  );
  const existing = await DreamGymLoop.latestCheckpoint(runDirectory);
  if (existing !== undefined && !values.resume) {
    fail(
      `${runDirectory} already holds a run (checkpoint ${existing}). Pass --resume to continue it, or choose another --run-dir.`,
      '--run-dir',
    );
  }
  const setupFile = join(runDirectory, 'setup.json');
  let fileSettings: Record<string, unknown> = {};
  if (values.resume && existsSync(setupFile)) {
    // A resumed run keeps the settings it started with; flags may not change them.
    fileSettings = {
      ...(await readJsonFile(join(runDirectory, 'config.json'), '--run-dir')),
      setup: await readJsonFile(setupFile, '--run-dir'),
    };
  } else if (values.config) {
    fileSettings = await readJsonFile(resolve(io.cwd, values.config as string), '--config');
  }
  const { config, setup } = trainSettings(values, fileSettings, io);
  const log = (message: string) => io.stderr.write(`${message}\n`);
  const domain = await setUpDomain(setup, log);
  await mkdir(runDirectory, { recursive: true });
  await writeFile(setupFile, `${JSON.stringify(setup, null, 2)}\n`);
  const resolved = parseDreamGymConfig(config);
  const realNeeded =
    resolved.simToReal.realTransitionBudget > 0 ||
    resolved.evaluation.environments.includes('real');
  const evaluationEnvironment = resolved.evaluation.environments.includes('real')
    ? 'real'
    : 'synthetic';

  let baseline: EvaluationMetrics | undefined;
  if (!values['no-baseline'] && !values.resume && domain.evaluationTasks.length > 0) {
    log(
      `evaluating the untrained policy on ${domain.evaluationTasks.length} ${setup.evalSplit ?? 'valid_seen'} tasks (${evaluationEnvironment})...`,
    );
    const untrained = new LinearSoftmaxPolicy({
      random: new SeededRandom(resolved.seed),
      hashBits: resolved.policy.hashBits,
    });
    baseline = await evaluateOnDomain(domain, {
      policy: untrained,
      environment: evaluationEnvironment,
      tasks: domain.evaluationTasks,
      maxSteps: resolved.maxSteps,
      k: resolved.retrieval.k,
      greedy: false,
      concurrency:
        evaluationEnvironment === 'real' ? resolved.realConcurrency : resolved.concurrency,
      random: new SeededRandom(resolved.seed),
    });
    log(`success before training: ${percent(baseline)}`);
  }

  const progress = new ProgressReporter('dreamgym train', 1, io.stderr);
  const loop = new DreamGymLoop(
    config,
    {
      adapter: domain.adapter,
      experienceModel: domain.experienceModel,
      replayBuffer: domain.replayBuffer,
      seedTasks: domain.seedTasks,
      evaluationTasks: domain.evaluationTasks,
      ...(realNeeded ? { realEnvironment: domain.realEnvironment } : {}),
      log: (message) => progress.log(message),
      onIteration: (metrics, { done, total }) => {
        progress.total = total;
        progress.update(done, {
          successRate: metrics.successRate,
          fields: { phase: metrics.phase, pool: metrics.poolSize, buffer: metrics.bufferSize },
        });
        for (const evaluation of metrics.evaluations)
          progress.log(`iteration ${metrics.iteration}: eval ${percent(evaluation)}`);
      },
    },
    runDirectory,
  );
  const result = await loop.run({ resume: values.resume === true });
  progress.finish();
  const after = result.finalEvaluations.find(
    (evaluation) => evaluation.environment === evaluationEnvironment,
  );
  io.stdout.write(`run folder: ${runDirectory}\n`);
  if (baseline) io.stdout.write(`success before training: ${percent(baseline)}\n`);
  if (after) io.stdout.write(`success after training:  ${percent(after)}\n`);
  io.stdout.write(`report: dreamgym report --run-dir ${runDirectory}\n`);
  if (baseline) {
    await writeFile(join(runDirectory, 'baseline.json'), `${JSON.stringify(baseline, null, 2)}\n`);
  }
  return 0;
}

async function evalCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parse(
    args,
    {
      'run-dir': { type: 'string' },
      environment: { type: 'string' },
      'eval-split': { type: 'string' },
      'eval-tasks': { type: 'string' },
      episodes: { type: 'string' },
      'max-steps': { type: 'string' },
      seed: { type: 'string' },
      sample: { type: 'boolean' },
    },
    EVAL_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${EVAL_USAGE}\n`);
    return 0;
  }
  if (!values['run-dir']) fail(`--run-dir is required.\n\n${EVAL_USAGE}`, '--run-dir');
  const runDirectory = resolve(io.cwd, values['run-dir'] as string);
  const environment = (values.environment as string | undefined) ?? 'real';
  if (environment !== 'real' && environment !== 'synthetic') {
    fail(`--environment must be real or synthetic, got "${environment}".`, '--environment');
  }
  const setup = (await readJsonFile(
    join(runDirectory, 'setup.json'),
    '--run-dir',
  )) as DomainSetupOptions;
  const config = parseDreamGymConfig(
    await readJsonFile(join(runDirectory, 'config.json'), '--run-dir'),
  );
  const { policy, checkpoint } = await loadRunPolicy(runDirectory);
  const log = (message: string) => io.stderr.write(`${message}\n`);
  const domain = await setUpDomain(
    {
      ...setup,
      ...(values['eval-split'] ? { evalSplit: values['eval-split'] as string } : {}),
      ...(values['eval-tasks']
        ? { evalTasks: integer(values['eval-tasks'] as string, '--eval-tasks')! }
        : {}),
    },
    log,
  );
  const maxSteps =
    integer(values['max-steps'] as string | undefined, '--max-steps') ?? config.maxSteps;
  log(
    `evaluating checkpoint ${checkpoint} on ${domain.evaluationTasks.length} tasks (${environment})...`,
  );
  const metrics = await evaluateOnDomain(domain, {
    policy,
    environment,
    tasks: domain.evaluationTasks,
    episodesPerTask: integer(values.episodes as string | undefined, '--episodes') ?? 1,
    maxSteps,
    k: config.retrieval.k,
    greedy: values.sample !== true,
    concurrency: environment === 'real' ? config.realConcurrency : config.concurrency,
    random: new SeededRandom(integer(values.seed as string | undefined, '--seed') ?? config.seed),
  });
  io.stdout.write(`success: ${percent(metrics)}\n`);
  io.stdout.write(`${JSON.stringify(metrics)}\n`);
  return 0;
}

async function reportCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parse(
    args,
    {
      'run-dir': { type: 'string', multiple: true },
      out: { type: 'string' },
      title: { type: 'string' },
    },
    REPORT_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${REPORT_USAGE}\n`);
    return 0;
  }
  const directories = (values['run-dir'] as string[] | undefined) ?? [];
  if (directories.length === 0) fail(`--run-dir is required.\n\n${REPORT_USAGE}`, '--run-dir');
  const runs = await Promise.all(
    directories.map((directory) => loadRun(resolve(io.cwd, directory))),
  );
  const out = resolve(
    io.cwd,
    (values.out as string | undefined) ?? join(directories[0]!, 'report.html'),
  );
  await writeFile(out, renderReport(runs, values.title ? { title: values.title as string } : {}));
  io.stdout.write(`report written to ${out}\n`);
  return 0;
}

async function exploreCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parse(
    args,
    {
      domain: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      episodes: { type: 'string' },
      epsilon: { type: 'string' },
      'random-share': { type: 'string' },
      seed: { type: 'string' },
      'max-steps': { type: 'string' },
      append: { type: 'boolean' },
    },
    EXPLORE_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${EXPLORE_USAGE}\n`);
    return 0;
  }
  const domain = values.domain as string | undefined;
  if (!domain) fail(`--domain is required.\n\n${EXPLORE_USAGE}`, '--domain');
  if (!values.out) fail(`--out FILE is required.\n\n${EXPLORE_USAGE}`, '--out');
  const data = (values.data as string | undefined) ?? defaultDataDirectory(domain, io);
  if (!data) fail(`--data DIR is required, or set DREAMGYM_DATA_DIR.`, '--data');
  const exportName = `explore${domain[0]!.toUpperCase()}${domain.slice(1)}`;
  const module = (await import(`@dreamgym/${domain}`).catch(() =>
    fail(`Unknown domain "${domain}": @dreamgym/${domain} is not installed.`, '--domain'),
  )) as Record<string, unknown>;
  const explore = module[exportName];
  if (typeof explore !== 'function')
    fail(`@dreamgym/${domain} has no exploration (${exportName}).`, '--domain');
  const summary = await (
    explore as (options: Record<string, unknown>) => Promise<Record<string, unknown>>
  )({
    output: resolve(io.cwd, values.out as string),
    dataDir: resolve(io.cwd, data),
    append: values.append === true,
    ...(values.episodes ? { episodes: integer(values.episodes as string, '--episodes') } : {}),
    ...(values.epsilon ? { epsilon: decimal(values.epsilon as string, '--epsilon') } : {}),
    ...(values['random-share']
      ? { randomShare: decimal(values['random-share'] as string, '--random-share') }
      : {}),
    ...(values.seed ? { seed: integer(values.seed as string, '--seed') } : {}),
    ...(values['max-steps']
      ? { maxSteps: integer(values['max-steps'] as string, '--max-steps') }
      : {}),
  });
  io.stdout.write(`${JSON.stringify(summary)}\n`);
  return 0;
}

/** Runs the `dreamgym` command with `argv` (without node and the script); returns the exit code. */
export async function runCli(argv: readonly string[], io: CommandIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'train':
        return await trainCommand(rest, io);
      case 'eval':
        return await evalCommand(rest, io);
      case 'report':
        return await reportCommand(rest, io);
      case 'data':
        if (rest[0] === 'explore') return await exploreCommand(rest.slice(1), io);
        fail(`Unknown data command "${rest[0] ?? ''}". Available: data explore.`);
        break;
      case undefined:
      case '--help':
      case '-h':
      case 'help':
        io.stdout.write(`${USAGE}\n`);
        return command === undefined ? 1 : 0;
      default:
        fail(`Unknown command "${command}".\n\n${USAGE}`);
    }
  } catch (error) {
    if (DreamGymError.isInstance(error)) {
      io.stderr.write(`dreamgym ${command}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  return 1;
}
