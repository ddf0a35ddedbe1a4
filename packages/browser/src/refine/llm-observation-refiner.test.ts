import { OpenAICompatibleChatModel } from '@dreamgym/core/models';
import { type OpenAICompatibleServer, startOpenAICompatibleServer } from '@dreamgym/test-support';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../chromium.js';
import { BrowserEnvironment } from '../environment/browser-environment.js';
import type { StaticServer } from '../static-server.js';
import { pageTask, serveTestPages } from '../test-pages.test-support.js';
import { createLlmObservationRefiner, selectTreeLines } from './llm-observation-refiner.js';

let browser: Browser;
let pages: StaticServer;
let model: OpenAICompatibleServer;
/** What the model answers next, given the prompt it received. */
let answer: (prompt: string) => string;

beforeAll(async () => {
  [browser, pages, model] = await Promise.all([
    launchChromium(),
    serveTestPages(),
    startOpenAICompatibleServer({
      chat: (request) => answer(String(request.messages.at(-1)?.content ?? '')),
    }),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
  await model?.close();
});

const idIn = (prompt: string, line: string) =>
  Number(new RegExp(`\\[(\\d+)\\] ${line}`).exec(prompt)![1]);

describe('createLlmObservationRefiner', () => {
  it('keeps the elements the model picks, with their original ids, so actions still resolve', async () => {
    answer = (prompt) => {
      expect(prompt).toContain('Task: Enter the name "Ada" and place the order.');
      return JSON.stringify({
        summary: 'An order form; the name field and the order button matter.',
        relevantIds: [
          idIn(prompt, "textbox 'Full name'"),
          idIn(prompt, "button 'Place order'"),
          999,
        ],
      });
    };
    const chat = new OpenAICompatibleChatModel({ baseURL: model.url, model: 'judge' });
    const environment = await BrowserEnvironment.create({
      browser,
      settleMs: 0,
      refiner: createLlmObservationRefiner({ model: chat }),
    });
    try {
      let observation = await environment.reset(
        pageTask(pages, 'form.html', 'Enter the name "Ada" and place the order.'),
      );
      const lines = observation.text.split('\n');
      expect(lines.slice(0, 3)).toEqual([
        'Tab 0 (current): Order form',
        `URL: ${pages.url}form.html`,
        '',
      ]);
      expect(lines.slice(3)).toEqual([
        'Summary: An order form; the name field and the order button matter.',
        'form',
        "\t[2] textbox 'Full name' required: true",
        "\t[12] button 'Place order'",
      ]);
      expect(observation.meta?.refinement).toMatchObject({
        keptElements: 2,
        droppedIds: [999],
        keptLines: 3,
      });
      observation = (await environment.step('type [2] [Ada] [0]')).observation;
      observation = (await environment.step('click [12]')).observation;
      const page = await environment.currentPage();
      expect(await page.locator('#result').textContent()).toContain('Submitted: name=Ada');
    } finally {
      await environment.close();
    }
  });

  it('falls back to the full tree when the model keeps nothing real or fails', async () => {
    const environment = await BrowserEnvironment.create({
      browser,
      settleMs: 0,
      refiner: createLlmObservationRefiner({
        model: new OpenAICompatibleChatModel({ baseURL: model.url, model: 'judge', maxRetries: 0 }),
      }),
    });
    try {
      answer = () => JSON.stringify({ summary: 'nothing', relevantIds: [4242] });
      let observation = await environment.reset(pageTask(pages, 'form.html'));
      expect(observation.text).toContain("button 'Cancel' disabled: true");
      expect(observation.meta?.refinement).toEqual({
        fallback: 'the model kept no element of the page',
      });
      answer = () => 'this is not JSON at all';
      observation = await environment.reset(pageTask(pages, 'form.html'));
      expect(observation.text).toContain("button 'Cancel' disabled: true");
      expect(observation.meta?.refinement).toEqual({ fallback: expect.stringMatching(/.+/) });
    } finally {
      await environment.close();
    }
  });
});

describe('selectTreeLines', () => {
  it('keeps selected lines, their ancestors and the text right under them', () => {
    const tree = [
      '[1] list',
      '\t[2] listitem',
      "\t\t[3] link 'A'",
      "\t\tStaticText 'note A'",
      '\t[4] listitem',
      "\t\t[5] link 'B'",
      "StaticText 'footer'",
    ].join('\n');
    expect(selectTreeLines(tree, new Set([3]))).toBe(
      ['[1] list', '\t[2] listitem', "\t\t[3] link 'A'"].join('\n'),
    );
    expect(selectTreeLines(tree, new Set([2]))).toBe(
      ['[1] list', '\t[2] listitem', "\t\tStaticText 'note A'"].join('\n'),
    );
  });
});
