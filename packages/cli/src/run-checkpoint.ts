/**
 * Reopening a `dreamgym train` run at its latest checkpoint, as `dreamgym eval` and
 * `dreamgym fidelity` do: its domain (with `--eval-split` and `--eval-tasks`), its policy
 * with the checkpoint's weights, and, where a synthetic environment is needed, the models its
 * `run.json` names, with the experience the run added to its replay buffer up to that
 * checkpoint.
 */
import { resolve } from 'node:path';
import {
  type DreamGymConfig,
  loadRunPolicy,
  parseDreamGymConfig,
  type TrainablePolicy,
} from '@dreamgym/core';
import { type DomainSetup, openRun, type SelectedModels } from '@dreamgym/run';
import { type CommandIo, type FlagValues, fail } from './command-arguments.js';
import { readSavedRun, setupFlags } from './run-flags.js';
import { modelSettings } from './run-models.js';

/** A run reopened at its latest checkpoint. */
export interface RunCheckpoint {
  /** The run folder. */
  runDirectory: string;
  /** The run's configuration (`config.json`). */
  config: DreamGymConfig;
  /** The run's domain, its evaluation tasks as the flags chose them. */
  domain: DomainSetup;
  /** The run's policy with the checkpoint's weights. */
  policy: TrainablePolicy;
  /** The checkpoint's name (`iteration-000003`). */
  checkpoint: string;
  /** The run's models, when asked for; the replay buffer then holds the run's experience too. */
  models?: SelectedModels;
  /** Writes a line to stderr. */
  log: (message: string) => void;
}

/**
 * `--outcome-judge on|off` and `--world-memory on|off` over the run's set-up: the embedded
 * experience model's parts, switched to measure a model as it was without them.
 */
export function experiencePartFlags(values: FlagValues): {
  outcomeJudge?: boolean;
  worldMemory?: boolean;
} {
  const parts: { outcomeJudge?: boolean; worldMemory?: boolean } = {};
  for (const [flag, field] of [
    ['outcome-judge', 'outcomeJudge'],
    ['world-memory', 'worldMemory'],
  ] as const) {
    const value = values[flag] as string | undefined;
    if (value === undefined) continue;
    if (value !== 'on' && value !== 'off')
      fail(`--${flag} must be on or off, got "${value}".`, `--${flag}`);
    parts[field] = value === 'on';
  }
  return parts;
}

/** The run folder of `--run-dir`, resolved; fails with `usage` without one. */
export function runDirectoryFlag(values: FlagValues, io: CommandIo, usage: string): string {
  if (!values['run-dir']) fail(`--run-dir is required.\n\n${usage}`, '--run-dir');
  return resolve(io.cwd, values['run-dir'] as string);
}

/**
 * Reopens the run in `runDirectory` at its latest checkpoint, runs `body` on it, and frees
 * the policy and models after. `models: true` builds the run's models (a synthetic
 * environment needs them; `values` may hold `RUN_MODEL_OVERRIDE_FLAGS`). `wholeSplit: true`
 * loads every task of the split unless `--eval-tasks` names a prefix: the run's own prefix
 * is left out (a sample drawn from it would see one task type of a split ordered by type).
 */
export async function withRunCheckpoint<T>(
  runDirectory: string,
  values: FlagValues,
  io: CommandIo,
  options: { models: boolean; wholeSplit?: boolean },
  body: (run: RunCheckpoint) => Promise<T>,
): Promise<T> {
  const { spec, config: savedConfig } = await readSavedRun(runDirectory);
  const { evalTasks: runEvaluationTasks, ...setup } = spec.setup;
  const config = parseDreamGymConfig(savedConfig);
  const selection = options.models
    ? modelSettings(values, { policy: spec.policy.kind, saved: spec.models, runDirectory })
        .selection
    : undefined;
  const parts = await openRun({
    setup: {
      ...setup,
      ...(options.wholeSplit || runEvaluationTasks === undefined
        ? {}
        : { evalTasks: runEvaluationTasks }),
      ...setupFlags(values, io),
      // Without the run's models (the real environment alone) no synthetic step is judged or
      // remembered: skip learning the judge and the world memory at start-up.
      ...(options.models
        ? experiencePartFlags(values)
        : { outcomeJudge: false, worldMemory: false }),
    },
    // The run's policy (linear, or the LLM of `train --policy llm`).
    policy: spec.policy,
    selection,
    runDirectory,
    env: io.env,
    cwd: io.cwd,
    log: (message) => io.stderr.write(`${message}\n`),
    onDomain: (domain) => {
      if (domain.evaluationTasks.length === 0) {
        // Split names are the dataset's own (ALFWorld's valid_seen, MiniWoB++'s eval): a name it
        // lacks would measure nothing and report every figure of no tasks as 0%.
        const named = domain.adapter.defaults?.evaluationSplit;
        fail(
          `The ${domain.adapter.name} data holds no tasks of split "${domain.evaluationSplit}" (--eval-split): name a split it has, e.g. train${named && named !== 'train' ? ` or ${named}` : ''}.`,
          '--eval-split',
        );
      }
      return config;
    },
    logModel: (line) => line.startsWith('experience model:') || line.startsWith('embedder:'),
  });
  try {
    const { domain, models } = parts;
    const offline = domain.replayBuffer.size;
    const { checkpoint, experienceTransitions } = await loadRunPolicy(
      runDirectory,
      parts.policy.policy,
      models ? { replayBuffer: domain.replayBuffer } : {},
    );
    const log = (message: string) => io.stderr.write(`${message}\n`);
    if (models) {
      log(
        `replay buffer: ${offline} offline transitions + ${experienceTransitions} the run added up to ${checkpoint} (${domain.replayBuffer.size} distinct)`,
      );
    }
    return await body({
      runDirectory,
      config,
      domain,
      policy: parts.policy.policy,
      checkpoint,
      ...(models ? { models } : {}),
      log,
    });
  } finally {
    await parts.close();
  }
}
