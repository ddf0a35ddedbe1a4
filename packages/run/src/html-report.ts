/**
 * `dreamgym report`: a self-contained HTML page (inline SVG, no scripts, no network) with
 * success rate, reward, task-pool growth and the synthetic-to-real gap per iteration, and
 * the ablation table (every evaluation environment and mode, with intervals).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import {
  DatasetNotFoundError,
  type EvaluationMetrics,
  type IterationMetrics,
  readJsonl,
} from '@dreamgym/core';
import { IterationMetricsSchema } from '@dreamgym/core/training';
import { type ChartSeries, escapeHtml, lineChart } from './svg-chart.js';

/** One training run as the report sees it. */
export interface ReportRun {
  name: string;
  metrics: IterationMetrics[];
  /** The run's resolved configuration, shown folded under the table. */
  config?: unknown;
}

/**
 * Pairs of runs whose first iterations have the same success, reward, pool and buffer (e.g.
 * DreamGym-S2R and DreamGym from one seed before S2R's real phase): drawn later, a run's
 * curves cover the earlier one's, and the page says so instead of seeming to miss a run.
 */
function coincidingRuns(
  runs: readonly ReportRun[],
): { run: string; earlier: string; iterations: number }[] {
  const same = (a: IterationMetrics, b: IterationMetrics) =>
    a.iteration === b.iteration &&
    a.successRate === b.successRate &&
    a.meanReward === b.meanReward &&
    a.poolSize === b.poolSize &&
    a.bufferSize === b.bufferSize;
  const pairs: { run: string; earlier: string; iterations: number }[] = [];
  runs.forEach((run, index) => {
    for (const earlier of runs.slice(0, index)) {
      let iterations = 0;
      while (
        iterations < Math.min(run.metrics.length, earlier.metrics.length) &&
        same(run.metrics[iterations]!, earlier.metrics[iterations]!)
      ) {
        iterations += 1;
      }
      if (iterations >= 2) pairs.push({ run: run.name, earlier: earlier.name, iterations });
    }
  });
  return pairs;
}

/** Reads a run folder written by `dreamgym train` (`metrics.jsonl`, `config.json`). */
export async function loadRun(
  runDirectory: string,
  name = basename(runDirectory),
): Promise<ReportRun> {
  const metricsPath = join(runDirectory, 'metrics.jsonl');
  if (!existsSync(metricsPath)) {
    throw new DatasetNotFoundError(
      `${runDirectory} is not a run folder: it has no metrics.jsonl. Pass the --run-dir of a \`dreamgym train\` run.`,
      { path: metricsPath },
    );
  }
  const metrics: IterationMetrics[] = [];
  for await (const record of readJsonl(metricsPath, IterationMetricsSchema)) metrics.push(record);
  const configPath = join(runDirectory, 'config.json');
  const config = existsSync(configPath)
    ? JSON.parse(await readFile(configPath, 'utf8'))
    : undefined;
  return { name, metrics, config };
}

function percent(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

function lastEvaluations(run: ReportRun): EvaluationMetrics[] {
  const withEvaluations = run.metrics.filter((record) => record.evaluations.length > 0);
  return withEvaluations.at(-1)?.evaluations ?? [];
}

type EvaluationKind = { environment: 'synthetic' | 'real'; mode: 'greedy' | 'sampled' };

/** The (environment, mode) pairs evaluated in any of the runs, in a fixed order. */
function evaluationKinds(runs: readonly ReportRun[]): EvaluationKind[] {
  const kinds: EvaluationKind[] = [];
  for (const environment of ['real', 'synthetic'] as const) {
    for (const mode of ['greedy', 'sampled'] as const) {
      const present = runs.some((run) =>
        run.metrics.some((record) =>
          record.evaluations.some(
            (evaluation) => evaluation.environment === environment && evaluation.mode === mode,
          ),
        ),
      );
      if (present) kinds.push({ environment, mode });
    }
  }
  return kinds;
}

function evaluationSeries(run: ReportRun, kind: EvaluationKind): ChartSeries {
  return {
    name: `${run.name} (eval, ${kind.environment}, ${kind.mode})`,
    dashed: true,
    points: run.metrics.flatMap((record) =>
      record.evaluations
        .filter(
          (evaluation) =>
            evaluation.environment === kind.environment && evaluation.mode === kind.mode,
        )
        .map((evaluation): [number, number] => [record.iteration, evaluation.successRate]),
    ),
  };
}

/**
 * A self-contained page around `body` (already escaped HTML): the reports' shared head and
 * style (tables with right-aligned figures, `.ci` for intervals, `.text` for state texts).
 */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1180px; color: #222; }
  h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
  .charts { display: flex; flex-wrap: wrap; gap: 12px; }
  .charts svg { border: 1px solid #ddd; background: #fff; }
  table { border-collapse: collapse; font-size: 14px; }
  th, td { border: 1px solid #ccc; padding: 4px 10px; text-align: right; }
  th:first-child { text-align: left; }
  td.text { text-align: left; white-space: pre-wrap; max-width: 420px; font-size: 12px; }
  .ci { color: #666; font-size: 12px; }
  pre { background: #f6f6f6; padding: 8px; overflow: auto; font-size: 12px; }
</style>
</head>
<body>
${body}</body>
</html>
`;
}

/** Renders the report page for one or more runs (several runs form the ablation table). */
export function renderReport(runs: ReportRun[], options: { title?: string } = {}): string {
  const title = options.title ?? 'DreamGym training report';
  const coinciding = coincidingRuns(runs)
    .map(
      ({ run, earlier, iterations }) =>
        ` The first ${iterations} iterations of ${escapeHtml(run)} equal those of ${escapeHtml(earlier)}, so its curves hide ${escapeHtml(earlier)}'s there.`,
    )
    .join('');
  const kinds = evaluationKinds(runs);
  const successSeries: ChartSeries[] = runs.flatMap((run, colorIndex) => [
    {
      name: `${run.name} (train)`,
      colorIndex,
      points: run.metrics.map((record): [number, number] => [record.iteration, record.successRate]),
    },
    ...kinds
      .map((kind) => ({ ...evaluationSeries(run, kind), colorIndex }))
      .filter((series) => series.points.length > 0),
  ]);
  const gapSeries: ChartSeries[] = runs.flatMap((run, colorIndex) => {
    const measured = run.metrics.filter((record) => record.syntheticToRealGap !== undefined);
    if (measured.length === 0) return [];
    return [
      {
        name: `${run.name} (synthetic)`,
        colorIndex,
        points: measured.map((record): [number, number] => [
          record.iteration,
          record.syntheticToRealGap!.syntheticSuccessRate,
        ]),
      },
      {
        name: `${run.name} (real)`,
        colorIndex,
        dashed: true,
        points: measured.map((record): [number, number] => [
          record.iteration,
          record.syntheticToRealGap!.realSuccessRate,
        ]),
      },
    ];
  });
  const rewardSeries: ChartSeries[] = runs.map((run) => ({
    name: run.name,
    points: run.metrics.map((record): [number, number] => [record.iteration, record.meanReward]),
  }));
  const poolSeries: ChartSeries[] = runs.flatMap((run, colorIndex) => [
    {
      name: `${run.name} (pool)`,
      colorIndex,
      points: run.metrics.map((record): [number, number] => [record.iteration, record.poolSize]),
    },
    {
      name: `${run.name} (generated)`,
      colorIndex,
      dashed: true,
      points: run.metrics.map((record): [number, number] => [
        record.iteration,
        record.generatedTasks,
      ]),
    },
  ]);
  const bufferSeries: ChartSeries[] = runs.map((run) => ({
    name: run.name,
    points: run.metrics.map((record): [number, number] => [record.iteration, record.bufferSize]),
  }));

  const rows = runs.map((run) => {
    const last = run.metrics.at(-1);
    const evaluations = lastEvaluations(run);
    const evaluationCell = (kind: EvaluationKind) => {
      const evaluation = evaluations.find(
        (candidate) => candidate.environment === kind.environment && candidate.mode === kind.mode,
      );
      if (!evaluation) return '<td>–</td>';
      const [low, high] = evaluation.successInterval95;
      return `<td>${percent(evaluation.successRate)} <span class="ci">[${percent(low)}, ${percent(high)}] n=${evaluation.episodes}</span></td>`;
    };
    const gap = run.metrics.findLast((record) => record.syntheticToRealGap)?.syntheticToRealGap;
    const gapCell = gap
      ? `<td>${percent(gap.syntheticSuccessRate)} vs ${percent(gap.realSuccessRate)} <span class="ci">n=${gap.tasks}</span></td>`
      : '<td>–</td>';
    return `<tr><th>${escapeHtml(run.name)}</th><td>${run.metrics.length}</td><td>${last ? percent(last.successRate) : '–'}</td>${kinds.map(evaluationCell).join('')}${gapCell}<td>${last?.realTransitions ?? 0}</td><td>${last?.syntheticTransitions ?? 0}</td><td>${last?.poolSize ?? 0}</td></tr>`;
  });

  const configs = runs
    .filter((run) => run.config !== undefined)
    .map(
      (run) =>
        `<details><summary>${escapeHtml(run.name)} configuration</summary><pre>${escapeHtml(JSON.stringify(run.config, null, 2))}</pre></details>`,
    );

  return htmlPage(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>${runs.length} run(s): ${runs.map((run) => escapeHtml(run.name)).join(', ')}. Training success is measured on the iteration's rollouts; evaluation curves are dashed.${coinciding}</p>
<div class="charts">
${lineChart({ title: 'Success rate per iteration', xLabel: 'iteration', yLabel: 'success rate', series: successSeries, yRange: [0, 1] })}
${lineChart({ title: 'Mean episode reward', xLabel: 'iteration', yLabel: 'reward', series: rewardSeries })}
${lineChart({ title: 'Task pool growth', xLabel: 'iteration', yLabel: 'tasks', series: poolSeries })}
${lineChart({ title: 'Replay buffer size', xLabel: 'iteration', yLabel: 'transitions', series: bufferSeries })}
${gapSeries.length > 0 ? lineChart({ title: 'Synthetic-to-real gap (training tasks)', xLabel: 'iteration', yLabel: 'success rate', series: gapSeries, yRange: [0, 1] }) : ''}
</div>
<h2>Runs and ablations</h2>
<table>
<thead><tr><th>run</th><th>iterations</th><th>final train success</th>${kinds.map((kind) => `<th>eval success (${kind.environment}, ${kind.mode})</th>`).join('')}<th>synthetic vs real on training tasks</th><th>real transitions</th><th>synthetic transitions</th><th>task pool</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
<p class="ci">Brackets: 95% Wilson interval and the number of evaluation episodes. The synthetic-to-real column plays the same policy on the same training tasks in both environments (the gap the paper's Theorem 1 bounds).</p>
${configs.join('\n')}
`,
  );
}
