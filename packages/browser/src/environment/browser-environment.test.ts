import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, EnvironmentError, type Observation, type Task } from '@dreamgym/core';
import { describeEnvironmentConformance } from '@dreamgym/core/testing/vitest';
import { LlamaChatModel } from '@dreamgym/llama';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseObservationLines } from '../actions/web-candidate-actions.js';
import { estimateObservationTokens } from '../axtree/observation-budget.js';
import { launchChromium } from '../chromium.js';
import {
  type DocumentationPages,
  serveDocumentationPages,
} from '../documentation-pages.test-support.js';
import type { StaticServer } from '../static-server.js';
import { pageTask, serveTestPages } from '../test-pages.test-support.js';
import { BrowserEnvironment, defaultTaskStart, suggestTypedTexts } from './browser-environment.js';

let browser: Browser;
let server: StaticServer;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), serveTestPages()]);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The id of the first line with `role` and `name` in the observation. */
function idOf(observation: Observation, role: string, name: string): number {
  const line = parseObservationLines(observation.text).find(
    (candidate) => candidate.role === role && candidate.name === name && candidate.id !== undefined,
  );
  if (!line) throw new Error(`no ${role} '${name}' in:\n${observation.text}`);
  return line.id!;
}

function lineOf(observation: Observation, role: string, name: string) {
  return parseObservationLines(observation.text).find(
    (line) => line.role === role && line.name === name,
  );
}

async function withEnvironment(
  body: (environment: BrowserEnvironment) => Promise<void>,
  options: Parameters<typeof BrowserEnvironment.create>[0] = {},
): Promise<void> {
  const environment = await BrowserEnvironment.create({ browser, settleMs: 50, ...options });
  try {
    await body(environment);
  } finally {
    await environment.close();
  }
}

describe('BrowserEnvironment on pages written for the tests', () => {
  it('fills a form with type, click (option, radio, checkbox, button), hover and press', () =>
    withEnvironment(async (environment) => {
      let observation = await environment.reset(
        pageTask(server, 'form.html', 'Order as "Ada Lovelace".'),
      );
      expect(observation.text).toMatch(
        /^Tab 0 \(current\): Order form\nURL: http:\/\/127\.0\.0\.1:\d+\/form\.html\n\n/,
      );
      expect(observation.meta?.typeSuggestions).toEqual(['Ada Lovelace']);
      expect(observation.actions).toContain(
        `type [${idOf(observation, 'textbox', 'Full name')}] [Ada Lovelace] [1]`,
      );
      const step = async (action: string) => {
        const result = await environment.step(action);
        expect(result.info.actionError, action).toBeUndefined();
        expect(result.done).toBe(false);
        observation = result.observation;
        return result;
      };
      await step(`type [${idOf(observation, 'textbox', 'Full name')}] [Ada Lovelace] [0]`);
      expect(lineOf(observation, 'textbox', 'Full name')!.properties.value).toBe('Ada Lovelace');
      await step(`type [${idOf(observation, 'textbox', 'Notes')}] [Leave at the door] [0]`);
      await step(`click [${idOf(observation, 'option', 'Large')}]`);
      expect(lineOf(observation, 'combobox', 'Size')!.properties.value).toBe('Large');
      await step(`click [${idOf(observation, 'radio', 'Express')}]`);
      expect(lineOf(observation, 'radio', 'Express')!.properties.checked).toBe('true');
      expect(lineOf(observation, 'radio', 'Standard')!.properties.checked).toBe('false');
      await step(`click [${idOf(observation, 'checkbox', 'Gift wrap')}]`);
      expect(lineOf(observation, 'checkbox', 'Gift wrap')!.properties.checked).toBe('true');
      await step('press [ctrl+b]');
      expect(observation.text).toContain("StaticText 'Pressed Control+b'");
      await step(`click [${idOf(observation, 'button', 'Place order')}]`);
      expect(
        lineOf(
          observation,
          'status',
          'Submitted: name=Ada Lovelace, size=Large, delivery=express, gift=yes, notes=Leave at the door',
        ),
      ).toBeDefined();
      // A disabled button cannot be clicked: the action fails, the episode goes on.
      const cancel = await environment.step(`click [${idOf(observation, 'button', 'Cancel')}]`);
      expect(cancel.info.actionError).toMatch(/click \[\d+\] failed: the element is disabled/);
      const final = await environment.step('stop [ordered]');
      expect(final.done).toBe(true);
      expect(final.truncated).toBe(false);
      await expect(environment.step('scroll [down]')).rejects.toThrow(/after the episode ended/);
    }));

  it('hovers an element, and presses Enter after typing', () =>
    withEnvironment(async (environment) => {
      const observation = await environment.reset(pageTask(server, 'form.html'));
      expect(observation.text).not.toContain('Ships in 2 days');
      const hovered = await environment.step(
        `hover [${idOf(observation, 'link', 'Shipping info')}]`,
      );
      expect(hovered.info.actionError).toBeUndefined();
      expect(hovered.observation.text).toContain("StaticText 'Ships in 2 days'");
      const enter = await environment.step(
        `type [${idOf(hovered.observation, 'textbox', 'Full name')}] [Grace] [1]`,
      );
      // Enter in a text field submits the form.
      expect(enter.observation.text).toContain("status 'Submitted: name=Grace");
    }));

  it('acts inside same-origin and cross-origin iframes', () =>
    withEnvironment(async (environment) => {
      let observation = await environment.reset(pageTask(server, 'frames.html'));
      expect(observation.text).toContain(
        "Iframe 'Cross-origin frame'\n\t[4] button 'Remote button'",
      );
      observation = (
        await environment.step(`click [${idOf(observation, 'button', 'Inner button')}]`)
      ).observation;
      expect(observation.text).toContain("StaticText 'Inner clicked'");
      observation = (
        await environment.step(`click [${idOf(observation, 'button', 'Remote button')}]`)
      ).observation;
      expect(observation.text).toContain("StaticText 'Remote clicked'");
      const fields = parseObservationLines(observation.text).filter(
        (line) => line.role === 'textbox',
      );
      expect(fields).toHaveLength(2);
      observation = (await environment.step(`type [${fields[1]!.id}] [across sites] [0]`))
        .observation;
      expect(
        parseObservationLines(observation.text).filter((line) => line.role === 'textbox')[1]!
          .properties.value,
      ).toBe('across sites');
    }));

  it('acts inside nested open shadow roots', () =>
    withEnvironment(async (environment) => {
      let observation = await environment.reset(pageTask(server, 'shadow.html'));
      observation = (
        await environment.step(
          `type [${idOf(observation, 'textbox', 'Search products')}] [lamp] [0]`,
        )
      ).observation;
      observation = (await environment.step(`click [${idOf(observation, 'button', 'Go')}]`))
        .observation;
      expect(observation.text).toContain("StaticText 'Searched: lamp'");
    }));

  it('keeps element ids stable while the page changes around them', () =>
    withEnvironment(async (environment) => {
      let observation = await environment.reset(pageTask(server, 'dynamic.html'));
      const taskA = idOf(observation, 'button', 'Task A');
      const add = idOf(observation, 'button', 'Add task');
      for (let round = 1; round <= 2; round += 1) {
        observation = (await environment.step(`click [${add}]`)).observation;
        expect(idOf(observation, 'button', 'Task A')).toBe(taskA);
        expect(idOf(observation, 'button', 'Add task')).toBe(add);
        expect(idOf(observation, 'button', `New task ${round}`)).toBeGreaterThan(taskA);
      }
      expect(observation.text).toContain("StaticText '4 tasks'");
      // The old id still acts on the same element after the changes.
      const result = await environment.step(`click [${taskA}]`);
      expect(result.info.actionError).toBeUndefined();
    }));

  it('hides hidden elements; shows off-screen ones unless viewportOnly; scrolls', async () => {
    await withEnvironment(async (environment) => {
      const observation = await environment.reset(pageTask(server, 'hidden.html'));
      expect(observation.text).toContain("button 'Far below button'");
      expect(observation.text).not.toMatch(
        /Display none|Visibility hidden|Hidden attribute|Aria hidden/,
      );
    });
    await withEnvironment(
      async (environment) => {
        let observation = await environment.reset(pageTask(server, 'links.html'));
        expect(observation.text).not.toContain('Bottom of links');
        const page = await environment.currentPage();
        for (
          let scrolls = 0;
          scrolls < 8 && !observation.text.includes('Bottom of links');
          scrolls += 1
        ) {
          observation = (await environment.step('scroll [down]')).observation;
        }
        expect(observation.text).toContain("StaticText 'Bottom of links'");
        expect(observation.text).not.toContain('Go to page two');
        const scrolled = Number(await page.evaluate('window.scrollY'));
        expect(scrolled).toBeGreaterThan(2000);
        observation = (await environment.step('scroll [up]')).observation;
        expect(Number(await page.evaluate('window.scrollY'))).toBeLessThan(scrolled);
      },
      { viewportOnly: true },
    );
  });

  it('acts at once, by script, on elements a pointer cannot reach, and says so', () =>
    // A long action timeout: had an action waited for it, the episode would take minutes.
    withEnvironment(
      async (environment) => {
        const observation = await environment.reset(pageTask(server, 'stalls.html'));
        const page = await environment.currentPage();
        const started = performance.now();
        const act = async (action: string) => {
          const result = await environment.step(action);
          expect(result.info.actionError, action).toBeUndefined();
          expect(result.observation.text).toContain('was done by script');
          return result;
        };
        await act(`click [${idOf(observation, 'link', 'Skip to content')}]`);
        expect(await page.title()).toBe('skipped to content');
        await act(`click [${idOf(observation, 'button', 'Far left button')}]`);
        expect(await page.title()).toBe('far-left button pressed');
        await act(`hover [${idOf(observation, 'button', 'Tiny')}]`);
        expect(await page.title()).toBe('hovered the tiny one');
        // A link around an image that did not load: followed at once (by a pointer where
        // Chromium gives the broken image a box, by script where it does not).
        const followed = await environment.step(
          `click [${idOf(observation, 'link', 'Next page')}]`,
        );
        expect(followed.info.actionError).toBeUndefined();
        expect(followed.observation.text).toMatch(/URL: http:\/\/127\.0\.0\.1:\d+\/page-two\.html/);
        expect(performance.now() - started).toBeLessThan(30_000);
      },
      { actionTimeoutMs: 60_000 },
    ));

  it('prints link paths whole, eliding only long queries; cuts observations at their token budget', async () => {
    await withEnvironment(async (environment) => {
      const observation = await environment.reset(pageTask(server, 'stalls.html'));
      expect(lineOf(observation, 'link', 'Long path')!.properties.url).toBe(
        '/page-three.html/this/path/is/long/on/purpose/so/that/it/runs/past/eighty/characters/in/the/observation',
      );
      expect(lineOf(observation, 'link', 'Tracked link')!.properties.url).toBe(
        '/page-three.html?…',
      );
      expect(observation.text).not.toContain('observation is cut');
    });
    await withEnvironment(
      async (environment) => {
        const observation = await environment.reset(pageTask(server, 'links.html'));
        const last = observation.text.split('\n').at(-1)!;
        expect(last).toMatch(
          /^\[The observation is cut at its budget of 120 tokens: [1-9]\d* of \d+ lines are shown; observe with viewportOnly/,
        );
        expect(estimateObservationTokens(observation.text)).toBeLessThanOrEqual(120);
      },
      { maxObservationTokens: 120 },
    );
  });

  it('navigates: links, goto, go_back, go_forward, tabs and pages the site opens', () =>
    withEnvironment(async (environment) => {
      let observation = await environment.reset(pageTask(server, 'links.html'));
      observation = (
        await environment.step(`click [${idOf(observation, 'link', 'Go to page two')}]`)
      ).observation;
      expect(observation.meta?.url).toBe(`${server.url}page-two.html`);
      observation = (await environment.step('go_back')).observation;
      expect(observation.meta?.url).toBe(`${server.url}links.html`);
      observation = (await environment.step('go_forward')).observation;
      expect(observation.meta?.title).toBe('Page two');
      observation = (await environment.step(`goto [${server.url}form.html]`)).observation;
      expect(observation.text).toContain("heading 'Order form'");
      // A relative URL resolves against the current page.
      observation = (await environment.step('goto [links.html]')).observation;
      expect(observation.meta?.title).toBe('Links home');
      // A target=_blank link opens a tab that becomes current.
      observation = (
        await environment.step(
          `click [${idOf(observation, 'link', 'Open page three in a new tab')}]`,
        )
      ).observation;
      expect(observation.text).toMatch(/^Tab 0: Links home \| Tab 1 \(current\): Page three\n/);
      observation = (await environment.step('new_tab')).observation;
      expect(observation.text).toMatch(/\| Tab 2 \(current\): about:blank\nURL: about:blank/);
      observation = (await environment.step('tab_focus [0]')).observation;
      expect(observation.text).toMatch(/^Tab 0 \(current\): Links home/);
      const missing = await environment.step('tab_focus [7]');
      expect(missing.info.actionError).toMatch(/there is no tab 7/);
      observation = (await environment.step('close_tab')).observation;
      expect(observation.text).toMatch(/^Tab 0: Page three \| Tab 1 \(current\): about:blank\n/);
      const back = await environment.step('go_back');
      expect(back.observation.text).toMatch(/^go_back: there is no previous page/);
      const bad = await environment.step('goto [http://127.0.0.1:1/nothing]');
      expect(bad.info.actionError).toMatch(/goto \[http:\/\/127\.0\.0\.1:1\/nothing\] failed/);
    }));

  it('answers actions outside the grammar and unknown ids in the observation', () =>
    withEnvironment(async (environment) => {
      await environment.reset(pageTask(server, 'form.html'));
      const invalid = await environment.step('press the big button');
      expect(invalid.info.invalidAction).toBe(true);
      expect(invalid.observation.text).toMatch(
        /^Invalid action: "press the big button" is not a web action/,
      );
      const unknown = await environment.step('click [404]');
      expect(unknown.info.invalidAction).toBeUndefined();
      expect(unknown.info.actionError).toMatch(/no element \[404\]/);
      expect(unknown.done).toBe(false);
    }));

  it('ends an episode at the step budget with truncated', () =>
    withEnvironment(
      async (environment) => {
        await environment.reset(pageTask(server, 'form.html'));
        expect((await environment.step('scroll [down]')).done).toBe(false);
        const last = await environment.step('scroll [up]');
        expect(last).toMatchObject({ done: true, truncated: true });
      },
      { maxSteps: 2 },
    ));

  it('scores steps with the hooks and starts tasks where they say', async () => {
    const evaluated: string[] = [];
    await withEnvironment(
      async (environment) => {
        const observation = await environment.reset({
          id: 'hooked',
          domain: 'web-test',
          instruction: 'Click Task B.',
          origin: 'seed',
          meta: {},
        });
        expect(observation.meta?.instruction).toBe('Press "Task B"');
        expect(observation.meta?.typeSuggestions).toEqual(['Task B']);
        const result = await environment.step(`click [${idOf(observation, 'button', 'Task B')}]`);
        expect(result).toMatchObject({
          reward: 1,
          done: true,
          truncated: false,
          info: { success: true, clicked: 'Task B' },
        });
        expect(evaluated).toEqual(['click:1:false']);
      },
      {
        hooks: {
          start: () => ({ urls: [`${server.url}dynamic.html`] }),
          onReset: async () => ({ instruction: 'Press "Task B"' }),
          evaluate: async ({ action, stepCount, lastStep, page }) => {
            evaluated.push(`${action.type}:${stepCount}:${lastStep}`);
            const focused = String(
              await page.evaluate("document.activeElement?.textContent ?? ''"),
            );
            return {
              reward: focused === 'Task B' ? 1 : 0,
              done: true,
              success: focused === 'Task B',
              info: { clicked: focused },
            };
          },
        },
      },
    );
  });

  it('opens several start URLs as tabs, the first one current', () =>
    withEnvironment(async (environment) => {
      const observation = await environment.reset(
        pageTask(server, ['page-two.html', 'page-three.html']),
      );
      expect(observation.text).toMatch(/^Tab 0 \(current\): Page two \| Tab 1: Page three\n/);
    }));

  it('loads a saved login (storage state) into new episodes, and takes screenshots', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-storage-'));
    const statePath = join(directory, 'state.json');
    try {
      await withEnvironment(async (environment) => {
        let observation = await environment.reset(pageTask(server, 'login.html'));
        observation = (
          await environment.step(`type [${idOf(observation, 'textbox', 'Username')}] [ada] [0]`)
        ).observation;
        observation = (
          await environment.step(`type [${idOf(observation, 'textbox', 'Password')}] [secret] [1]`)
        ).observation;
        expect(observation.text).toContain("heading 'Signed in as ada'");
        await environment.saveStorageState(statePath);
        const png = await environment.screenshot();
        expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
        // A new episode starts logged out: contexts do not share cookies.
        const fresh = await environment.reset(pageTask(server, 'account.html'));
        expect(fresh.text).toContain("heading 'Not signed in'");
      });
      expect(JSON.parse(await readFile(statePath, 'utf8')).cookies[0]).toMatchObject({
        name: 'session',
        value: 'ada',
      });
      await withEnvironment(
        async (environment) => {
          const observation = await environment.reset(pageTask(server, 'account.html'));
          expect(observation.text).toContain("heading 'Signed in as ada'");
        },
        { storageState: statePath },
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("with reuseTab, runs single-page episodes in the last one's tab and context, and no others", () =>
    withEnvironment(
      async (environment) => {
        let observation = await environment.reset(pageTask(server, 'login.html'));
        const firstPage = await environment.currentPage();
        observation = (
          await environment.step(`type [${idOf(observation, 'textbox', 'Username')}] [ada] [0]`)
        ).observation;
        await environment.step(`type [${idOf(observation, 'textbox', 'Password')}] [secret] [1]`);
        // The next episode navigates the same tab: the cookie the login set is still there.
        const observerOf = () =>
          (environment as unknown as { episode: { observer: unknown } }).episode.observer;
        const firstObserver = observerOf();
        const kept = await environment.reset(pageTask(server, 'account.html'));
        expect(await environment.currentPage()).toBe(firstPage);
        // The kept tab keeps its observer (and so its CDP session: a new one per episode piled up).
        expect(observerOf()).toBe(firstObserver);
        expect(kept.text).toMatch(/\[1\]/);
        expect(kept.text).toContain("heading 'Signed in as ada'");
        // Its step budget starts again.
        const steps = [
          await environment.step('scroll [down]'),
          await environment.step('scroll [up]'),
        ];
        expect(steps.map((result) => result.done)).toEqual([false, false]);
        expect((await environment.step('scroll [down]')).truncated).toBe(true);
        // A start on two pages gets a fresh context (logged out), as does one after it.
        const two = await environment.reset(pageTask(server, ['account.html', 'page-two.html']));
        expect(two.text).toContain("heading 'Not signed in'");
        expect(firstPage.isClosed()).toBe(true);
        const third = await environment.reset(pageTask(server, 'account.html'));
        expect(third.text).toContain("heading 'Not signed in'");
      },
      { reuseTab: true, maxSteps: 3 },
    ));

  it('reports a task without a start page, and bad options, with the field', async () => {
    expect(() =>
      defaultTaskStart({ id: 't', domain: 'd', instruction: 'i', origin: 'seed', meta: {} }),
    ).toThrow(/task\.meta\.startUrl/);
    await expect(BrowserEnvironment.create({ browser, maxSteps: 0 })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      field: 'maxSteps',
    });
    expect(ConfigError).toBeDefined();
    expect(suggestTypedTexts('Type "red shoes" and “blue hats”, not it\'s')).toEqual([
      'red shoes',
      'blue hats',
    ]);
  });
});

describe('BrowserEnvironment with its own browser', () => {
  it('survives a browser crash: the episode fails with EnvironmentError, reset starts a new browser', async () => {
    const environment = await BrowserEnvironment.create({ settleMs: 0 });
    try {
      await environment.reset(pageTask(server, 'form.html'));
      // Kill the browser under the running episode.
      await (await environment.currentPage()).context().browser()!.close();
      const error = await environment.step('scroll [down]').catch((thrown: unknown) => thrown);
      expect(EnvironmentError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/is lost: the browser closed or crashed/);
      const observation = await environment.reset(pageTask(server, 'form.html'));
      expect(observation.text).toContain("heading 'Order form'");
    } finally {
      await environment.close();
    }
    await expect(environment.reset(pageTask(server, 'form.html'))).rejects.toThrow(/after close/);
  });

  it('fails with a clear error when Chromium is missing', async () => {
    await expect(
      BrowserEnvironment.create({ chromium: { executablePath: '/nonexistent/chromium' } }),
    ).rejects.toThrow(
      /Chromium was not found at \/nonexistent\/chromium.*npx @dreamgym\/cli doctor --only chromium/,
    );
  });
});

// The conformance suite registers its checks before the test server starts: the task's
// start page is resolved when an episode starts.
describeEnvironmentConformance(
  'browser environment on a test page',
  {
    createEnvironment: () =>
      BrowserEnvironment.create({
        browser,
        settleMs: 0,
        hooks: { start: () => ({ urls: [`${server.url}dynamic.html`] }) },
      }),
    tasks: [
      { id: 'dynamic', domain: 'web-test', instruction: 'Add a task.', origin: 'seed', meta: {} },
    ],
    solution: ['click [2]', 'stop [done]'],
  },
  { timeout: 60_000 },
);

describe('the observation budget on a real long page, in the tokens of the model that reads it', () => {
  let pages: DocumentationPages;
  let model: LlamaChatModel;
  beforeAll(async () => {
    [pages, model] = await Promise.all([
      serveDocumentationPages(['typing']),
      LlamaChatModel.load({ model: 'local', contextSize: 256, concurrency: 1 }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await pages?.close();
    await model?.dispose();
  });
  const typingPage = (): Task => ({
    id: 'docs:typing',
    domain: 'web-test',
    instruction: 'Find what TypeVar does.',
    origin: 'seed',
    meta: { startUrl: `${pages.server.url}typing.html` },
  });

  it("holds every observation the model reads to maxObservationTokens of the model's tokenizer", () =>
    withEnvironment(
      async (environment) => {
        const observation = await environment.reset(typingPage());
        expect(model.countTokens(observation.text)).toBeLessThanOrEqual(1_500);
        expect(model.countTokens(observation.text)).toBeGreaterThan(1_400);
        expect(observation.text.split('\n').at(-1)).toMatch(
          /^\[The observation is cut at its budget of 1500 tokens: \d+ of \d+ lines are shown;/,
        );
        // An action's error on top is counted in the same budget.
        const failed = await environment.step('click [99999]');
        expect(failed.observation.text).toMatch(/^Action failed: /);
        expect(model.countTokens(failed.observation.text)).toBeLessThanOrEqual(1_500);
      },
      { maxObservationTokens: 1_500, countTokens: model.countTokens },
    ));

  it('holds it without a tokenizer too: the default estimate never under-counts the page', async () => {
    let whole = '';
    await withEnvironment(
      async (environment) => {
        whole = (await environment.reset(typingPage())).text;
      },
      { maxObservationTokens: null },
    );
    expect(model.countTokens(whole)).toBeGreaterThan(20_000);
    await withEnvironment(async (environment) => {
      const observation = await environment.reset(typingPage());
      expect(observation.text).toContain('The observation is cut at its budget of 8000 tokens');
      const real = model.countTokens(observation.text);
      expect(real).toBeLessThanOrEqual(8_000);
      expect(real).toBeGreaterThan(4_000);
    });
  });
});
