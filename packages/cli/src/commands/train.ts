/**
 * `dreamgym train`: DreamGym training of one domain (synthetic phase, then optional
 * sim-to-real), with the untrained and trained policy evaluated before and after. Every
 * model-backed part is chosen by flags (`--experience`, `--task-generator`, `--embedder`,
 * `--policy`), backed by one `--model`: in process (`local`, a GGUF) or behind `--base-url`.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  type DreamGymConfigInput,
  DreamGymLoop,
  type EvaluationMetrics,
  type IterationMetrics,
  parseDreamGymConfig,
  SeededRandom,
  type SyntheticToRealGap,
  type TrainablePolicy,
} from '@dreamgym/core';
import {
  type Command,
  type CommandIo,
  decimal,
  defaultDataDirectory,
  type FlagSpecs,
  type FlagValues,
  fail,
  integer,
  parseFlags,
  percent,
  readJsonFile,
} from '../command-arguments.js';
import { evaluateOnDomain } from '../domain-evaluation.js';
import { type DomainSetupOptions, DomainSetupOptionsSchema, setUpDomain } from '../domain-setup.js';
import { MODEL_SELECTION_FLAGS } from '../model-selection.js';
import { ProgressReporter } from '../progress.js';
import {
  MODELS_FILE,
  modelSettings,
  prepareRunModels,
  readModelFlags,
  selectRunModels,
} from '../run-models.js';
import {
  createRunPolicy,
  LLM_POLICY_PACKAGE,
  loadLlmPolicyModule,
  type RunPolicySettings,
  readRunPolicySettings,
  writeRunPolicySettings,
} from '../run-policy.js';

const TRAIN_USAGE = `Usage: dreamgym train --domain NAME [options]

Domain and data:
  --domain NAME              domain adapter, loaded from @dreamgym/NAME (e.g. alfworld)
  --adapter-package NAME     adapter package to load instead of @dreamgym/NAME
  --data DIR                 the domain's dataset folder (default: $DREAMGYM_DATA_DIR/NAME)
  --offline FILE             extra offline trajectories (JSONL), repeatable
  --offline-limit N          use only the first N of the dataset's offline trajectories
  --train-tasks N            seed tasks: the first N training tasks (default all)
  --eval-split NAME          split of the evaluation tasks (default: the adapter's, e.g. valid_seen)
  --eval-tasks N             evaluation tasks: the first N of the split (default all)
  --index auto|flat|hnsw     replay-buffer index (default auto)
  --no-outcome-judge         the experience model's own outcomes instead of the judge learned
                             from the offline successes and failures
  --no-world-memory          next states from neighbours only, not from what the task's own
                             world's offline episodes saw

Run:
  --config FILE              JSON file with the loop configuration (any field of DreamGymConfig)
                             and an optional "setup" object with the options above
  --run-dir DIR              run folder (default runs/NAME-<date>); holds metrics, checkpoints
  --resume                   continue the run in --run-dir from its last checkpoint
  --no-baseline              do not evaluate the untrained policy first

Models (the defaults are embedded and need no model; one --model backs every LLM part):
  --experience embedded|llm|hybrid   experience model: retrieval over the offline transitions
                             (default), the reasoning LLM, or the LLM grounded by retrieval
  --task-generator mutation|llm   curriculum task generator: the adapter's mutations (default)
                             or the LLM writing variations of informative tasks
  --embedder hashing|openai  replay-buffer embedder (default hashing)
  --model local|PATH.gguf|NAME   the LLM: local (SmolLM2-135M-Instruct in process, the default),
                             any GGUF file, or with --base-url the served model's name. The
                             experience model and the task generator share one loaded copy;
                             --policy llm loads its own (training changes its weights)
  --base-url URL             an OpenAI-compatible server (vLLM, SGLang, Ollama, dreamgym model
                             serve) for --experience and --task-generator; API key from
                             DREAMGYM_API_KEY or OPENAI_API_KEY
  --experience-format compact|standard   experience prompt (default: compact for local models)
  --experience-temperature X sampling temperature of the experience model (default 0)
  --embedding-model NAME     embedding model of --embedder openai
  --embedding-base-url URL   its server (default --base-url)
  --model-concurrency N  --model-context-size N  --model-threads N   the in-process model of
                             --experience and --task-generator (the LLM policy's settings are
                             the "llmPolicy" object of --config)
  A resumed run keeps its models (models.json); only --base-url, --embedding-base-url,
  --model-concurrency and --model-threads may change.

Policy:
  --policy linear|llm        the policy to train: linear softmax (default, embedded) or an LLM
                             (@dreamgym/llama: llama.cpp acts, the torch worker in
                             trainers/python learns with LoRA; needs the project's Python)
  --policy-model local|PATH.gguf|NAME   the LLM policy's model (default --model, or local);
                             always in process, so name it when --base-url serves the others
  --policy-action generate|score   the LLM writes its action (default) or chooses among the
                             admissible actions by likelihood
  --policy-device cpu|cuda   where the LLM's gradient steps run (default cpu)
  --policy-package NAME      package providing createLlmPolicy (default @dreamgym/llama)
                             (more LLM settings: an "llmPolicy" object in --config, e.g.
                             {"maxTokens": 32, "trainer": {"learningRate": 1e-4, "topLayers": 4}})
  --warm-start none|bc       start from behaviour cloning on the offline trajectories (default none)

Loop (override the config file):
  --iterations N  --seed N  --algorithm grpo|dr-grpo|ppo  --tasks-per-iteration N
  --rollouts-per-task N  --max-steps N  --lambda X  --k N  --concurrency N
  --real-budget N            sim-to-real: real transitions to spend after the synthetic phase
  --eval-every K             evaluate every K iterations and after the last (0: only after the last)
  --eval-env real|synthetic|both   where evaluations run (default: the adapter's, real where
                             its real environment runs without set-up; synthetic needs
                             evaluation tasks with a known initial state)
  --eval-mode greedy|sampled|both  how actions are chosen in evaluations (default both);
                             before and after training are always measured alike
  --gap-tasks N              training tasks played in both environments at each evaluation,
                             to report the synthetic-to-real gap (needs the real environment)

Ablations:
  --no-curriculum            no task generation (seed tasks only)
  --no-retrieval             the experience model gets no retrieved demonstrations (k = 0)
  --no-replay-write-back     synthetic transitions are not added to the replay buffer
  --no-history               the experience model sees no interaction history`;

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
  'no-outcome-judge': { type: 'boolean' },
  'no-world-memory': { type: 'boolean' },
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
  'eval-mode': { type: 'string' },
  'gap-tasks': { type: 'string' },
  'warm-start': { type: 'string' },
  ...MODEL_SELECTION_FLAGS,
  'policy-model': { type: 'string' },
  'policy-action': { type: 'string' },
  'policy-device': { type: 'string' },
  'policy-package': { type: 'string' },
  'no-curriculum': { type: 'boolean' },
  'no-retrieval': { type: 'boolean' },
  'no-replay-write-back': { type: 'boolean' },
  'no-history': { type: 'boolean' },
};

/** Merges flags over the config file into the loop config and the domain set-up. */
function trainSettings(
  values: FlagValues,
  file: Record<string, unknown>,
  io: CommandIo,
): { config: DreamGymConfigInput; setup: DomainSetupOptions; policy: RunPolicySettings } {
  const {
    setup: fileSetup = {},
    llmPolicy: fileLlmPolicy,
    ...fileConfig
  } = file as { setup?: Record<string, unknown>; llmPolicy?: unknown };
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
  }
  const evalMode = string('eval-mode');
  if (evalMode !== undefined) {
    const modes = { greedy: ['greedy'], sampled: ['sampled'], both: ['greedy', 'sampled'] }[
      evalMode
    ];
    if (!modes)
      fail(`--eval-mode must be greedy, sampled or both, got "${evalMode}".`, '--eval-mode');
    set(['evaluation', 'modes'], modes);
  } else if ((config.evaluation as { modes?: unknown } | undefined)?.modes === undefined) {
    set(['evaluation', 'modes'], ['greedy', 'sampled']);
  }
  set(['evaluation', 'gapTasks'], integer(string('gap-tasks'), '--gap-tasks'));
  const warmStart = string('warm-start');
  if (warmStart !== undefined) {
    if (warmStart !== 'bc' && warmStart !== 'none')
      fail(`--warm-start must be bc or none, got "${warmStart}".`, '--warm-start');
    set(['warmStart'], warmStart === 'bc' ? { behaviourCloning: {} } : {});
  }
  if (values['no-curriculum']) set(['curriculum', 'enabled'], false);
  if (values['no-retrieval']) set(['retrieval', 'enabled'], false);
  if (values['no-replay-write-back']) set(['replayWriteBack'], false);
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
    ...(values['no-outcome-judge'] ? { outcomeJudge: false } : {}),
    ...(values['no-world-memory'] ? { worldMemory: false } : {}),
  };
  const checked = DomainSetupOptionsSchema.safeParse(setup);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    fail(`Invalid option \`${issue.path.join('.')}\`: ${issue.message}`, issue.path.join('.'));
  }
  parseDreamGymConfig(config);
  return { config, setup, policy: policySettings(values, fileLlmPolicy) };
}

/** `--policy` and its flags over the config file's `llmPolicy` object. */
function policySettings(values: FlagValues, fileLlmPolicy: unknown): RunPolicySettings {
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
    if (action !== 'generate' && action !== 'score')
      fail(`--policy-action must be generate or score, got "${action}".`, '--policy-action');
    settings.actionSelection = action;
  }
  const device = string('policy-device');
  if (device !== undefined) {
    if (!/^(cpu|cuda(:\d+)?)$/.test(device))
      fail(`--policy-device must be cpu, cuda or cuda:N, got "${device}".`, '--policy-device');
    settings.trainer = { ...((settings.trainer as Record<string, unknown>) ?? {}), device };
  }
  return { kind: 'llm', package: string('policy-package') ?? LLM_POLICY_PACKAGE, settings };
}

async function train(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(args, TRAIN_OPTIONS, TRAIN_USAGE);
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
  let savedPolicy: RunPolicySettings | undefined;
  let savedModels: Record<string, string> | undefined;
  if (values.resume && existsSync(setupFile)) {
    // A resumed run keeps the settings it started with; flags may not change them.
    fileSettings = {
      ...(await readJsonFile(join(runDirectory, 'config.json'), '--run-dir')),
      setup: await readJsonFile(setupFile, '--run-dir'),
    };
    savedPolicy = await readRunPolicySettings(runDirectory);
    savedModels = await readModelFlags(runDirectory);
  } else if (values.config) {
    fileSettings = await readJsonFile(resolve(io.cwd, values.config as string), '--config');
  }
  const settings = trainSettings(values, fileSettings, io);
  const { config, setup } = settings;
  if (savedPolicy && values.policy !== undefined && values.policy !== savedPolicy.kind) {
    fail(
      `${runDirectory} trains the ${savedPolicy.kind} policy (policy.json); --resume continues it as it started: drop --policy ${String(values.policy)}.`,
      '--policy',
    );
  }
  const policySettings = savedPolicy ?? settings.policy;
  const models = modelSettings(values, {
    policy: policySettings.kind,
    ...(savedModels ? { saved: savedModels } : {}),
    runDirectory,
  });
  const { selection } = models;
  // The worker and the model cache need PATH and HOME even where the caller passes a partial environment.
  const env = { ...process.env, ...io.env };
  // Before the domain loads: a missing LLM package or model file fails at once.
  const llmModule =
    policySettings.kind === 'llm' ? await loadLlmPolicyModule(policySettings.package) : undefined;
  const embedder = await prepareRunModels(selection, { env, cwd: io.cwd });
  const log = (message: string) => io.stderr.write(`${message}\n`);
  const domain = await setUpDomain(setup, log, embedder ? { embedder } : {});
  await mkdir(runDirectory, { recursive: true });
  await writeFile(setupFile, `${JSON.stringify(setup, null, 2)}\n`);
  await writeRunPolicySettings(runDirectory, policySettings);
  await writeFile(join(runDirectory, MODELS_FILE), `${JSON.stringify(models.flags, null, 2)}\n`);
  if ((config.evaluation as { environments?: unknown } | undefined)?.environments === undefined) {
    // Real success is what matters, where the adapter's real environment runs as it is.
    const evaluation = { ...((config.evaluation as Record<string, unknown> | undefined) ?? {}) };
    evaluation.environments = [domain.adapter.defaults?.evaluationEnvironment ?? 'real'];
    (config as Record<string, unknown>).evaluation = evaluation;
  }
  const resolved = parseDreamGymConfig(config);
  // With a warm start, "before" is the starting policy (cloned), which only the loop holds:
  // the loop measures it after cloning, exactly as it measures the trained policy after.
  const startsFromWarmStart = resolved.warmStart.behaviourCloning !== undefined;
  if (startsFromWarmStart && !values['no-baseline'] && domain.evaluationTasks.length > 0) {
    (config as Record<string, unknown>).evaluation = {
      ...((config.evaluation as Record<string, unknown> | undefined) ?? {}),
      atStart: true,
    };
  }

  const realNeeded =
    resolved.simToReal.realTransitionBudget > 0 ||
    resolved.evaluation.environments.includes('real') ||
    resolved.evaluation.gapTasks > 0;
  const evaluationEnvironment = resolved.evaluation.environments.includes('real')
    ? 'real'
    : 'synthetic';
  const selected = await selectRunModels(selection, domain, { env, cwd: io.cwd, log, embedder });
  // The policy line is train's own (below): the selection's policy is always linear here.
  for (const line of selected.describe()) if (!line.startsWith('policy:')) log(line);
  try {
    const runPolicy = await createRunPolicy({
      settings: policySettings,
      config: resolved,
      adapter: domain.adapter,
      runDirectory,
      ...(llmModule ? { module: llmModule } : {}),
      env,
      log,
    });
    log(`policy: ${runPolicy.description}`);
    try {
      return await trainWith(runPolicy.policy);
    } finally {
      await runPolicy.close();
    }
  } finally {
    await selected.dispose();
  }

  async function trainWith(policy: TrainablePolicy): Promise<number> {
    // Before training: the same policy object, measured exactly as the loop measures it after.
    const baseline: EvaluationMetrics[] = [];
    if (
      !startsFromWarmStart &&
      !values['no-baseline'] &&
      !values.resume &&
      domain.evaluationTasks.length > 0
    ) {
      for (const mode of resolved.evaluation.modes) {
        log(
          `evaluating the untrained policy on ${domain.evaluationTasks.length} ${domain.evaluationSplit} tasks (${evaluationEnvironment}, ${mode})...`,
        );
        const metrics = await evaluateOnDomain(domain, {
          policy,
          experienceModel: selected.experienceModel,
          environment: evaluationEnvironment,
          progress: { label: `dreamgym train: untrained (${mode})`, output: io.stderr },
          tasks: domain.evaluationTasks,
          maxSteps: resolved.maxSteps,
          k: resolved.retrieval.k,
          greedy: mode === 'greedy',
          episodesPerTask: resolved.evaluation.episodesPerTask,
          concurrency:
            evaluationEnvironment === 'real' ? resolved.realConcurrency : resolved.concurrency,
          random: new SeededRandom(resolved.seed).fork(`baseline:${mode}`),
        });
        log(`success before training (${mode}): ${percent(metrics)}`);
        baseline.push(metrics);
      }
      await writeFile(
        join(runDirectory, 'baseline.json'),
        `${JSON.stringify(baseline, null, 2)}\n`,
      );
    }

    const progress = new ProgressReporter('dreamgym train', 1, io.stderr);
    const loop = new DreamGymLoop({
      config,
      components: {
        adapter: domain.adapter,
        policy,
        experienceModel: selected.experienceModel,
        replayBuffer: domain.replayBuffer,
        // The loop's default generator dedupes exactly; the selection's adds embedding
        // similarity, which the default run keeps out so its results stay as they were.
        ...(selection.taskGenerator === 'llm' || selection.embedder === 'openai'
          ? { taskGenerator: selected.taskGenerator }
          : {}),
        seedTasks: domain.seedTasks,
        evaluationTasks: domain.evaluationTasks,
        demonstrations: domain.offlineTrajectories,
        ...(realNeeded ? { realEnvironment: domain.realEnvironment } : {}),
        log: (message: string) => progress.log(message),
        onIteration: (metrics: IterationMetrics, { done, total }) => {
          progress.total = total;
          progress.update(done, {
            successRate: metrics.successRate,
            fields: { phase: metrics.phase, pool: metrics.poolSize, buffer: metrics.bufferSize },
          });
          for (const evaluation of metrics.evaluations)
            progress.log(
              `iteration ${metrics.iteration}: eval (${evaluation.mode}) ${percent(evaluation)}`,
            );
          const gap = metrics.syntheticToRealGap;
          if (gap) {
            progress.log(
              `iteration ${metrics.iteration}: synthetic-to-real gap on ${gap.tasks} training tasks: synthetic ${(gap.syntheticSuccessRate * 100).toFixed(1)}% vs real ${(gap.realSuccessRate * 100).toFixed(1)}%`,
            );
          }
        },
      },
      runDirectory,
    });
    const result = await loop.run({ resume: values.resume === true });
    progress.finish();
    io.stdout.write(`run folder: ${runDirectory}\n`);
    if (result.warmStart) {
      io.stdout.write(
        `warm start: behaviour cloning kept epoch ${result.warmStart.bestEpoch}, held-out NLL ${result.warmStart.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${result.warmStart.bestHeldOutNegativeLogLikelihood.toFixed(3)}\n`,
      );
    }
    const startGap = result.start?.syntheticToRealGap;
    if (startGap) io.stdout.write(`${formatGap('starting policy', startGap)}\n`);
    const endGap = result.metrics.at(-1)?.syntheticToRealGap;
    if (endGap) io.stdout.write(`${formatGap('trained policy', endGap)}\n`);
    io.stdout.write(
      formatBeforeAfter(
        result.start?.evaluations.filter(
          (evaluation) => evaluation.environment === evaluationEnvironment,
        ) ?? baseline,
        result.finalEvaluations.filter(
          (evaluation) => evaluation.environment === evaluationEnvironment,
        ),
      ),
    );
    io.stdout.write(`report: dreamgym report --run-dir ${runDirectory}\n`);
    return 0;
  }
}

/** The same training tasks played in the synthetic and the real environment, on one line. */
export function formatGap(label: string, gap: SyntheticToRealGap): string {
  return `same ${gap.tasks} training tasks, ${label}: synthetic ${(gap.syntheticSuccessRate * 100).toFixed(1)}% vs real ${(gap.realSuccessRate * 100).toFixed(1)}%`;
}

/**
 * Before and after, mode by mode, then one headline that compares like with like (greedy
 * with greedy): the number a reader takes away.
 */
export function formatBeforeAfter(
  before: readonly EvaluationMetrics[],
  after: readonly EvaluationMetrics[],
): string {
  const lines: string[] = [];
  for (const [label, records] of [
    ['before', before],
    ['after ', after],
  ] as const) {
    for (const metrics of records)
      lines.push(`success ${label} training (${metrics.mode}): ${percent(metrics)}`);
  }
  for (const mode of ['greedy', 'sampled'] as const) {
    const first = before.find((metrics) => metrics.mode === mode);
    const last = after.find((metrics) => metrics.mode === mode);
    if (!first || !last) continue;
    const points = (last.successRate - first.successRate) * 100;
    lines.push(
      `headline (${mode}, ${last.environment}): ${(first.successRate * 100).toFixed(1)}% -> ${(last.successRate * 100).toFixed(1)}% (${points >= 0 ? '+' : ''}${points.toFixed(1)} points)`,
    );
    break;
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** `dreamgym train`. */
export const trainCommand: Command = {
  name: ['train'],
  summary: 'train a policy with DreamGym (synthetic experience, then optional sim-to-real)',
  run: train,
};
