/**
 * A run from the command line: `prepareRun` turns what `dreamgym train`'s flags say
 * (`trainRunFromFlags`) into what the loop runs with: its configuration, its components (the
 * domain, the models, the policy) and the run folder. `openRun` of `@dreamgym/run` builds the
 * parts, in the order that fails fastest, for `prepareRun` and for the commands that reopen a
 * run (`eval`, `fidelity`). The loop's own rules (when the real environment is used, how the
 * starting policy is measured) stay the loop's: the real environment is always handed over,
 * and "before" is the loop's `evaluation.atStart`.
 */
import { mkdir } from 'node:fs/promises';
import { type DreamGymComponents, type DreamGymConfig, parseDreamGymConfig } from '@dreamgym/core';
import type { PreflightReport } from '@dreamgym/core/eval';
import { openRun, writeRunSpec } from '@dreamgym/run';
import type { CommandIo } from './command-arguments.js';
import { checkStartingPolicy, checkSyntheticEnvironment } from './preflight-check.js';
import type { TrainRunFlags } from './run-flags.js';

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
 * Builds `run`'s parts (`openRun`) and writes `run.json` (the set-up, the policy, the model
 * flags), so that a resumed run and `dreamgym eval` rebuild the same parts; runs the
 * pre-flight check of a new run.
 */
export async function prepareRun(run: TrainRunFlags, io: CommandIo): Promise<PreparedRun> {
  const { runDirectory, setup, policy, models } = run;
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
      // Where the configuration names no evaluation environment: the adapter's default, real
      // success where its real environment runs as it is.
      const evaluation = (run.config.evaluation ?? {}) as { environments?: unknown };
      const environments = evaluation.environments ?? [
        domain.adapter.defaults?.evaluationEnvironment ?? 'real',
      ];
      return parseDreamGymConfig({ ...run.config, evaluation: { ...evaluation, environments } });
    },
    // The policy line is train's own (the selection's policy is always linear here).
    logModel: (line) => !line.startsWith('policy:'),
  });
  const { domain } = parts;
  const selected = parts.models!;
  io.stderr.write(`policy: ${parts.policy.description}\n`);
  let preflight: PreflightReport | undefined;
  if (!run.resumesSavedRun) {
    // A new run only: a resumed one passed (or was forced past) its check when it started.
    try {
      preflight = await checkSyntheticEnvironment(domain, {
        force: run.force,
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
          force: run.force,
          runDirectory,
          log: (message) => io.stderr.write(`${message}\n`),
        }),
    },
    resume: run.resume,
    extend: run.extend,
    close: parts.close,
  };
}
