/**
 * What `dreamgym train` prints of a run: each iteration's evaluations and gap, and at the end
 * the run folder, the warm start, the pre-flight verdict, the gaps and the headline.
 */
import type {
  DreamGymConfig,
  DreamGymResult,
  EvaluationMetrics,
  IterationMetrics,
} from '@dreamgym/core';
import type { PreflightReport, SyntheticToRealGap } from '@dreamgym/core/eval';
import { percent } from './command-arguments.js';
import { PREFLIGHT_FILE } from './preflight-check.js';

/** An iteration's evaluations and synthetic-to-real gap, a line each. */
export function iterationLines(metrics: IterationMetrics): string[] {
  const lines = metrics.evaluations.map(
    (evaluation) =>
      `iteration ${metrics.iteration}: eval (${evaluation.mode}) ${percent(evaluation)}`,
  );
  const gap = metrics.syntheticToRealGap;
  if (gap) {
    lines.push(
      `iteration ${metrics.iteration}: synthetic-to-real gap on ${gap.tasks} training tasks: synthetic ${(gap.syntheticSuccessRate * 100).toFixed(1)}% vs real ${(gap.realSuccessRate * 100).toFixed(1)}%`,
    );
  }
  return lines;
}

/**
 * What a finished run prints: its folder, the warm start, the gaps, and success before (the
 * loop's start evaluation) and after, in the real environment where evaluations run there.
 */
export function formatRunResult(
  result: DreamGymResult,
  runDirectory: string,
  config: DreamGymConfig,
  preflight: PreflightReport | undefined,
): string {
  const environment = config.evaluation.environments.includes('real') ? 'real' : 'synthetic';
  const inEnvironment = (evaluations: readonly EvaluationMetrics[]) =>
    evaluations.filter((evaluation) => evaluation.environment === environment);
  const lines = [`run folder: ${runDirectory}`];
  if (result.warmStart) {
    lines.push(
      `warm start: behaviour cloning kept epoch ${result.warmStart.bestEpoch}, held-out NLL ${result.warmStart.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${result.warmStart.bestHeldOutNegativeLogLikelihood.toFixed(3)}`,
    );
  }
  if (preflight) lines.push(preflightLine(preflight));
  const startGap = result.start?.syntheticToRealGap;
  if (startGap) lines.push(formatGap('starting policy', startGap));
  const endGap = result.metrics.at(-1)?.syntheticToRealGap;
  if (endGap) lines.push(formatGap('trained policy', endGap));
  return `${lines.join('\n')}\n${formatBeforeAfter(
    inEnvironment(result.start?.evaluations ?? []),
    inEnvironment(result.finalEvaluations),
  )}report: dreamgym report --run-dir ${runDirectory}\n`;
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

/** The pre-flight's verdict in one line, for the run's result beside the headline. */
export function preflightLine(report: PreflightReport): string {
  if (report.offline === undefined) return 'pre-flight: not measured (no outcome judge)';
  const { recall, falseSuccessRate } = report.offline;
  const figures = `held-out recall ${(recall * 100).toFixed(1)}%, false success ${(falseSuccessRate * 100).toFixed(2)}%`;
  return report.trusted
    ? `pre-flight: passed (${figures})`
    : `pre-flight: FAILED, trained with --force (${figures}; ${report.problems.length} problem(s) in ${PREFLIGHT_FILE})`;
}
