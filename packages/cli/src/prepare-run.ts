/**
 * A run from the command line: `prepareRun` turns `dreamgym train`'s flags and config file
 * (or, on `--resume`, the settings its run folder saved) into what the loop runs with: its
 * configuration, its components (the domain, the models, the policy) and the run folder.
 * `openRun` of `@dreamgym/run` builds the parts, in the order that fails fastest, for
 * `prepareRun` and for the commands that reopen a run (`eval`, `fidelity`). The loop's own rules (when the real
 * environment is used, how the starting policy is measured) stay the loop's: the real
 * environment is always handed over, and "before" is the loop's `evaluation.atStart`.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  type DreamGymComponents,
  type DreamGymConfig,
  DreamGymLoop,
  parseDreamGymConfig,
} from '@dreamgym/core';
import type { PreflightReport } from '@dreamgym/core/eval';
import {
  openRun,
  RUN_SPEC_FILE,
  type RunPolicySettings,
  type RunSpec,
  readRunSpec,
  writeRunSpec,
} from '@dreamgym/run';
import { type CommandIo, type FlagValues, fail, readJsonFile } from './command-arguments.js';
import { checkStartingPolicy, checkSyntheticEnvironment } from './preflight-check.js';
import {
  domainSetupFromFlags,
  loopConfigFromFlags,
  policySettingsFromFlags,
  runFolderFlag,
  setField,
} from './run-flags.js';
import { modelSettings } from './run-models.js';

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

/** What `dreamgym train` hands the loop. */
export interface PreparedRun {
  /** The run folder. */
  runDirectory: string;
  /** The loop's configuration, complete (the adapter's defaults filled in). */
  config: DreamGymConfig;
  /** The loop's components; the caller adds `log` and `onIteration`. */
  components: DreamGymComponents;
  /** Whether the loop continues the run in the folder. */
  resume: boolean;
  /** The pre-flight check of a new run (a resumed run was checked when it started). */
  preflight?: PreflightReport;
  /** Whether the continued run may go on to more iterations or a larger real budget (`--extend`). */
  extend: boolean;
  /** Frees the policy and the models. */
  close(): Promise<void>;
}

/**
 * `dreamgym train`'s run: flags over the `--config` file, or on `--resume` over the settings
 * the run folder saved (a resumed run keeps them; the loop refuses a changed configuration,
 * except, with `--extend`, a larger `--iterations` or `--real-budget`).
 * Writes `run.json` (the set-up, the policy, the model flags), so that a resumed run and
 * `dreamgym eval` rebuild the same parts.
 */
export async function prepareRun(
  values: FlagValues,
  io: CommandIo,
  usage: string,
): Promise<PreparedRun> {
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
  const setup = domainSetupFromFlags(values, fileSetup, io, usage);
  parseDreamGymConfig(config);
  const flagPolicy = policySettingsFromFlags(values, llmPolicy);
  if (saved && values.policy !== undefined && values.policy !== saved.spec.policy.kind) {
    fail(
      `${runDirectory} trains the ${saved.spec.policy.kind} policy (${RUN_SPEC_FILE}); --resume continues it as it started: drop --policy ${String(values.policy)}.`,
      '--policy',
    );
  }
  const policy = saved?.spec.policy ?? flagPolicy;
  const models = modelSettings(values, {
    policy: policy.kind,
    ...(saved ? { saved: saved.spec.models } : {}),
    runDirectory,
  });
  const parts = await openRun({
    setup,
    policy,
    selection: models.selection,
    runDirectory,
    env: io.env,
    cwd: io.cwd,
    log: (message) => io.stderr.write(`${message}\n`),
    onDomain: async (domain) => {
      await mkdir(runDirectory, { recursive: true });
      await writeRunSpec(runDirectory, { command: 'train', setup, policy, models: models.flags });
      if (
        (config.evaluation as { environments?: unknown } | undefined)?.environments === undefined
      ) {
        // Real success is what matters, where the adapter's real environment runs as it is.
        setField(
          config,
          ['evaluation', 'environments'],
          [domain.adapter.defaults?.evaluationEnvironment ?? 'real'],
        );
      }
      return parseDreamGymConfig(config);
    },
    // The policy line is train's own (the selection's policy is always linear here).
    logModel: (line) => !line.startsWith('policy:'),
  });
  const { domain } = parts;
  const selected = parts.models!;
  io.stderr.write(`policy: ${parts.policy.description}\n`);
  let preflight: PreflightReport | undefined;
  if (!saved) {
    // A new run only: a resumed one passed (or was forced past) its check when it started.
    try {
      preflight = await checkSyntheticEnvironment(domain, {
        force: values.force === true,
        runDirectory,
        log: (message) => io.stderr.write(`${message}\n`),
      });
    } catch (error) {
      await parts.close();
      throw error;
    }
  }
  return {
    ...(preflight ? { preflight } : {}),
    runDirectory,
    config: parts.config,
    components: {
      adapter: domain.adapter,
      policy: parts.policy.policy,
      experienceModel: selected.experienceModel,
      replayBuffer: domain.replayBuffer,
      // The loop's default generator dedupes exactly; the selection's adds embedding
      // similarity, which the default run keeps out so its results stay as they were.
      ...(models.selection.taskGenerator === 'llm' || models.selection.embedder === 'openai'
        ? { taskGenerator: selected.taskGenerator }
        : {}),
      seedTasks: domain.seedTasks,
      evaluationTasks: domain.evaluationTasks,
      demonstrations: domain.offlineTrajectories,
      // Leased only where the configuration needs it (sim-to-real, real evaluations, the gap).
      realEnvironment: domain.realEnvironment,
      checkStart: (start) =>
        checkStartingPolicy(start, {
          domain: domain.adapter.name,
          force: values.force === true,
          runDirectory,
          log: (message) => io.stderr.write(`${message}\n`),
        }),
    },
    resume: values.resume === true,
    extend: values.extend === true,
    close: parts.close,
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
