/**
 * Options of the browser environment, as a zod schema (the source of truth) with the
 * inferred types, and the hooks through which a web domain (WebArena-Lite, MiniWoB++) says
 * where an episode starts and how it is scored.
 */
import type { Task } from '@dreamgym/core';
import type { TokenCounter } from '@dreamgym/core/experience';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { z } from 'zod';
import type { WebAction } from '../actions/web-action-grammar.js';
import type { PageObservation } from '../axtree/page-observer.js';
import { ChromiumOptionsSchema } from '../chromium.js';

/** Options of {@link BrowserEnvironment}. */
export const BrowserEnvironmentOptionsSchema = z.object({
  /** How Chromium is launched when the environment starts its own browser. */
  chromium: ChromiumOptionsSchema.partial().optional(),
  /** Page size in CSS pixels. Default 1280 x 720 (WebArena's). */
  viewport: z
    .object({ width: z.number().int().positive(), height: z.number().int().positive() })
    .default({ width: 1280, height: 720 }),
  /**
   * Actions per episode: the episode ends with `done` and `truncated` after this many.
   * Default 30 (WebArena's budget).
   */
  maxSteps: z.number().int().positive().default(30),
  /** Milliseconds an element action waits for its element to be visible, stable and enabled. Default 5 000. */
  actionTimeoutMs: z.number().int().positive().default(5_000),
  /** Milliseconds a page load may take (start URLs, `goto`, `go_back`). Default 30 000. */
  navigationTimeoutMs: z.number().int().positive().default(30_000),
  /**
   * Milliseconds to wait after an action for what it started (a navigation, a script) before
   * the page is observed again; a started navigation is then awaited up to its load. Default 100.
   */
  settleMs: z.number().int().nonnegative().default(100),
  /** How `type` enters text: `keyboard` (clear, then key by key) or `fill` (at once). Default `keyboard`. */
  typing: z.enum(['keyboard', 'fill']).default('keyboard'),
  /** Observe only what is inside the viewport (scroll to see more). Default false: the whole page. */
  viewportOnly: z.boolean().default(false),
  /**
   * Most tokens an observation holds, in the tokens of the model that reads it (`countTokens`),
   * else as `estimateObservationTokens` counts them (never fewer than SmolLM2's tokenizer on
   * real pages): the tree is cut at a line and a note at the end says how much was left out.
   * The whole text the model reads is counted (header, an action's error, the note). A long
   * page's whole tree runs to 35k-180k tokens. Default 8 000; `null` for no budget.
   */
  maxObservationTokens: z.number().int().positive().nullable().default(8_000),
  /** List candidate actions in `Observation.actions`. Default true. */
  listActions: z.boolean().default(true),
  /**
   * A Playwright storage-state file (cookies and local storage, e.g. a logged-in session)
   * loaded into every episode's context, unless the task's start names its own.
   */
  storageState: z.string().min(1).optional(),
  /** Start a new browser when the one in use crashed or was closed. Default true. */
  restartOnCrash: z.boolean().default(true),
  /**
   * Keep the previous episode's context and tab for the next episode when both start on one
   * page with no storage state or geolocation of their own: `reset` navigates the kept tab
   * instead of opening a fresh context (no new renderer process: MiniWoB++ resets take about
   * half the time). Cookies and local storage then carry over between episodes, so leave it
   * off for sites with logins or per-user state. Default false.
   */
  reuseTab: z.boolean().default(false),
});
/** Options of {@link BrowserEnvironment}, as a caller writes them. */
export type BrowserEnvironmentOptionsInput = z.input<typeof BrowserEnvironmentOptionsSchema>;
/** Options of {@link BrowserEnvironment}, after defaults. */
export type BrowserEnvironmentOptions = z.output<typeof BrowserEnvironmentOptionsSchema>;

/** Where and how an episode of a task starts. */
export interface BrowserTaskStart {
  /** Pages to open, one tab each; the first is the current tab. */
  urls: string[];
  /** A storage-state file or object (cookies, local storage) for the episode's context. */
  storageState?: BrowserContextOptions['storageState'];
  /** Geolocation the context reports (permission granted). */
  geolocation?: { latitude: number; longitude: number; accuracy?: number };
}

/** What the hooks see of a running episode. */
export interface BrowserEpisode {
  task: Task;
  /** The current tab. */
  page: Page;
  /** The episode's browser context (all its tabs). */
  context: BrowserContext;
}

/** What a step of the episode looked like, for {@link BrowserTaskHooks.evaluate}. */
export interface BrowserStepContext extends BrowserEpisode {
  /** The action just carried out. */
  action: WebAction;
  /** Number of actions so far, this one included. */
  stepCount: number;
  /** True when the action was `stop [answer]`. */
  stopped: boolean;
  /** The answer of `stop [answer]`. */
  answer?: string;
  /** True when this is the last step the budget allows (`maxSteps`): the episode is cut after it. */
  lastStep: boolean;
}

/** The score of a step. */
export interface BrowserEvaluation {
  reward: number;
  /** The task ended (success or failure). */
  done: boolean;
  /** Whether the task was accomplished, when the domain knows. */
  success?: boolean;
  /** Details for `StepResult.info` (evaluator results, raw rewards...). */
  info?: Record<string, unknown>;
}

/** How a web domain starts and scores its episodes on the browser environment. */
export interface BrowserTaskHooks {
  /**
   * Where an episode of `task` starts. Default: `task.meta.startUrl` (a URL, several joined
   * by ` |AND| `, or an array) and `task.meta.storageState`.
   */
  start?(task: Task): BrowserTaskStart | Promise<BrowserTaskStart>;
  /**
   * Runs once the start pages are open (start a MiniWoB++ episode, dismiss a banner...). It
   * may return the instruction the page shows, which the observation's meta then carries.
   */
  onReset?(episode: BrowserEpisode): Promise<{ instruction?: string } | undefined>;
  /**
   * Scores each step. Default: reward 0, and the episode ends only at `stop`. Called also on
   * the last step of the budget (`lastStep`), as WebArena scores an episode cut by its limit.
   */
  evaluate?(step: BrowserStepContext): Promise<BrowserEvaluation>;
}

/** A second stage over the mapped tree: a task-focused observation (see `createLlmObservationRefiner`). */
export interface ObservationRefiner {
  /**
   * Rewrites `observation.text` for `task`. The ids of the elements it keeps must be the
   * observation's own, so that actions still resolve.
   */
  refine(input: {
    task: Task;
    observation: PageObservation;
    instruction?: string;
  }): Promise<{ text: string; info?: Record<string, unknown> }>;
}

/** Everything {@link BrowserEnvironment.create} takes: options plus the parts that are not data. */
export interface BrowserEnvironmentSetup extends BrowserEnvironmentOptionsInput {
  /** The domain's hooks. */
  hooks?: BrowserTaskHooks;
  /** An optional refinement of each observation (the paper's second stage). */
  refiner?: ObservationRefiner;
  /**
   * The tokenizer of the model that reads the observations (the policy's, or the experience
   * model's: `LlamaChatModel.countTokens`), for `maxObservationTokens`. Default
   * `estimateObservationTokens`, an estimate that over-counts rather than under.
   */
  countTokens?: TokenCounter;
  /**
   * A browser to use instead of launching one. It is shared: the environment closes only
   * its own contexts, never this browser.
   */
  browser?: Browser;
}
