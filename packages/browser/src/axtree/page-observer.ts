/**
 * The AX-tree state mapper over a live page: captures the raw snapshot over CDP, flattens it
 * with stable ids, and puts the tab header on top, as WebArena prints observations:
 *
 * ```text
 * Tab 0 (current): One Stop Market | Tab 1: Search results
 * URL: http://127.0.0.1:7770/
 *
 * [12] link 'My Account' url: /customer/account/
 * [13] searchbox 'Search' focused: true
 * ```
 */
import type { TokenCounter } from '@dreamgym/core/experience';
import type { Page } from 'playwright-core';
import {
  captureAccessibilitySnapshot,
  PageSessions,
  type RawAccessibilitySnapshot,
} from './accessibility-snapshot.js';
import { ElementIdAllocator, type ObservedElement } from './element-ids.js';
import { flattenAccessibilityTree } from './flatten-accessibility-tree.js';
import { fitLinesToBudget } from './observation-budget.js';

/** One open tab, for the header. */
export interface TabSummary {
  index: number;
  title: string;
  url: string;
  current: boolean;
}

/** What the mapper made of one page at one moment. */
export interface PageObservation {
  /** Header and tree: what the agent reads. */
  text: string;
  /** The tree lines alone. */
  tree: string;
  url: string;
  title: string;
  tabs: TabSummary[];
  /** The elements whose ids appear in `tree`, by id. */
  elements: Map<number, ObservedElement>;
  /** Milliseconds spent capturing over CDP and flattening. */
  timings: { captureMs: number; flattenMs: number };
  /** The raw snapshot, when the observer keeps it (`keepSnapshot`). */
  snapshot?: RawAccessibilitySnapshot;
  /** When the token budget cut the tree: lines shown of the whole. */
  cut?: { shownLines: number; totalLines: number };
}

/** Options of {@link PageObserver}. */
export interface PageObserverOptions {
  /** Keep only nodes inside the viewport. Default false. */
  viewportOnly?: boolean;
  /** Keep the raw snapshot on each observation (for recording fixtures and benchmarks). Default false. */
  keepSnapshot?: boolean;
  /**
   * Most tokens the observation text holds, counted with `countTokens`: the tree is cut at a
   * line and a note says what was left out. Default none.
   */
  maxTokens?: number | null;
  /**
   * The tokenizer of the model that reads the observations (`LlamaChatModel.countTokens`...).
   * Default `estimateObservationTokens`, which over-counts rather than under.
   */
  countTokens?: TokenCounter;
}

/** Options of one {@link PageObserver.observe}. */
export interface ObserveOptions {
  /**
   * Text the reader sees above the observation, followed by a blank line (an action's error):
   * counted in the budget, not part of the returned text.
   */
  above?: string;
}

/** `Tab 0 (current): Title | Tab 1: Title`. */
export function formatTabHeader(tabs: readonly TabSummary[]): string {
  return tabs
    .map((tab) => `Tab ${tab.index}${tab.current ? ' (current)' : ''}: ${tab.title || tab.url}`)
    .join(' | ');
}

/** Header, URL line and tree, as one observation text. */
export function formatObservationText(
  tabs: readonly TabSummary[],
  url: string,
  tree: string,
): string {
  return `${formatTabHeader(tabs)}\nURL: ${url}\n\n${tree}`;
}

/**
 * Maps live pages to observations. One observer serves one episode: its element ids stay
 * stable for every node the episode has shown, across steps, tabs and frames.
 */
export class PageObserver {
  private readonly sessions = new WeakMap<Page, PageSessions>();
  private ids = new ElementIdAllocator();

  constructor(private readonly options: PageObserverOptions = {}) {}

  /** Starts a new episode: ids are handed out from 1 again. */
  resetIds(): void {
    this.ids = new ElementIdAllocator();
  }

  /** The CDP sessions of `page` (opened on first use and kept for the page's life). */
  sessionsOf(page: Page): PageSessions {
    let sessions = this.sessions.get(page);
    if (!sessions) {
      sessions = new PageSessions(page);
      this.sessions.set(page, sessions);
    }
    return sessions;
  }

  /**
   * Observes `page`. `tabs` lists the open tabs for the header; by default the page alone
   * as tab 0.
   */
  async observe(
    page: Page,
    tabs?: readonly TabSummary[],
    options: ObserveOptions = {},
  ): Promise<PageObservation> {
    const started = performance.now();
    const snapshot = await captureAccessibilitySnapshot(this.sessionsOf(page), {
      withBounds: this.options.viewportOnly ?? false,
    });
    const captured = performance.now();
    const flattened = flattenAccessibilityTree(snapshot, {
      ids: this.ids,
      viewportOnly: this.options.viewportOnly ?? false,
    });
    const header = tabs ?? [{ index: 0, title: snapshot.title, url: snapshot.url, current: true }];
    const head = formatObservationText(header, snapshot.url, '');
    const budget = this.options.maxTokens;
    let tree = flattened.lines.join('\n');
    let cut: PageObservation['cut'];
    if (budget !== undefined && budget !== null) {
      const above = options.above === undefined ? '' : `${options.above}\n\n`;
      const rest = this.options.viewportOnly
        ? 'scroll to bring the rest into view'
        : 'observe with viewportOnly to follow the page as you scroll';
      const fitted = fitLinesToBudget(
        `${above}${head}`,
        flattened.lines,
        {
          maxTokens: budget,
          ...(this.options.countTokens ? { countTokens: this.options.countTokens } : {}),
        },
        rest,
      );
      tree = fitted.text.slice(above.length + head.length);
      cut = fitted.cut;
    }
    const finished = performance.now();
    return {
      ...(cut ? { cut } : {}),
      text: `${head}${tree}`,
      tree,
      url: snapshot.url,
      title: snapshot.title,
      tabs: [...header],
      elements: flattened.elements,
      timings: { captureMs: captured - started, flattenMs: finished - captured },
      ...(this.options.keepSnapshot ? { snapshot } : {}),
    };
  }
}
