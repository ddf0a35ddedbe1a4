/**
 * The observation budget against SmolLM2-135M's own tokenizer (the embedded model, from the
 * model cache the set-up step fills) on real documentation pages (pydoc's pages of Python's
 * standard library).
 */
import { LlamaChatModel } from '@dreamgym/llama';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../chromium.js';
import {
  DOCUMENTED_MODULES,
  type DocumentationPages,
  serveDocumentationPages,
} from '../documentation-pages.test-support.js';
import { estimateObservationTokens, fitLinesToBudget } from './observation-budget.js';
import { PageObserver } from './page-observer.js';

let browser: Browser;
let pages: DocumentationPages;
let model: LlamaChatModel;
/** The whole observation text of each page, no budget. */
const texts = new Map<string, string>();

beforeAll(async () => {
  [browser, pages, model] = await Promise.all([
    launchChromium(),
    serveDocumentationPages(),
    LlamaChatModel.load({ model: 'local', contextSize: 256, concurrency: 1 }),
  ]);
  const context = await browser.newContext();
  try {
    for (const module of DOCUMENTED_MODULES) {
      const page = await context.newPage();
      await page.goto(`${pages.server.url}${module}.html`, { waitUntil: 'load' });
      texts.set(module, (await new PageObserver().observe(page)).text);
    }
  } finally {
    await context.close();
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await pages?.close();
  await model?.dispose();
});

describe('estimateObservationTokens on real pages', () => {
  it('never counts fewer tokens than SmolLM2 does: whole pages, every 10 lines, every long line', () => {
    let worstPage = 0;
    let worstPiece = 0;
    let quarterShort = 0;
    for (const [module, text] of texts) {
      const real = model.countTokens(text);
      expect(real, module).toBeGreaterThan(5_000);
      worstPage = Math.max(worstPage, real / estimateObservationTokens(text));
      // characters / 4, the estimate this replaces, counts too few on these pages.
      quarterShort = Math.max(quarterShort, real / Math.ceil(text.length / 4));
      const lines = text.split('\n');
      const pieces = [
        ...lines.filter((line) => line.length > 40),
        ...Array.from({ length: Math.ceil(lines.length / 10) }, (_, index) =>
          lines.slice(index * 10, index * 10 + 10).join('\n'),
        ),
      ];
      for (const piece of pieces) {
        const ratio = model.countTokens(piece) / estimateObservationTokens(piece);
        if (ratio > worstPiece) worstPiece = ratio;
        expect(ratio, `${module}: ${JSON.stringify(piece.slice(0, 200))}`).toBeLessThanOrEqual(1);
      }
    }
    expect(worstPage).toBeLessThan(0.9);
    expect(worstPiece).toBeLessThanOrEqual(1);
    expect(quarterShort).toBeGreaterThan(1.1);
  });

  it('counts code names, digits and other scripts conservatively', () => {
    for (const text of [
      "[3693] link 'DerefPure' url: /std/ops/trait.DerefPure.html",
      "StaticText '[224, 164, 168, 224, 164, 174, 224, 164, 184]'",
      "StaticText 'Größe: 12 €, 東京都の天気 — ☀️'",
      "\t\t\t[12] button 'Submit'  disabled: true",
    ]) {
      expect(estimateObservationTokens(text), text).toBeGreaterThanOrEqual(model.countTokens(text));
    }
  });
});

describe('fitLinesToBudget', () => {
  it("keeps the most lines whose whole text fits the budget in the reader's tokens", () => {
    const text = texts.get('typing')!;
    const [head, ...lines] = text.split(/(?<=\n\n)/);
    const treeLines = lines.join('').split('\n');
    for (const maxTokens of [300, 2_000, 8_000]) {
      const fitted = fitLinesToBudget(
        head!,
        treeLines,
        { maxTokens, countTokens: model.countTokens },
        'scroll',
      );
      expect(model.countTokens(fitted.text)).toBe(fitted.tokens);
      expect(fitted.tokens).toBeLessThanOrEqual(maxTokens);
      const shown = fitted.cut!.shownLines;
      expect(fitted.text.startsWith(`${head}${treeLines.slice(0, shown).join('\n')}\n`)).toBe(true);
      expect(fitted.text.split('\n').at(-1)).toBe(
        `[The observation is cut at its budget of ${maxTokens} tokens: ${shown} of ${treeLines.length} lines are shown; scroll.]`,
      );
      // One more line would not fit: the budget is used, not wasted.
      const oneMore = [
        ...treeLines.slice(0, shown + 1),
        `[The observation is cut at its budget of ${maxTokens} tokens: ${shown + 1} of ${treeLines.length} lines are shown; scroll.]`,
      ];
      expect(model.countTokens(`${head}${oneMore.join('\n')}`)).toBeGreaterThan(maxTokens);
    }
  });

  it('returns a text that fits as it is; cuts at a character when not even the head fits', () => {
    const whole = fitLinesToBudget('Tab 0\n\n', ['a', 'b'], { maxTokens: 100 }, 'scroll');
    // `Tab` 1, ` ` before a digit 1, `0` 1, three newlines 3, `a` 1, `b` 1.
    expect(whole).toEqual({ text: 'Tab 0\n\na\nb', lines: ['a', 'b'], tokens: 8 });
    const tiny = fitLinesToBudget(
      'Tab 0 (current): A page with a long title\nURL: http://127.0.0.1/\n\n',
      ['[1] link'],
      { maxTokens: 5, countTokens: model.countTokens },
      'scroll',
    );
    expect(tiny.tokens).toBeLessThanOrEqual(5);
    expect(model.countTokens(tiny.text)).toBeLessThanOrEqual(5);
    expect(tiny.text.length).toBeGreaterThan(0);
    expect(tiny.cut).toEqual({ shownLines: 0, totalLines: 1 });
  });
});
