/**
 * `dreamgym train`'s pre-flight check: before any training, whether the synthetic environment
 * can be trusted on this domain (the offline part of `@dreamgym/core/eval`'s pre-flight: the
 * outcome judge trained without a fifth of the tasks, teacher-forced on them). A domain the
 * model was not tuned for fails silently otherwise: the policy learns what the model pays
 * for. Below the thresholds the run is refused, saying what to do, unless `--force`. Then,
 * once the loop has measured the starting policy (`checkStartingPolicy`), its success on the
 * same training tasks in both environments: intervals apart stop the run before training.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  formatPreflight,
  type PreflightReport,
  preflightVerdict,
  wilsonInterval95,
} from '@dreamgym/core/eval';
import type { StartEvaluation } from '@dreamgym/core/training';
import type { DomainSetup } from '@dreamgym/run';
import { fail } from './command-arguments.js';

/** Where a run folder keeps the pre-flight report. */
export const PREFLIGHT_FILE = 'preflight.json';

/**
 * Runs the pre-flight check on `domain`, logs its figures and verdict, writes
 * `preflight.json` into the run folder, and refuses an untrusted synthetic environment (a
 * `ConfigError` naming `--force`) unless `force`.
 */
export async function checkSyntheticEnvironment(
  domain: Pick<DomainSetup, 'experienceGrounding' | 'offlineTrajectories' | 'adapter'>,
  options: { force: boolean; runDirectory: string; log: (message: string) => void },
): Promise<PreflightReport> {
  const started = performance.now();
  const offline = domain.experienceGrounding.preflight(domain.offlineTrajectories);
  const report = preflightVerdict(offline ? { offline } : {});
  for (const line of formatPreflight(report)) options.log(line);
  options.log(`pre-flight: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await writeFile(
    join(options.runDirectory, PREFLIGHT_FILE),
    `${JSON.stringify({ ...report, forced: !report.trusted && options.force }, null, 2)}\n`,
  );
  if (!report.trusted && !options.force) refuse(domain.adapter.name, report.problems);
  return report;
}

/** Stops the run with the problems found and what to do about them. */
function refuse(domain: string, problems: readonly string[]): never {
  fail(
    [
      `The synthetic environment cannot be trusted on ${domain}:`,
      ...problems.map((problem) => `  - ${problem}`),
      'Training on it would teach the policy what the model pays for, not what the real environment does. What to do:',
      '  - add offline episodes that fail as well as succeed (`dreamgym data explore`, or "exploration" in the config\'s "setup"): the judge learns outcomes from both;',
      '  - use the LLM experience model grounded by retrieval (--experience hybrid);',
      '  - spend real transitions after the synthetic phase (--real-budget N: sim-to-real writes them back and the judge learns from them);',
      `  - or train anyway with --force (the figures are kept in ${PREFLIGHT_FILE} of the run folder).`,
    ].join('\n'),
    '--force',
  );
}

/**
 * The starting policy's part of the check, on the loop's start evaluation: its success on the
 * same training tasks in the synthetic and the real environment (`evaluation.gapTasks`). With
 * 95% intervals apart the run stops before training unless `force`; the figures are added to
 * `preflight.json`. Nothing to check without a gap measurement.
 */
export async function checkStartingPolicy(
  start: StartEvaluation,
  options: { domain: string; force: boolean; runDirectory: string; log: (message: string) => void },
): Promise<void> {
  const gap = start.syntheticToRealGap;
  if (gap === undefined || gap.tasks === 0) return;
  const estimate = (rate: number) => {
    const successes = Math.round(rate * gap.tasks);
    return { rate, successes, interval95: wilsonInterval95(successes, gap.tasks) };
  };
  const synthetic = estimate(gap.syntheticSuccessRate);
  const real = estimate(gap.realSuccessRate);
  const apart =
    synthetic.interval95[0] > real.interval95[1] || real.interval95[0] > synthetic.interval95[1];
  const percent = (rate: number) => `${(rate * 100).toFixed(1)}%`;
  options.log(
    `pre-flight (starting policy, ${gap.tasks} training tasks in both environments): synthetic ${percent(synthetic.rate)} vs real ${percent(real.rate)}${apart ? ' (95% intervals apart)' : ''}`,
  );
  const file = join(options.runDirectory, PREFLIGHT_FILE);
  const saved = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  const problem = `on the same ${gap.tasks} training tasks the starting policy succeeds ${percent(synthetic.rate)} in the synthetic environment and ${percent(real.rate)} in the real one (95% intervals apart)`;
  await writeFile(
    file,
    `${JSON.stringify(
      {
        ...saved,
        startingPolicy: { tasks: gap.tasks, synthetic, real, apart },
        ...(apart
          ? {
              trusted: false,
              problems: [...((saved.problems as string[]) ?? []), problem],
              forced: options.force,
            }
          : {}),
      },
      null,
      2,
    )}\n`,
  );
  if (apart && !options.force) refuse(options.domain, [problem]);
}
