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
import type { Page } from 'playwright-core';
import {
  captureAccessibilitySnapshot,
  PageSessions,
  type RawAccessibilitySnapshot,
} from './accessibility-snapshot.js';
import { ElementIdAllocator, type ObservedElement } from './element-ids.js';
import { flattenAccessibilityTree } from './flatten-accessibility-tree.js';

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
}

/** Options of {@link PageObserver}. */
export interface PageObserverOptions {
  /** Keep only nodes inside the viewport. Default false. */
  viewportOnly?: boolean;
  /** Keep the raw snapshot on each observation (for recording fixtures and benchmarks). Default false. */
  keepSnapshot?: boolean;
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
  async observe(page: Page, tabs?: readonly TabSummary[]): Promise<PageObservation> {
    const started = performance.now();
    const snapshot = await captureAccessibilitySnapshot(this.sessionsOf(page), {
      withBounds: this.options.viewportOnly ?? false,
    });
    const captured = performance.now();
    const flattened = flattenAccessibilityTree(snapshot, {
      ids: this.ids,
      viewportOnly: this.options.viewportOnly ?? false,
    });
    const tree = flattened.lines.join('\n');
    const header = tabs ?? [{ index: 0, title: snapshot.title, url: snapshot.url, current: true }];
    const finished = performance.now();
    return {
      text: formatObservationText(header, snapshot.url, tree),
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
