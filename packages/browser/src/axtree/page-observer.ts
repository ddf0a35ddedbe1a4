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
   * Most tokens (characters / 4) the observation text holds; the tree is cut at a line and a
   * note says what was left out. Default none.
   */
  maxTokens?: number | null;
}

/** Tokens of `text` as the observation budget counts them: characters / 4, rounded up. */
export const estimateObservationTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * The tree lines that fit `budget` tokens beside `header`, and the note that ends a cut tree
 * (which elements the agent can still act on: the ids it saw; how to see the rest).
 */
function fitToBudget(
  header: string,
  lines: readonly string[],
  budget: number,
  viewportOnly: boolean,
): { lines: readonly string[]; cut?: { shownLines: number; totalLines: number } } {
  let used = estimateObservationTokens(header) + 40; // the note's own share
  let kept = 0;
  for (const line of lines) {
    const cost = estimateObservationTokens(`${line}\n`);
    if (used + cost > budget) break;
    used += cost;
    kept += 1;
  }
  if (kept === lines.length) return { lines };
  const rest = viewportOnly
    ? 'scroll to bring the rest into view'
    : 'observe with viewportOnly to follow the page as you scroll';
  return {
    lines: [
      ...lines.slice(0, kept),
      `[The observation is cut at its budget of ${budget} tokens: ${kept} of ${lines.length} lines are shown; ${rest}.]`,
    ],
    cut: { shownLines: kept, totalLines: lines.length },
  };
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
    const header = tabs ?? [{ index: 0, title: snapshot.title, url: snapshot.url, current: true }];
    const budget = this.options.maxTokens;
    const fitted =
      budget === undefined || budget === null
        ? { lines: flattened.lines }
        : fitToBudget(
            formatObservationText(header, snapshot.url, ''),
            flattened.lines,
            budget,
            this.options.viewportOnly ?? false,
          );
    const tree = fitted.lines.join('\n');
    const finished = performance.now();
    return {
      ...('cut' in fitted && fitted.cut ? { cut: fitted.cut } : {}),
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
