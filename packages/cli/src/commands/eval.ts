/**
 * `dreamgym eval`: success of a run's latest checkpoint on the real or synthetic environment.
 * The synthetic environment is the run's own: the experience model and embedder its
 * `models.json` names, retrieving from the offline transitions and the experience the run
 * added up to that checkpoint.
 */
import { join, resolve } from 'node:path';
import {
  loadRunPolicy,
  parseDreamGymConfig,
  SeededRandom,
  type TrainablePolicy,
} from '@dreamgym/core';
import {
  type Command,
  type CommandIo,
  fail,
  integer,
  parseFlags,
  percent,
  readJsonFile,
} from '../command-arguments.js';
import { evaluateOnDomain } from '../domain-evaluation.js';
import { type DomainSetupOptions, setUpDomain } from '../domain-setup.js';
import type { SelectedModels } from '../model-selection.js';
import {
  modelSettings,
  prepareRunModels,
  RUN_MODEL_OVERRIDE_FLAGS,
  readModelFlags,
  selectRunModels,
} from '../run-models.js';
import { createRunPolicy, loadLlmPolicyModule, readRunPolicySettings } from '../run-policy.js';

const EVAL_USAGE = `Usage: dreamgym eval --run-dir DIR [options]

  --run-dir DIR              a \`dreamgym train\` run folder (its latest checkpoint is evaluated)
  --environment real|synthetic   where to evaluate (default real)
  --eval-split NAME  --eval-tasks N  --episodes N  --max-steps N  --seed N
  --sample                   sample actions instead of taking the most likely one

The synthetic environment uses the models the run was trained with (its models.json) and
retrieves from the experience the run added to its replay buffer up to the checkpoint.
Where its model servers or local model run now may differ from training:
  --base-url URL  --embedding-base-url URL  --model-concurrency N  --model-threads N`;

async function evaluate(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
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
      ...RUN_MODEL_OVERRIDE_FLAGS,
    },
    EVAL_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${EVAL_USAGE}\n`);
    return 0;
  }
  if (!values['run-dir']) fail(`--run-dir is required.\n\n${EVAL_USAGE}`, '--run-dir');
  const runDirectory = resolve(io.cwd, values['run-dir'] as string);
  const chosen = (values.environment as string | undefined) ?? 'real';
  if (chosen !== 'real' && chosen !== 'synthetic') {
    fail(`--environment must be real or synthetic, got "${chosen}".`, '--environment');
  }
  const environment: 'real' | 'synthetic' = chosen;
  const setup = (await readJsonFile(
    join(runDirectory, 'setup.json'),
    '--run-dir',
  )) as DomainSetupOptions;
  const config = parseDreamGymConfig(
    await readJsonFile(join(runDirectory, 'config.json'), '--run-dir'),
  );
  // The run's policy (`policy.json`: linear, or the LLM of `train --policy llm`).
  const policySettings = await readRunPolicySettings(runDirectory);
  const llmModule =
    policySettings.kind === 'llm' ? await loadLlmPolicyModule(policySettings.package) : undefined;
  const log = (message: string) => io.stderr.write(`${message}\n`);
  const env = { ...process.env, ...io.env };
  // The synthetic environment is built from the run's models; the real one needs none.
  const overridden = Object.keys(RUN_MODEL_OVERRIDE_FLAGS).find(
    (flag) => values[flag] !== undefined,
  );
  if (environment === 'real' && overridden !== undefined) {
    fail(
      `--${overridden} is a setting of the synthetic environment's models; --environment real uses none.`,
      `--${overridden}`,
    );
  }
  const selection =
    environment === 'synthetic'
      ? modelSettings(values, {
          policy: policySettings.kind,
          saved: await readModelFlags(runDirectory),
          runDirectory,
        }).selection
      : undefined;
  const embedder = selection && (await prepareRunModels(selection, { env, cwd: io.cwd }));
  const domain = await setUpDomain(
    {
      ...setup,
      ...(values['eval-split'] ? { evalSplit: values['eval-split'] as string } : {}),
      ...(values['eval-tasks']
        ? { evalTasks: integer(values['eval-tasks'] as string, '--eval-tasks')! }
        : {}),
    },
    log,
    embedder ? { embedder } : {},
  );
  let selected: SelectedModels | undefined;
  try {
    if (selection) {
      selected = await selectRunModels(selection, domain, { env, cwd: io.cwd, log, embedder });
      for (const line of selected.describe()) {
        if (line.startsWith('experience model:') || line.startsWith('embedder:')) log(line);
      }
    }
    const runPolicy = await createRunPolicy({
      settings: policySettings,
      config,
      adapter: domain.adapter,
      runDirectory,
      ...(llmModule ? { module: llmModule } : {}),
      env,
      log,
    });
    try {
      return await evaluateWith(runPolicy.policy);
    } finally {
      await runPolicy.close();
    }
  } finally {
    await selected?.dispose();
  }

  async function evaluateWith(policy: TrainablePolicy): Promise<number> {
    const offline = domain.replayBuffer.size;
    const { checkpoint, experienceTransitions } = await loadRunPolicy(
      runDirectory,
      policy,
      environment === 'synthetic' ? { replayBuffer: domain.replayBuffer } : {},
    );
    if (environment === 'synthetic') {
      log(
        `replay buffer: ${offline} offline transitions + ${experienceTransitions} the run added up to ${checkpoint} (${domain.replayBuffer.size} distinct)`,
      );
    }
    const maxSteps =
      integer(values['max-steps'] as string | undefined, '--max-steps') ?? config.maxSteps;
    log(
      `evaluating checkpoint ${checkpoint} on ${domain.evaluationTasks.length} tasks (${environment})...`,
    );
    const metrics = await evaluateOnDomain(domain, {
      policy,
      ...(selected ? { experienceModel: selected.experienceModel } : {}),
      environment,
      progress: { label: 'dreamgym eval', output: io.stderr },
      tasks: domain.evaluationTasks,
      episodesPerTask: integer(values.episodes as string | undefined, '--episodes') ?? 1,
      maxSteps,
      k: config.retrieval.k,
      greedy: values.sample !== true,
      concurrency: environment === 'real' ? config.realConcurrency : config.concurrency,
      random: new SeededRandom(integer(values.seed as string | undefined, '--seed') ?? config.seed),
    });
    io.stdout.write(`success (${metrics.mode}): ${percent(metrics)}\n`);
    io.stdout.write(`${JSON.stringify(metrics)}\n`);
    return 0;
  }
}

/** `dreamgym eval`. */
export const evalCommand: Command = {
  name: ['eval'],
  summary: "evaluate a run's policy on the real or synthetic environment",
  run: evaluate,
};
