/**
 * Minimal, dependency-free SVG line charts for the self-contained HTML report.
 */

/** One line of a chart. */
export interface ChartSeries {
  name: string;
  /** [x, y] points, in x order. */
  points: Array<[number, number]>;
  /** Draw dashed (e.g. evaluation curves beside training curves). */
  dashed?: boolean;
  /** Palette index; series of one run share it. Default: the series' position. */
  colorIndex?: number;
  /** A shaded band under the line, e.g. 95% intervals: [x, low, high] per point, in x order. */
  band?: Array<[number, number, number]>;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: ChartSeries[];
  /** Fixed y range, e.g. [0, 1] for rates; default: the data's range. */
  yRange?: [number, number];
  /**
   * How x maps to the page: `linear` (default) or `sqrt`, which spreads the small values of a
   * range starting at 0 (3K, 10K, 30K and 80K transitions all stay readable).
   */
  xScale?: 'linear' | 'sqrt';
  /** The x axis' tick values; default round values over the data's range. */
  xTicks?: number[];
  width?: number;
  height?: number;
}

const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
];

/** Escapes text for HTML and SVG. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** Round, readable tick values covering [low, high]. */
export function niceTicks(low: number, high: number, count = 5): number[] {
  if (!(high > low)) return [low];
  const rough = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10]
    .map((factor) => factor * magnitude)
    .find((candidate) => candidate >= rough)!;
  const ticks: number[] = [];
  for (let tick = Math.ceil(low / step) * step; tick <= high + step * 1e-9; tick += step) {
    ticks.push(Number(tick.toPrecision(12)));
  }
  return ticks;
}

/** A tick label: thousands as `k`, with the decimals that keep neighbouring ticks apart. */
export function formatTick(value: number): string {
  if (Math.abs(value) >= 10_000) return `${Number((value / 1000).toFixed(2))}k`;
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/0+$/, '');
}

/** Renders a line chart as an inline `<svg>` element. */
export function lineChart(options: LineChartOptions): string {
  const width = options.width ?? 560;
  const height = options.height ?? 300;
  const margin = { top: 36, right: 16, bottom: 44, left: 56 };
  const points = options.series.flatMap((series) => series.points);
  const xs = points.map(([x]) => x);
  const ys = [
    ...points.map(([, y]) => y),
    ...options.series.flatMap((series) =>
      (series.band ?? []).flatMap(([, low, high]) => [low, high]),
    ),
  ];
  const xLow = xs.length ? Math.min(...xs) : 0;
  const xHigh = xs.length ? Math.max(...xs) : 1;
  let [yLow, yHigh] = options.yRange ?? [
    ys.length ? Math.min(...ys) : 0,
    ys.length ? Math.max(...ys) : 1,
  ];
  if (yHigh === yLow) [yLow, yHigh] = [yLow - 1, yHigh + 1];
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const warp =
    options.xScale === 'sqrt' ? (x: number) => Math.sqrt(Math.max(0, x)) : (x: number) => x;
  const xScale = (x: number) =>
    margin.left +
    (xHigh === xLow
      ? plotWidth / 2
      : ((warp(x) - warp(xLow)) / (warp(xHigh) - warp(xLow))) * plotWidth);
  const yScale = (y: number) =>
    margin.top + plotHeight - ((y - yLow) / (yHigh - yLow)) * plotHeight;

  // The legend sits under the chart, a row per series, so it never covers a line.
  const legendTop = height + 8;
  const fullHeight = legendTop + options.series.length * 16;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${fullHeight}" width="${width}" height="${fullHeight}" role="img" aria-label="${escapeHtml(options.title)}">`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600">${escapeHtml(options.title)}</text>`,
  );
  for (const tick of niceTicks(yLow, yHigh)) {
    const y = yScale(tick);
    parts.push(
      `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${margin.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${formatTick(tick)}</text>`,
    );
  }
  for (const tick of options.xTicks ?? niceTicks(xLow, xHigh, 6)) {
    const x = xScale(tick);
    parts.push(
      `<text x="${x}" y="${height - margin.bottom + 16}" text-anchor="middle" font-size="11">${formatTick(tick)}</text>`,
    );
  }
  parts.push(
    `<line x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${margin.top + plotHeight}" stroke="#333"/>`,
    `<line x1="${margin.left}" x2="${width - margin.right}" y1="${margin.top + plotHeight}" y2="${margin.top + plotHeight}" stroke="#333"/>`,
    `<text x="${margin.left + plotWidth / 2}" y="${height - 8}" text-anchor="middle" font-size="12">${escapeHtml(options.xLabel)}</text>`,
    `<text transform="translate(14 ${margin.top + plotHeight / 2}) rotate(-90)" text-anchor="middle" font-size="12">${escapeHtml(options.yLabel)}</text>`,
  );
  options.series.forEach((series, index) => {
    const color = PALETTE[(series.colorIndex ?? index) % PALETTE.length]!;
    if (series.band && series.band.length > 0) {
      const upper = series.band.map(
        ([x, , high]) => `${xScale(x).toFixed(1)},${yScale(high).toFixed(1)}`,
      );
      const lower = series.band
        .map(([x, low]) => `${xScale(x).toFixed(1)},${yScale(low).toFixed(1)}`)
        .reverse();
      parts.push(
        `<polygon fill="${color}" fill-opacity="0.15" stroke="none" points="${[...upper, ...lower].join(' ')}"/>`,
      );
    }
    const dash = series.dashed ? ' stroke-dasharray="6 4"' : '';
    if (series.points.length > 1) {
      const path = series.points
        .map(([x, y]) => `${xScale(x).toFixed(1)},${yScale(y).toFixed(1)}`)
        .join(' ');
      parts.push(
        `<polyline fill="none" stroke="${color}" stroke-width="2"${dash} points="${path}"/>`,
      );
    }
    for (const [x, y] of series.points) {
      parts.push(
        `<circle cx="${xScale(x).toFixed(1)}" cy="${yScale(y).toFixed(1)}" r="2.5" fill="${color}"/>`,
      );
    }
    const legendY = legendTop + index * 16;
    parts.push(
      `<line x1="${margin.left + 10}" x2="${margin.left + 28}" y1="${legendY}" y2="${legendY}" stroke="${color}" stroke-width="2"${dash}/>`,
      `<text x="${margin.left + 32}" y="${legendY + 4}" font-size="11">${escapeHtml(series.name)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
