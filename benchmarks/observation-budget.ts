/**
 * The observation budget against the tokenizer of a real model (SmolLM2-135M-Instruct, the
 * embedded model) on real documentation pages: pydoc's pages of Python's standard library
 * (written by the project virtualenv's Python), and any other HTML pages given with `--html`
 * (e.g. the Rust documentation a rustup toolchain installs under
 * `~/.rustup/toolchains/<toolchain>/share/doc/rust/html/`).
 *
 * Per page, the whole observation (no budget) of `@dreamgym/browser`:
 * - SmolLM2 tokens, `estimateObservationTokens`, and `characters / 4`, with the most real tokens
 *   per counted token on the whole page, on its first lines (every 100 lines), on any 10
 *   lines and on any line of over 40 characters (an estimate that never under-counts stays at
 *   or below 1);
 * - the page observed with `maxObservationTokens: 8000` by the estimate and by SmolLM2's
 *   tokenizer (`countTokens`): SmolLM2 tokens of what the model reads, and the milliseconds the
 *   observation took.
 *
 * Run: `npm run observation-budget -w dreamgym-benchmarks [-- --html FILE ...]` after
 * `npm run build` (needs the project virtualenv and the embedded model: `bash scripts/setup.sh`).
 * Writes benchmarks/results/observation-budget.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  defaultMiniwobPython,
  estimateObservationTokens,
  launchChromium,
  PageObserver,
  serveDirectory,
} from '@dreamgym/browser';
import { LlamaChatModel } from '@dreamgym/llama';

const MODULES = [
  'argparse',
  'asyncio.events',
  'collections',
  'email.message',
  'http.client',
  'json',
  'logging',
  'pathlib',
  'subprocess',
  'tarfile',
  'typing',
  'unittest.case',
];
const BUDGET = 8_000;

const { values } = parseArgs({ options: { html: { type: 'string', multiple: true } } });
const pydoc = mkdtempSync(join(tmpdir(), 'dreamgym-pydoc-'));
execFileSync(defaultMiniwobPython(), ['-m', 'pydoc', '-w', ...MODULES], { cwd: pydoc });
const pages = [
  ...MODULES.map((module) => join(pydoc, `${module}.html`)),
  ...(values.html ?? []).map((file) => resolve(file)),
];

const model = await LlamaChatModel.load({ model: 'local', contextSize: 256, concurrency: 1 });
const real = model.countTokens;
const browser = await launchChromium();
const quarter = (text: string) => Math.ceil(text.length / 4);
/** The most real tokens per counted token over `pieces`. */
const worst = (pieces: readonly string[], count: (text: string) => number) =>
  Math.max(...pieces.map((piece) => real(piece) / Math.max(count(piece), 1)));

const rows: Record<string, unknown>[] = [];
try {
  for (const file of pages) {
    const server = await serveDirectory(dirname(file));
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}${basename(file)}`, { waitUntil: 'load', timeout: 60_000 });
      const text = (await new PageObserver().observe(page)).text;
      const lines = text.split('\n');
      const firstLines = Array.from({ length: Math.ceil(lines.length / 100) }, (_, index) =>
        lines.slice(0, (index + 1) * 100).join('\n'),
      );
      const pieces = [
        ...lines.filter((line) => line.length > 40),
        ...Array.from({ length: Math.ceil(lines.length / 10) }, (_, index) =>
          lines.slice(index * 10, index * 10 + 10).join('\n'),
        ),
      ];
      const cut = async (countTokens?: (text: string) => number) => {
        const started = performance.now();
        const observed = await new PageObserver({
          maxTokens: BUDGET,
          ...(countTokens ? { countTokens } : {}),
        }).observe(page);
        return {
          realTokens: real(observed.text),
          cut: observed.cut !== undefined,
          ms: Math.round(performance.now() - started),
        };
      };
      const row = {
        page: file.startsWith(pydoc) ? `pydoc ${basename(file, '.html')}` : file,
        characters: text.length,
        realTokens: real(text),
        estimate: estimateObservationTokens(text),
        quarter: quarter(text),
        realPerEstimated: {
          page: real(text) / estimateObservationTokens(text),
          firstLines: worst(firstLines, estimateObservationTokens),
          pieces: worst(pieces, estimateObservationTokens),
        },
        realPerQuarter: {
          page: real(text) / quarter(text),
          firstLines: worst(firstLines, quarter),
        },
        budget8000: { estimate: await cut(), tokenizer: await cut(real) },
      };
      rows.push(row);
      console.log(
        `${row.page.padEnd(60)} ${String(row.realTokens).padStart(7)} tokens  real/estimate ${row.realPerEstimated.page.toFixed(3)} (first lines ${row.realPerEstimated.firstLines.toFixed(3)}, pieces ${row.realPerEstimated.pieces.toFixed(3)})  real/(chars/4) ${row.realPerQuarter.page.toFixed(3)}  at 8000: ${row.budget8000.estimate.realTokens} / ${row.budget8000.tokenizer.realTokens} (${row.budget8000.tokenizer.ms} ms)`,
      );
    } finally {
      await context.close();
      await server.close();
    }
  }
} finally {
  await browser.close();
  await model.dispose();
  rmSync(pydoc, { recursive: true, force: true });
}

const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'observation-budget.json');
await writeFile(
  out,
  `${JSON.stringify({ tokenizer: 'SmolLM2-135M-Instruct (node-llama-cpp)', budget: BUDGET, pages: rows }, null, 2)}\n`,
);
console.log(`wrote ${out}`);
