/**
 * The browser {@link Environment}: Chromium driven by Playwright, one browser context per
 * episode (fresh cookies, or a saved login's storage state), observations from the AX-tree
 * mapper, actions in the WebArena grammar, rewards from the domain's hooks.
 */
import {
  ActionParseError,
  ConfigError,
  type Environment,
  EnvironmentError,
  EnvironmentStateError,
  type Observation,
  parseOptions,
  type StepResult,
  type Task,
} from '@dreamgym/core';
import type { TokenCounter } from '@dreamgym/core/experience';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { executeWebAction } from '../actions/execute-web-action.js';
import { formatWebAction, parseWebAction, type WebAction } from '../actions/web-action-grammar.js';
import { webCandidateActions } from '../actions/web-candidate-actions.js';
import { fitLinesToBudget } from '../axtree/observation-budget.js';
import {
  type ObserveOptions,
  type PageObservation,
  PageObserver,
} from '../axtree/page-observer.js';
import { launchChromium } from '../chromium.js';
import { WebActionError } from '../errors.js';
import { BrowserTabs } from './browser-tabs.js';
import {
  type BrowserEnvironmentOptions,
  BrowserEnvironmentOptionsSchema,
  type BrowserEnvironmentSetup,
  type BrowserEvaluation,
  type BrowserTaskHooks,
  type BrowserTaskStart,
  type ObservationRefiner,
} from './options.js';

/**
 * Texts a task's instruction asks to enter: its quoted phrases (`"Kiersten"`, `'red'`,
 * `“blue shoes”`). The candidate actions propose typing them.
 */
export function suggestTypedTexts(instruction: string): string[] {
  const found = new Set<string>();
  for (const match of instruction.matchAll(
    /"([^"]{1,200})"|“([^”]{1,200})”|(?<![\w])'([^']{1,200})'(?![\w])/g,
  )) {
    const text = (match[1] ?? match[2] ?? match[3] ?? '').trim();
    if (text !== '') found.add(text);
  }
  return [...found];
}

/**
 * Where an episode starts by default: `task.meta.startUrl` (one URL, several joined by
 * ` |AND| ` as in WebArena configs, or an array) and `task.meta.storageState`.
 *
 * @throws ConfigError when the task names no start URL.
 */
export function defaultTaskStart(task: Task): BrowserTaskStart {
  const raw = task.meta.startUrl;
  const urls = (Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(' |AND| ') : [])
    .map((url) => String(url).trim())
    .filter((url) => url !== '');
  if (urls.length === 0) {
    throw new ConfigError(
      `Task ${task.id} has no start page: set task.meta.startUrl (a URL, or several joined by " |AND| "), or give the environment a hooks.start(task).`,
      { field: 'task.meta.startUrl' },
    );
  }
  const storageState = task.meta.storageState;
  return {
    urls,
    ...(typeof storageState === 'string' && storageState !== '' ? { storageState } : {}),
  };
}

interface Episode {
  task: Task;
  context: BrowserContext;
  tabs: BrowserTabs;
  observer: PageObserver;
  /** The last observation of the current tab: its elements resolve action ids. */
  last: PageObservation;
  lastPage: Page;
  instruction: string | undefined;
  stepCount: number;
  done: boolean;
  /** Set when the browser or the page crashed under the episode. */
  crashed: string | undefined;
}

/**
 * A real browser as an {@link Environment}. One instance runs one episode at a time; every
 * `reset` opens a fresh browser context (so no cookies leak between episodes) and the
 * previous one is closed, unless `reuseTab` keeps it for single-page starts.
 *
 * - `reset(task)` opens the task's start pages (`hooks.start`, default `task.meta.startUrl`)
 *   and returns the first observation: tab header, URL and the AX tree with element ids.
 * - `step(action)` parses the action (an action outside the grammar is answered with
 *   `info.invalidAction`), carries it out (an action the page cannot take, such as an unknown
 *   id, is answered with `info.actionError`), scores it with `hooks.evaluate`, and observes
 *   again. `stop [answer]` ends the episode; so does the step budget (`truncated`).
 * - `close()` closes the context and, if the environment launched it, the browser.
 *
 * @example
 * const environment = await BrowserEnvironment.create({ maxSteps: 10 });
 * const observation = await environment.reset(task); // task.meta.startUrl = 'http://127.0.0.1:8080/'
 * const result = await environment.step('click [3]');
 * await environment.close();
 */
export class BrowserEnvironment implements Environment {
  /** Options after defaults. */
  readonly options: BrowserEnvironmentOptions;
  private browser: Browser | undefined;
  private readonly ownsBrowser: boolean;
  private readonly hooks: BrowserTaskHooks;
  private readonly refiner: ObservationRefiner | undefined;
  private readonly countTokens: TokenCounter | undefined;
  private episode: Episode | undefined;
  private closed = false;

  private constructor(setup: BrowserEnvironmentSetup) {
    const { hooks, refiner, browser, countTokens, ...options } = setup;
    this.options = parseOptions(BrowserEnvironmentOptionsSchema, options, 'browser environment');
    this.hooks = hooks ?? {};
    this.refiner = refiner;
    this.countTokens = countTokens;
    this.browser = browser;
    this.ownsBrowser = browser === undefined;
  }

  /**
   * Creates the environment. Without `setup.browser` it launches Chromium now (so a missing
   * browser fails here, not at the first reset).
   *
   * @throws ConfigError for invalid options; EnvironmentError when Chromium does not start.
   */
  static async create(setup: BrowserEnvironmentSetup = {}): Promise<BrowserEnvironment> {
    const environment = new BrowserEnvironment(setup);
    if (environment.ownsBrowser) await environment.ensureBrowser();
    return environment;
  }

  private async ensureBrowser(): Promise<Browser> {
    if (this.browser?.isConnected()) return this.browser;
    if (this.browser && (!this.ownsBrowser || !this.options.restartOnCrash)) {
      throw new EnvironmentError(
        'The browser is no longer connected (it crashed or was closed). Create a new environment.',
      );
    }
    this.browser = await launchChromium(this.options.chromium ?? {});
    return this.browser;
  }

  private assertOpen(method: string): void {
    if (this.closed) {
      throw new EnvironmentStateError(
        `${method}() was called after close(): create a new environment.`,
      );
    }
  }

  /** The episode's current tab (for evaluators, recorders and tests). */
  async currentPage(): Promise<Page> {
    this.assertOpen('currentPage');
    if (!this.episode)
      throw new EnvironmentStateError('currentPage() needs an episode: call reset(task) first.');
    return this.episode.tabs.page();
  }

  /** The episode's browser context. */
  currentContext(): BrowserContext {
    if (!this.episode)
      throw new EnvironmentStateError('currentContext() needs an episode: call reset(task) first.');
    return this.episode.context;
  }

  /** A PNG screenshot of the current tab (the viewport, or the whole page with `fullPage`). */
  async screenshot(options: { fullPage?: boolean; path?: string } = {}): Promise<Buffer> {
    const page = await this.currentPage();
    return page.screenshot({
      fullPage: options.fullPage ?? false,
      ...(options.path === undefined ? {} : { path: options.path }),
    });
  }

  /** Saves the current context's cookies and local storage (a login) to `path`, for `storageState`. */
  async saveStorageState(path: string): Promise<void> {
    await this.currentContext().storageState({ path });
  }

  async reset(task: Task): Promise<Observation> {
    this.assertOpen('reset');
    const previous = this.episode;
    this.episode = undefined;
    let start: BrowserTaskStart;
    try {
      start = await (this.hooks.start ?? defaultTaskStart)(task);
    } catch (error) {
      await previous?.context.close().catch(() => undefined);
      throw error;
    }
    const browser = await this.ensureBrowser();
    const kept =
      previous !== undefined && this.canReuse(previous, start, browser) ? previous : undefined;
    if (previous !== undefined && kept === undefined) {
      await previous.context.close().catch(() => undefined);
    }
    const { context, tabs, episode } = kept
      ? { context: kept.context, tabs: kept.tabs, episode: kept as Partial<Episode> }
      : await this.openContext(task, start, browser);
    try {
      if (kept) {
        // Its one open tab (canReuse), focused below with the fresh path's.
        await (await tabs.page()).goto(start.urls[0]!, { waitUntil: 'load' });
      } else {
        for (const url of start.urls) {
          const page = await tabs.newTab();
          await page.goto(url, { waitUntil: 'load' });
        }
      }
      const first = await tabs.focus(0);
      // A kept tab keeps its observer: the observer's CDP sessions live as long as the page, so
      // a new observer per episode would attach one more session each time (every attached
      // session costs the renderer work: after ~460 MiniWoB++ episodes a renderer was busy
      // half a core and steps took several times longer). Its element ids start again.
      const observer =
        kept?.observer ??
        new PageObserver({
          viewportOnly: this.options.viewportOnly,
          maxTokens: this.options.maxObservationTokens,
          ...(this.countTokens ? { countTokens: this.countTokens } : {}),
        });
      if (kept) observer.resetIds();
      Object.assign(episode, {
        task,
        context,
        tabs,
        observer,
        stepCount: 0,
        done: false,
        instruction: undefined,
      });
      const started = await this.hooks.onReset?.({ task, page: first, context });
      episode.instruction = started?.instruction;
      this.episode = episode as Episode;
      return await this.observe();
    } catch (error) {
      this.episode = undefined;
      await context.close().catch(() => undefined);
      if (EnvironmentError.isInstance(error) || EnvironmentStateError.isInstance(error))
        throw error;
      throw new EnvironmentError(
        `Could not start task ${task.id} at ${start.urls.join(', ')}: ${(error as Error).message.split('\n')[0]}`,
        { cause: error },
      );
    }
  }

  /** Whether the next episode may run in `previous`'s context and tab (`reuseTab`). */
  private canReuse(previous: Episode, start: BrowserTaskStart, browser: Browser): boolean {
    return (
      this.options.reuseTab &&
      previous.crashed === undefined &&
      start.urls.length === 1 &&
      start.storageState === undefined &&
      start.geolocation === undefined &&
      previous.context.browser() === browser &&
      previous.tabs.open().length === 1
    );
  }

  /** A fresh context for an episode, with crash and dialog handling on every page it opens. */
  private async openContext(
    task: Task,
    start: BrowserTaskStart,
    browser: Browser,
  ): Promise<{ context: BrowserContext; tabs: BrowserTabs; episode: Partial<Episode> }> {
    const storageState = start.storageState ?? this.options.storageState;
    let context: BrowserContext;
    try {
      context = await browser.newContext({
        viewport: this.options.viewport,
        ...(storageState === undefined ? {} : { storageState }),
        ...(start.geolocation
          ? { geolocation: start.geolocation, permissions: ['geolocation'] }
          : {}),
      });
    } catch (error) {
      throw new EnvironmentError(
        `Could not open a browser context for task ${task.id}${typeof storageState === 'string' ? ` with storage state ${storageState}` : ''}: ${(error as Error).message.split('\n')[0]}`,
        { cause: error },
      );
    }
    context.setDefaultTimeout(this.options.actionTimeoutMs);
    context.setDefaultNavigationTimeout(this.options.navigationTimeoutMs);
    // The handlers write into this object, which every episode in the context reuses.
    const episode: Partial<Episode> & { crashed: string | undefined } = { crashed: undefined };
    const tabs = new BrowserTabs(context, (page) => {
      // Native dialogs would block every later call: accept them as a user would.
      page.on('dialog', (dialog) => {
        dialog.accept().catch(() => undefined);
      });
      page.on('crash', () => {
        episode.crashed = `the page ${page.url()} crashed`;
      });
    });
    const onDisconnect = () => {
      episode.crashed = 'the browser closed or crashed';
    };
    browser.once('disconnected', onDisconnect);
    context.once('close', () => browser.off('disconnected', onDisconnect));
    return { context, tabs, episode };
  }

  /** Observes the current tab, with the previous action's notice on top. */
  private async observe(notice?: string): Promise<Observation> {
    const episode = this.episode!;
    const page = await episode.tabs.page();
    // Without a refiner the notice goes on top of the mapped text as it is: counted in its budget.
    const mapped = await this.observeWithRetries(
      page,
      this.refiner || notice === undefined ? {} : { above: notice },
    );
    episode.last = mapped;
    episode.lastPage = page;
    let text = mapped.text;
    const info: Record<string, unknown> = {};
    if (this.refiner) {
      const refined = await this.refiner.refine({
        task: episode.task,
        observation: mapped,
        ...(episode.instruction === undefined ? {} : { instruction: episode.instruction }),
      });
      text = refined.text;
      if (refined.info) info.refinement = refined.info;
    }
    if (notice) text = `${notice}\n\n${text}`;
    const budget = this.options.maxObservationTokens;
    if (budget !== null) {
      // What the model reads is at most the budget: a refiner's text too (the mapper's, notice
      // included, was fitted already and passes unchanged).
      text = fitLinesToBudget(
        '',
        text.split('\n'),
        { maxTokens: budget, ...(this.countTokens ? { countTokens: this.countTokens } : {}) },
        'the rest is left out',
      ).text;
    }
    const typeSuggestions = suggestTypedTexts(
      `${episode.task.instruction}\n${episode.instruction ?? ''}`,
    );
    const observation: Observation = {
      text,
      meta: {
        url: mapped.url,
        title: mapped.title,
        tabs: mapped.tabs,
        elementCount: mapped.elements.size,
        ...(episode.instruction === undefined ? {} : { instruction: episode.instruction }),
        ...(typeSuggestions.length > 0 ? { typeSuggestions } : {}),
        ...info,
      },
    };
    if (this.options.listActions) {
      observation.actions = webCandidateActions(observation, []);
    }
    return observation;
  }

  /**
   * Maps the current tab; a page that is navigating can lose its document under the capture,
   * so the capture is retried after the load.
   */
  private async observeWithRetries(page: Page, options: ObserveOptions): Promise<PageObservation> {
    const episode = this.episode!;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await episode.observer.observe(page, await episode.tabs.summaries(), options);
      } catch (error) {
        if (attempt >= 3 || page.isClosed()) throw error;
        await page
          .waitForLoadState('load', { timeout: this.options.navigationTimeoutMs })
          .catch(() => undefined);
      }
    }
  }

  /**
   * Runs `act` on `page` and waits for what it started: a navigation of the page (a form
   * submitted, a script setting `location`) is awaited until its document has loaded, even
   * when it began only after the action returned (within `settleMs`).
   */
  private async withSettling<T>(page: Page, act: () => Promise<T>): Promise<T> {
    let requested = false;
    let committed = false;
    const onRequest = (request: { isNavigationRequest(): boolean; frame(): unknown }) => {
      try {
        if (request.isNavigationRequest() && request.frame() === page.mainFrame()) requested = true;
      } catch {
        // a request without a frame (a service worker's) navigates nothing
      }
    };
    const onNavigated = (frame: unknown) => {
      if (frame === page.mainFrame()) committed = true;
    };
    page.on('request', onRequest);
    page.on('framenavigated', onNavigated);
    try {
      const result = await act();
      if (this.options.settleMs > 0) {
        await page.waitForTimeout(this.options.settleMs).catch(() => undefined);
      }
      const timeout = this.options.navigationTimeoutMs;
      if (requested && !committed && !page.isClosed()) {
        await page
          .waitForEvent('framenavigated', {
            predicate: (frame) => frame === page.mainFrame(),
            timeout,
          })
          .catch(() => undefined);
      }
      const current = await this.episode!.tabs.page();
      await current.waitForLoadState('load', { timeout }).catch(() => undefined);
      return result;
    } finally {
      page.off('request', onRequest);
      page.off('framenavigated', onNavigated);
    }
  }

  private async carryOut(action: WebAction): Promise<{ note?: string }> {
    const episode = this.episode!;
    switch (action.type) {
      case 'new_tab':
        await episode.tabs.newTab();
        return {};
      case 'tab_focus':
        await episode.tabs.focus(action.index);
        return {};
      case 'close_tab':
        await episode.tabs.closeCurrent();
        return {};
      case 'stop':
        return {};
      default: {
        const page = await episode.tabs.page();
        // Ids resolve against the observation of this tab; after a tab switch the agent has
        // seen the new tab, so its observation is the last one.
        const elements = episode.lastPage === page ? episode.last.elements : new Map();
        return this.withSettling(page, () =>
          executeWebAction(action, {
            page,
            sessions: episode.observer.sessionsOf(page),
            elements,
            actionTimeoutMs: this.options.actionTimeoutMs,
            navigationTimeoutMs: this.options.navigationTimeoutMs,
            typing: this.options.typing,
          }),
        );
      }
    }
  }

  async step(action: string): Promise<StepResult> {
    this.assertOpen('step');
    const episode = this.episode;
    if (!episode) throw new EnvironmentStateError('step() was called before reset(task).');
    if (episode.done) {
      throw new EnvironmentStateError(
        'step() was called after the episode ended (done): call reset(task).',
      );
    }
    if (episode.crashed) throw this.crashError(episode);
    episode.stepCount += 1;
    const lastStep = episode.stepCount >= this.options.maxSteps;
    let parsed: WebAction;
    try {
      parsed = parseWebAction(action);
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      return this.finishStep(
        undefined,
        { reward: 0, done: false },
        lastStep,
        `Invalid action: ${error.message}`,
        {
          invalidAction: true,
        },
      );
    }
    let note: string | undefined;
    const info: Record<string, unknown> = {};
    try {
      note = (await this.carryOut(parsed)).note;
    } catch (error) {
      if (episode.crashed) throw this.crashError(episode, error);
      if (!WebActionError.isInstance(error)) {
        if (!this.browser?.isConnected()) {
          episode.crashed = 'the browser closed or crashed';
          throw this.crashError(episode, error);
        }
        throw error;
      }
      note = `Action failed: ${error.message}`;
      info.actionError = error.message;
    }
    const page = await episode.tabs.page();
    const stopped = parsed.type === 'stop';
    const evaluation: BrowserEvaluation = this.hooks.evaluate
      ? await this.hooks.evaluate({
          task: episode.task,
          page,
          context: episode.context,
          action: parsed,
          stepCount: episode.stepCount,
          stopped,
          ...(parsed.type === 'stop' ? { answer: parsed.answer } : {}),
          lastStep,
        })
      : { reward: 0, done: stopped };
    return this.finishStep(
      parsed,
      { ...evaluation, done: evaluation.done || stopped },
      lastStep,
      note,
      info,
    );
  }

  private async finishStep(
    action: WebAction | undefined,
    evaluation: BrowserEvaluation,
    lastStep: boolean,
    notice: string | undefined,
    info: Record<string, unknown>,
  ): Promise<StepResult> {
    const episode = this.episode!;
    const truncated = !evaluation.done && lastStep;
    const done = evaluation.done || truncated;
    episode.done = done;
    let observation: Observation;
    try {
      observation = await this.observe(notice);
    } catch (error) {
      if (episode.crashed || !this.browser?.isConnected()) {
        episode.crashed ??= 'the browser closed or crashed';
        throw this.crashError(episode, error);
      }
      throw new EnvironmentError(
        `Could not observe the page after ${action ? formatWebAction(action) : 'the action'}: ${(error as Error).message.split('\n')[0]}`,
        { cause: error },
      );
    }
    return {
      observation,
      reward: evaluation.reward,
      done,
      truncated,
      info: {
        ...info,
        ...(action ? { action: formatWebAction(action) } : {}),
        ...(evaluation.success === undefined ? {} : { success: evaluation.success }),
        ...(evaluation.info ?? {}),
        stepCount: episode.stepCount,
      },
    };
  }

  private crashError(episode: Episode, cause?: unknown): EnvironmentError {
    episode.done = true;
    return new EnvironmentError(
      `The episode of task ${episode.task.id} is lost: ${episode.crashed ?? 'the browser failed'}. Call reset(task) to start again${this.ownsBrowser && this.options.restartOnCrash ? ' (a new browser is started if needed)' : ''}.`,
      { cause },
    );
  }

  private async endEpisode(): Promise<void> {
    const episode = this.episode;
    this.episode = undefined;
    if (episode) await episode.context.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.endEpisode();
    if (this.ownsBrowser && this.browser) await this.browser.close().catch(() => undefined);
    this.browser = undefined;
  }
}
