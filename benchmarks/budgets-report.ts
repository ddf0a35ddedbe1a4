/**
 * The budgets experiments' summary and report (`alfworld-budgets.ts`, `miniwob-budgets.ts`):
 * success pooled over seeds with Wilson intervals, the final table, the paper's two claims
 * stated against the figures, and the HTML page with the learning curves (success against
 * real transitions, shaded 95% intervals). The domain names its evaluation splits and the
 * words the page uses for itself.
 */

import { wilsonInterval95 } from '@dreamgym/core';
import { escapeHtml, htmlPage, lineChart } from '@dreamgym/run';

/** The experiment's conditions, in report order. */
export const BUDGET_CONDITIONS = [
  'start',
  'real-grpo',
  'real-ppo',
  'dreamgym',
  'dreamgym-s2r',
  'no-curriculum',
  'no-replay',
  'no-retrieval',
] as const;
export type BudgetCondition = (typeof BUDGET_CONDITIONS)[number];

export interface SplitResult {
  successRate: number;
  interval: [number, number];
  episodes: number;
}
export interface CurvePoint {
  condition: BudgetCondition;
  seed: number;
  /** The curve mark the point was kept at (3K, 10K, ...; 0 for synthetic-only points). */
  mark: number;
  /** Real transitions actually used: the first iteration that crossed the mark ends at or above it. */
  realTransitions: number;
  syntheticTransitions: number;
  /** Policy updates (loop iterations) from the starting policy. */
  updates: number;
  /** Training wall time from the starting policy (behaviour cloning not counted). */
  wallSeconds: number;
  /** A synthetic run's updates were given on the command line, not matched to its seed's real-env GRPO. */
  updatesGiven?: boolean;
  // Greedy real success on each evaluation split sits at the top level, under the split's
  // name (`valid_seen`, `eval`), as the first results file has it: read it with `greedyOn`.
  /** Sampled real success by split (final points). */
  sampled?: Partial<Record<string, SplitResult>>;
  /** The same training tasks greedy in the synthetic environment and on the real one (final points). */
  syntheticToRealGap?: {
    tasks: number;
    synthetic?: number;
    real?: number;
    /** The synthetic successes replayed on the real environment, and how many really succeed. */
    precision?: {
      rate: number;
      interval: [number, number];
      replayed: number;
      reallySucceeded: number;
    };
    /** Teacher-forced on the real episodes: steps the model paid that the real one did not. */
    falseSuccessRate?: number;
    /** Teacher-forced: real successful steps the model also paid. */
    trueSuccessRecall?: number;
  };
  /** Whether this point ends its condition's training (the point the final table reads). */
  final: boolean;
}

/** A point's greedy real success on `split`. */
export function greedyOn(point: CurvePoint, split: string): SplitResult | undefined {
  return (point as unknown as Partial<Record<string, SplitResult>>)[split];
}

/** Records a point's greedy real success on `split`. */
export function setGreedy(point: CurvePoint, split: string, result: SplitResult): void {
  (point as unknown as Record<string, SplitResult>)[split] = result;
}

/** The words the report uses for its domain. */
export interface BudgetLabels {
  /** The domain's name in titles: `ALFWorld`. */
  domain: string;
  /** Where real success is measured: `the real engine`. */
  environment: string;
  /** The training tasks played in both environments: `training games`. */
  trainingTasks: string;
}

/** What the report states besides the points: the budgets and how the start was made. */
export interface BudgetSettings {
  /** The evaluation splits every point is measured on, in report order. */
  splits: readonly string[];
  labels: BudgetLabels;
  /** Real-env RL's final budget (the paper's 80K). */
  finalBudget: number;
  /** DreamGym-S2R's real budget (the paper's 5K). */
  s2rBudget: number;
  /** Real-env RL's curve points. */
  marks: readonly number[];
  /** Training games played in both environments at the final points. */
  gapTaskCount: number;
  /** How the starting policy was made. */
  startHow: string;
}

/** Success pooled over measurements (seeds, splits), with the pool's Wilson interval. */
function poolResults(results: ReadonlyArray<SplitResult | undefined>): SplitResult | undefined {
  const found = results.filter((value): value is SplitResult => value !== undefined);
  if (found.length === 0) return undefined;
  const episodes = found.reduce((total, value) => total + value.episodes, 0);
  const successes = found.reduce(
    (total, value) => total + Math.round(value.successRate * value.episodes),
    0,
  );
  return {
    successRate: successes / episodes,
    interval: wilsonInterval95(successes, episodes),
    episodes,
  };
}

/** Greedy success pooled over seeds and `splits`, with the pool's Wilson interval. */
export function pooled(
  points: readonly CurvePoint[],
  splits: readonly string[],
): SplitResult | undefined {
  return poolResults(points.flatMap((point) => splits.map((split) => greedyOn(point, split))));
}

/** What pooling over every split is called: the split itself, `both splits`, `all splits`. */
const allSplits = (splits: readonly string[]) =>
  splits.length === 1 ? splits[0]! : splits.length === 2 ? 'both splits' : 'all splits';

/** What the final table and the claims read of the settings. */
export type FinalSettings = Pick<BudgetSettings, 'splits' | 'finalBudget' | 's2rBudget'>;

/** The mark a condition's training ends at: the last mark for real-env RL, the S2R budget, or 0. */
export function finalMark(condition: BudgetCondition, settings: FinalSettings): number {
  if (condition.startsWith('real-')) return settings.finalBudget;
  return condition === 'dreamgym-s2r' ? settings.s2rBudget : 0;
}

/**
 * A condition's final points, measured in full. A point that was final for a smaller last mark
 * (a run stopped at 30K whose marks now go to 80K) is not one: the table and the claims never
 * pool one seed's 30K with another's 80K. Nor do they pool a synthetic run whose updates were
 * given on the command line with one matched to its seed's real-env GRPO: while any seed has
 * a matched point, the given ones are left out (they stay in the table of every point).
 */
export function finalPoints(
  curves: readonly CurvePoint[],
  condition: BudgetCondition,
  settings: FinalSettings,
): CurvePoint[] {
  const points = curves.filter(
    (point) =>
      point.condition === condition &&
      point.final &&
      point.mark === finalMark(condition, settings) &&
      settings.splits.every((split) => greedyOn(point, split)),
  );
  const matched = points.filter((point) => !point.updatesGiven);
  return matched.length > 0 ? matched : points;
}
const disjoint = (a: SplitResult, b: SplitResult) =>
  a.interval[0] > b.interval[1] || b.interval[0] > a.interval[1];
export const pct = (value: number | undefined) =>
  value === undefined ? '–' : `${(100 * value).toFixed(1)}%`;
export const withInterval = (value: SplitResult | undefined) =>
  value === undefined
    ? '–'
    : `${pct(value.successRate)} [${(100 * value.interval[0]).toFixed(1)}, ${(100 * value.interval[1]).toFixed(1)}] n=${value.episodes}`;

/** The real-env RL baselines the paper states its claims against (Table 1: GRPO and PPO at 80K). */
export const REAL_RL_BASELINES = ['real-grpo', 'real-ppo'] as const;
const BASELINE_NAMES: Record<(typeof REAL_RL_BASELINES)[number], string> = {
  'real-grpo': 'real-env GRPO',
  'real-ppo': 'real-env PPO',
};

/**
 * The paper's claims, each with the figures and whether they support it, stated against every
 * real-env RL baseline measured at its final mark (GRPO and PPO, as the paper's Table 1 does):
 * the premise (the baseline improves on the start), DreamGym matches it, S2R beats it.
 */
export function budgetClaims(curves: readonly CurvePoint[], settings: BudgetSettings) {
  const { finalBudget, s2rBudget, splits } = settings;
  const final = (condition: BudgetCondition) => finalPoints(curves, condition, settings);
  const seedsOf = (condition: BudgetCondition) => final(condition).map((point) => point.seed);
  const start = pooled(final('start'), splits);
  const dreamgym = pooled(final('dreamgym'), splits);
  const s2r = pooled(final('dreamgym-s2r'), splits);
  const seedsText = (seeds: readonly number[]) =>
    `(seed${seeds.length === 1 ? '' : 's'} ${seeds.join(', ')})`;
  const named = (condition: BudgetCondition, value: SplitResult | undefined) =>
    `${withInterval(value)} ${seedsText(seedsOf(condition))}`;
  const baselines = REAL_RL_BASELINES.map((baseline) => ({
    baseline,
    name: BASELINE_NAMES[baseline],
    realRl: pooled(final(baseline), splits),
  }));
  // GRPO is the experiment's main baseline: its claims are stated even before it is measured.
  const measured = baselines.filter(
    ({ baseline, realRl }) => baseline === 'real-grpo' || realRl !== undefined,
  );
  const figuresFor = (baseline: BudgetCondition, realRl: SplitResult | undefined) => ({
    start,
    realRl,
    dreamgym,
    s2r,
    seeds: {
      realRl: seedsOf(baseline),
      dreamgym: seedsOf('dreamgym'),
      s2r: seedsOf('dreamgym-s2r'),
    },
  });
  // The premise compares a baseline with the start of its own seeds (PPO runs on one seed).
  const premises = measured.flatMap(({ baseline, name, realRl }) => {
    const seeds = seedsOf(baseline);
    const ownStart = pooled(
      final('start').filter((point) => seeds.includes(point.seed)),
      splits,
    );
    return ownStart && realRl
      ? [
          {
            baseline,
            claim: `${capitalised(name)} with ${finalBudget} real transitions improves on the starting policy (the premise of the claims against it).`,
            figures: { ...figuresFor(baseline, realRl), start: ownStart },
            supported: realRl.successRate > ownStart.successRate && disjoint(realRl, ownStart),
            note: `${named(baseline, realRl)} against the start ${withInterval(ownStart)} ${seedsText(seeds)} (greedy, ${allSplits(splits)}, pooled over seeds)`,
          },
        ]
      : [];
  });
  const matches = measured.map(({ baseline, name, realRl }) => ({
    baseline,
    claim: `DreamGym with 0 real transitions matches ${name} with ${finalBudget} (the paper's WebShop and ALFWorld rows: close to GRPO and PPO at 80K).`,
    figures: figuresFor(baseline, realRl),
    supported:
      realRl && dreamgym
        ? dreamgym.successRate >= 0.9 * realRl.successRate || !disjoint(dreamgym, realRl)
        : null,
    note:
      realRl && dreamgym
        ? `DreamGym ${named('dreamgym', dreamgym)} against ${name} ${named(baseline, realRl)}: ${dreamgym.successRate >= realRl.successRate ? 'at or above it' : `${(100 * (realRl.successRate - dreamgym.successRate)).toFixed(1)} points below it`}, intervals ${disjoint(dreamgym, realRl) ? 'disjoint' : 'overlapping'}`
        : 'not yet measured',
  }));
  const beats = measured.map(({ baseline, name, realRl }) => ({
    baseline,
    claim: `DreamGym-S2R with ${s2rBudget} real transitions beats ${name} with ${finalBudget}.`,
    figures: figuresFor(baseline, realRl),
    supported: realRl && s2r ? s2r.successRate > realRl.successRate && disjoint(s2r, realRl) : null,
    note:
      realRl && s2r
        ? `S2R ${named('dreamgym-s2r', s2r)} against ${name} ${named(baseline, realRl)}: ${s2r.successRate > realRl.successRate ? 'higher' : 'not higher'}, intervals ${disjoint(s2r, realRl) ? 'disjoint (a separation)' : 'overlapping (not a separation)'}`
        : 'not yet measured',
  }));
  return [...premises, ...matches, ...beats];
}

/** The final point of every condition, pooled over its seeds. */
export function budgetTable(curves: readonly CurvePoint[], settings: FinalSettings) {
  const { splits } = settings;
  return BUDGET_CONDITIONS.map((condition) => {
    const points = finalPoints(curves, condition, settings);
    if (points.length === 0) return undefined;
    const mean = (read: (point: CurvePoint) => number | undefined) => {
      const numbers = points.map(read).filter((value): value is number => value !== undefined);
      return numbers.length === 0 ? undefined : numbers.reduce((a, b) => a + b, 0) / numbers.length;
    };
    const bySplit = (read: (point: CurvePoint, split: string) => SplitResult | undefined) =>
      new Map(
        splits.map((split) => [split, poolResults(points.map((point) => read(point, split)))]),
      );
    return {
      condition,
      seeds: points.map((point) => point.seed),
      realTransitions: mean((point) => point.realTransitions)!,
      syntheticTransitions: mean((point) => point.syntheticTransitions)!,
      updates: mean((point) => point.updates)!,
      wallSeconds: mean((point) => point.wallSeconds)!,
      greedy: bySplit(greedyOn),
      sampled: bySplit((point, split) => point.sampled?.[split]),
      all: pooled(points, splits),
      syntheticToRealGap: {
        synthetic: mean((point) => point.syntheticToRealGap?.synthetic),
        real: mean((point) => point.syntheticToRealGap?.real),
      },
    };
  }).filter((row) => row !== undefined);
}

/**
 * The final table as the results file keeps it: each split's greedy success under its name,
 * the sampled ones under `sampled_<split>`, and with several splits their pool as `both`.
 */
export function budgetTableRecord(curves: readonly CurvePoint[], settings: FinalSettings) {
  return budgetTable(curves, settings).map(
    ({ greedy, sampled, all, syntheticToRealGap, ...row }) => ({
      ...row,
      ...Object.fromEntries(greedy),
      ...Object.fromEntries([...sampled].map(([split, value]) => [`sampled_${split}`, value])),
      ...(settings.splits.length > 1 ? { both: all } : {}),
      syntheticToRealGap,
    }),
  );
}

const COLORS: Partial<Record<BudgetCondition, number>> = {
  start: 5,
  'real-grpo': 0,
  'real-ppo': 4,
  dreamgym: 1,
  'dreamgym-s2r': 2,
};

/** The report page: the curves with shaded intervals, the claims, the final table, every point. */
export function renderBudgetReport(
  curves: readonly CurvePoint[],
  settings: BudgetSettings,
): string {
  const { finalBudget, marks, gapTaskCount, startHow, splits, labels } = settings;
  const document = {
    curves,
    table: budgetTable(curves, settings),
    claims: budgetClaims(curves, settings),
  };
  /** One split's curves, or (no split) the pool of every split. */
  const chart = (split?: string) => {
    const series = (['real-grpo', 'real-ppo', 'dreamgym', 'dreamgym-s2r'] as const).flatMap(
      (condition) => {
        const bySeed = new Map<number, CurvePoint[]>();
        for (const point of document.curves) {
          if (
            point.condition !== condition &&
            !(point.condition === 'start' && condition.startsWith('real'))
          )
            continue;
          if (
            point.condition === 'start' &&
            !document.curves.some(
              (other) => other.condition === condition && other.seed === point.seed,
            )
          )
            continue;
          bySeed.set(point.seed, [...(bySeed.get(point.seed) ?? []), point]);
        }
        // S2R's line starts at DreamGym's point (0 real transitions).
        if (condition === 'dreamgym-s2r') {
          for (const [seed, points] of bySeed) {
            const dreamgym = document.curves.find(
              (point) => point.condition === 'dreamgym' && point.seed === seed,
            );
            if (dreamgym) points.unshift(dreamgym);
          }
        }
        // One line per condition: success pooled over the seeds measured at each mark, drawn
        // at the mean real transitions those points used.
        const marks = [
          ...new Set([...bySeed.values()].flatMap((points) => points.map((point) => point.mark))),
        ].sort((a, b) => a - b);
        const line: Array<[number, number]> = [];
        const band: Array<[number, number, number]> = [];
        for (const mark of marks) {
          const at = [...bySeed.values()].flatMap((points) =>
            points.filter((point) => point.mark === mark),
          );
          const x = at.reduce((total, point) => total + point.realTransitions, 0) / at.length;
          const value = pooled(at, split === undefined ? splits : [split]);
          if (!value) continue;
          line.push([x, value.successRate]);
          band.push([x, value.interval[0], value.interval[1]]);
        }
        if (line.length === 0) return [];
        const seedsMeasured = [...bySeed.keys()].join(', ');
        if (condition === 'dreamgym') {
          // DreamGym uses no real transition: a level across the chart, to read against the
          // other lines at every budget.
          const [[, y]] = line as [[number, number]];
          const [[, low, high]] = band as [[number, number, number]];
          return [
            {
              name: `dreamgym, 0 real (seeds ${seedsMeasured})`,
              points: [
                [0, y],
                [finalBudget, y],
              ] as Array<[number, number]>,
              band: [
                [0, low, high],
                [finalBudget, low, high],
              ] as Array<[number, number, number]>,
              dashed: true,
              colorIndex: COLORS[condition]!,
            },
          ];
        }
        return [
          {
            name: `${condition} (seeds ${seedsMeasured})`,
            points: line,
            band,
            colorIndex: COLORS[condition]!,
          },
        ];
      },
    );
    return lineChart({
      title: `${split ?? capitalised(allSplits(splits))}, greedy, pooled over seeds`,
      xLabel: 'real transitions used (sqrt scale)',
      yLabel: 'real success',
      series,
      yRange: [0, Math.max(0.3, ...series.flatMap((line) => line.band.map(([, , high]) => high)))],
      xScale: 'sqrt',
      // The real-env RL marks (S2R's budget sits between the first two, too close to label).
      xTicks: [0, ...marks],
      width: 560,
      height: 340,
    });
  };
  const cell = (value: SplitResult | undefined) =>
    value === undefined
      ? '<td>–</td>'
      : `<td>${pct(value.successRate)} <span class="ci">[${(100 * value.interval[0]).toFixed(1)}, ${(100 * value.interval[1]).toFixed(1)}] n=${value.episodes}</span></td>`;
  const several = splits.length > 1;
  const rows = document.table
    .map(
      (row) =>
        `<tr><th>${escapeHtml(row.condition)}</th><td>${row.seeds.join(', ')}</td><td>${Math.round(row.realTransitions)}</td><td>${Math.round(row.syntheticTransitions)}</td><td>${Math.round(row.updates)}</td><td>${(row.wallSeconds / 60).toFixed(1)}</td>${splits.map((split) => cell(row.greedy.get(split))).join('')}${several ? cell(row.all) : ''}${splits.map((split) => cell(row.sampled.get(split))).join('')}<td>${pct(row.syntheticToRealGap.synthetic)} vs ${pct(row.syntheticToRealGap.real)}</td></tr>`,
    )
    .join('\n');
  const claimItems = document.claims
    .map(
      (claim) =>
        `<li><strong>${claim.supported === null ? 'not yet measured' : claim.supported ? 'supported' : 'not supported'}</strong>: ${escapeHtml(claim.claim)} <span class="ci">${escapeHtml(claim.note)}</span></li>`,
    )
    .join('\n');
  const curveRows = document.curves
    .map(
      (point) =>
        `<tr><th>${escapeHtml(point.condition)}</th><td>${point.seed}</td><td>${point.realTransitions}</td><td>${point.syntheticTransitions}</td><td>${point.updates}${point.updatesGiven ? ' (given)' : ''}</td><td>${(point.wallSeconds / 60).toFixed(1)}</td>${splits.map((split) => cell(greedyOn(point, split))).join('')}</tr>`,
    )
    .join('\n');
  const header = (words: string) => `<th>${escapeHtml(words)}</th>`;
  const greedyHeaders = splits.map((split) => header(`${split} greedy`)).join('');
  const title = `DreamGym on ${labels.domain} at the paper’s budgets`;
  return htmlPage(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>Greedy success on ${escapeHtml(labels.environment)} against the real transitions each condition used. Every
condition starts from the same policy: ${escapeHtml(startHow)}. Lines pool the seeds measured
at each point; the shaded bands are 95% Wilson intervals. S2R's line starts at DreamGym's point.</p>
<div class="charts">${several ? chart() : ''}${splits.map((split) => chart(split)).join('')}</div>
<h2>The paper's claims</h2>
<ul>${claimItems}</ul>
<h2>Final points (greedy and sampled real success, pooled over seeds)</h2>
<table><thead><tr><th>condition</th><th>seeds</th><th>real transitions</th><th>synthetic transitions</th><th>updates</th><th>training minutes</th>${greedyHeaders}${several ? header(`${splits.length === 2 ? 'both' : 'all'} greedy`) : ''}${splits.map((split) => header(`${split} sampled`)).join('')}<th>synthetic vs real on ${gapTaskCount} ${escapeHtml(labels.trainingTasks)}</th></tr></thead>
<tbody>${rows}</tbody></table>
<h2>Every curve point</h2>
<table><thead><tr><th>condition</th><th>seed</th><th>real transitions</th><th>synthetic transitions</th><th>updates</th><th>training minutes</th>${greedyHeaders}</tr></thead>
<tbody>${curveRows}</tbody></table>
`,
  );
}

const capitalised = (words: string) => `${words[0]!.toUpperCase()}${words.slice(1)}`;

/** The final table and the claims as progress lines, for the end of a run. */
export function summaryLines(curves: readonly CurvePoint[], settings: BudgetSettings): string[] {
  return [
    ...budgetTable(curves, settings).map(
      (row) =>
        `${row.condition} (seeds ${row.seeds.join(', ')}): ${withInterval(row.all)} greedy on ${allSplits(settings.splits)}, ${Math.round(row.realTransitions)} real, ${Math.round(row.syntheticTransitions)} synthetic transitions, ${Math.round(row.updates)} updates`,
    ),
    ...budgetClaims(curves, settings).map(
      (claim) =>
        `${claim.supported === null ? 'not yet measured' : claim.supported ? 'supported' : 'not supported'}: ${claim.claim} ${claim.note}`,
    ),
  ];
}
