import { describe, expect, it } from 'vitest';
import { formatTick, lineChart, niceTicks } from './svg-chart.js';

describe('svg chart ticks', () => {
  it('labels thousands so that neighbouring ticks never read the same', () => {
    const labels = niceTicks(31_000, 33_200).map(formatTick);
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels).toContain('31.5k');
    expect(formatTick(120_000)).toBe('120k');
    expect(formatTick(0.25)).toBe('0.25');
    expect(formatTick(3)).toBe('3');
  });
});

describe('line chart', () => {
  const series = {
    name: 'real-env RL',
    points: [
      [0, 0.1],
      [3000, 0.12],
      [80_000, 0.2],
    ] as Array<[number, number]>,
    band: [
      [0, 0.05, 0.15],
      [3000, 0.07, 0.17],
      [80_000, 0.15, 0.25],
    ] as Array<[number, number, number]>,
  };
  const pointXs = (svg: string) =>
    [...svg.matchAll(/<circle cx="([\d.]+)"/g)].map((match) => Number(match[1]));

  it('shades a series band as one polygon from its upper edge back along its lower edge', () => {
    const svg = lineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [series],
      yRange: [0, 1],
    });
    const polygons = [...svg.matchAll(/<polygon [^>]*points="([^"]+)"/g)];
    expect(polygons).toHaveLength(1);
    const corners = polygons[0]![1]!.split(' ').map((pair) => pair.split(',').map(Number));
    expect(corners).toHaveLength(6);
    // Upper edge left to right, then the lower edge right to left: the same xs mirrored.
    expect(corners.slice(3).map(([x]) => x)).toEqual(
      corners
        .slice(0, 3)
        .map(([x]) => x)
        .reverse(),
    );
    for (const [index, [, y]] of corners.slice(0, 3).entries()) {
      expect(y!).toBeLessThan(corners[5 - index]![1]!);
    }
  });

  it('puts the legend under the plot, a row per series, so that no line runs under it', () => {
    const second = { ...series, name: 'DreamGym', dashed: true };
    const svg = lineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [series, second],
      yRange: [0, 1],
      height: 300,
    });
    const legendRows = [
      ...svg.matchAll(/<text x="[\d.]+" y="([\d.]+)" font-size="11">(real-env RL|DreamGym)</g),
    ];
    expect(legendRows.map((match) => match[2])).toEqual(['real-env RL', 'DreamGym']);
    for (const [, y] of legendRows) expect(Number(y)).toBeGreaterThan(300);
    const plotted = [...svg.matchAll(/<circle cx="[\d.]+" cy="([\d.]+)"/g)].map((match) =>
      Number(match[1]),
    );
    expect(Math.max(...plotted)).toBeLessThan(300);
    expect(svg).toContain(`height="${300 + 8 + 2 * 16}"`);
  });

  it('spreads small x values on a sqrt scale and draws the ticks it is given', () => {
    const options = {
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [series],
      yRange: [0, 1] as [number, number],
    };
    const [zero, small, large] = pointXs(lineChart(options));
    const [sqrtZero, sqrtSmall, sqrtLarge] = pointXs(
      lineChart({ ...options, xScale: 'sqrt', xTicks: [0, 3000, 80_000] }),
    );
    expect(sqrtZero).toBe(zero);
    expect(sqrtLarge).toBe(large);
    // 3K of 80K: 3.75% of the axis linearly, sqrt(3/80) = 19.4% on the sqrt scale.
    expect((small! - zero!) / (large! - zero!)).toBeCloseTo(0.0375, 3);
    expect((sqrtSmall! - sqrtZero!) / (sqrtLarge! - sqrtZero!)).toBeCloseTo(Math.sqrt(3 / 80), 2);
    const svg = lineChart({ ...options, xScale: 'sqrt', xTicks: [0, 3000, 80_000] });
    expect(svg).toContain('>3000</text>');
    expect(svg).toContain('>80k</text>');
  });
});
