import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type IterationMetrics, wilsonInterval95 } from '@dreamgym/core';
import { IterationMetricsSchema } from '@dreamgym/core/training';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRun, type ReportRun, renderReport } from './html-report.js';

function run(name: string, slope: number): ReportRun {
  const metrics: IterationMetrics[] = Array.from({ length: 12 }, (_, iteration) => {
    const successRate = Math.min(1, 0.1 + slope * iteration);
    return IterationMetricsSchema.parse({
      iteration,
      phase: iteration < 9 ? 'synthetic' : 'real',
      episodes: 64,
      successRate,
      meanReward: successRate,
      meanSteps: 20 - iteration,
      poolSize: 40 + 3 * iteration,
      generatedTasks: 3 * iteration,
      generatedShare: 0.25,
      bufferSize: 3000 + 500 * iteration,
      realTransitions: iteration < 9 ? 0 : (iteration - 8) * 200,
      syntheticTransitions: iteration * 1000,
      evaluations:
        iteration % 4 === 3
          ? (['greedy', 'sampled'] as const).map((mode) => {
              const rate = mode === 'greedy' ? successRate : successRate / 2;
              return {
                environment: 'real',
                mode,
                episodes: 134,
                successRate: rate,
                successInterval95: wilsonInterval95(Math.round(rate * 134), 134),
                meanReward: rate,
                meanSteps: 18,
              };
            })
          : [],
      ...(iteration % 4 === 3
        ? {
            syntheticToRealGap: {
              tasks: 16,
              syntheticSuccessRate: Math.min(1, successRate + 0.25),
              realSuccessRate: successRate,
              gap: Math.min(1, successRate + 0.25) - successRate,
            },
          }
        : {}),
      seconds: 3,
    });
  });
  return { name, metrics, config: { seed: 1, lambda: 0.3 } };
}

describe('renderReport', () => {
  it('escapes run names and shows the ablation table with intervals', () => {
    const html = renderReport([run('full <dreamgym>', 0.07), run('no replay', 0.04)]);
    expect(html).toContain('full &#60;dreamgym&#62;');
    expect(html).not.toContain('<dreamgym>');
    expect(html).toMatch(/<td>87\.0% <span class="ci">\[\d+\.\d%, \d+\.\d%\] n=134<\/span><\/td>/);
    expect(html).toMatch(/<td>43\.5% <span class="ci">/);
    expect(html).toContain(
      '<th>eval success (real, greedy)</th><th>eval success (real, sampled)</th>',
    );
    expect(html).toMatch(/<td>100\.0% vs 87\.0% <span class="ci">n=16<\/span><\/td>/);
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });

  it("says when a run's curves cover another's (same first iterations)", () => {
    const base = run('dreamgym', 0.07);
    const later = run('dreamgym-s2r', 0.07);
    later.metrics = [...later.metrics.slice(0, 9), ...run('other', 0.02).metrics.slice(9)];
    const html = renderReport([base, later, run('no replay', 0.04)]);
    expect(html).toContain(
      "The first 9 iterations of dreamgym-s2r equal those of dreamgym, so its curves hide dreamgym's there.",
    );
    expect(html).not.toMatch(/iterations of no replay/);
  });

  it('loads a run folder and says what to pass when metrics are missing', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-run-'));
    try {
      await expect(loadRun(directory)).rejects.toThrow(/no metrics\.jsonl.*--run-dir/);
      const source = run('r', 0.05);
      await writeFile(
        join(directory, 'metrics.jsonl'),
        source.metrics.map((m) => JSON.stringify(m)).join('\n'),
      );
      await writeFile(join(directory, 'config.json'), JSON.stringify({ seed: 3 }));
      const loaded = await loadRun(directory, 'r');
      expect(loaded.metrics).toHaveLength(12);
      expect(loaded.config).toEqual({ seed: 3 });
      await writeFile(join(directory, 'metrics.jsonl'), '{"iteration": "x"}\n');
      await expect(loadRun(directory)).rejects.toThrow(/metrics\.jsonl:1 \(field `iteration`\)/);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('the report in Debian Chromium', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dreamgym-report-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('renders five charts with drawn lines, the gap among them, and the table', async () => {
    const file = join(directory, 'report.html');
    await writeFile(file, renderReport([run('full', 0.07), run('no curriculum', 0.05)]));
    const browser = await chromium.launch({
      executablePath: process.env.DREAMGYM_CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(`file://${file}`);
      const charts = await page.locator('svg').evaluateAll((elements) =>
        elements.map((element) => {
          const box = element.getBoundingClientRect();
          return {
            width: box.width,
            height: box.height,
            lines: element.querySelectorAll('polyline').length,
          };
        }),
      );
      expect(charts).toHaveLength(5);
      for (const chart of charts) {
        expect(chart.width).toBeGreaterThan(400);
        expect(chart.height).toBeGreaterThan(200);
        expect(chart.lines).toBeGreaterThanOrEqual(2);
      }
      expect(await page.locator('tbody tr').count()).toBe(2);
      const screenshot = await page.screenshot({
        path: process.env.DREAMGYM_REPORT_SCREENSHOT ?? join(directory, 'report.png'),
        fullPage: true,
      });
      expect(screenshot.byteLength).toBeGreaterThan(20_000);
    } finally {
      await browser.close();
    }
  });
});
