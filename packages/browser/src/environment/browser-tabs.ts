/**
 * The tabs of one episode's browser context, as the agent sees them: tab `i` is the `i`-th
 * open page in opening order; a page the site opens (a `target=_blank` link, `window.open`)
 * becomes the current tab, as in WebArena; closing the current tab moves to the last one.
 */
import type { BrowserContext, Page } from 'playwright-core';
import type { TabSummary } from '../axtree/page-observer.js';
import { WebActionError } from '../errors.js';

export class BrowserTabs {
  private current: Page | undefined;

  constructor(
    private readonly context: BrowserContext,
    private readonly preparePage: (page: Page) => void,
  ) {
    context.on('page', (page) => {
      this.preparePage(page);
      this.current = page;
      page.once('close', () => {
        if (this.current === page) this.current = this.open().at(-1);
      });
    });
  }

  /** Open pages, in opening order. */
  open(): Page[] {
    return this.context.pages().filter((page) => !page.isClosed());
  }

  /** The current tab, opening a blank one when every tab is closed. */
  async page(): Promise<Page> {
    if (!this.current || this.current.isClosed()) this.current = this.open().at(-1);
    if (!this.current) this.current = await this.context.newPage();
    return this.current;
  }

  /** Makes tab `index` current. */
  async focus(index: number): Promise<Page> {
    const pages = this.open();
    const page = pages[index];
    if (!page) {
      throw new WebActionError(
        `tab_focus [${index}]: there is no tab ${index}; the open tabs are 0 to ${pages.length - 1}.`,
        { action: `tab_focus [${index}]` },
      );
    }
    await page.bringToFront();
    this.current = page;
    return page;
  }

  /** Opens a blank tab and makes it current. */
  async newTab(): Promise<Page> {
    const page = await this.context.newPage();
    this.current = page;
    return page;
  }

  /** Closes the current tab; the last remaining tab (or a new blank one) becomes current. */
  async closeCurrent(): Promise<Page> {
    const page = await this.page();
    await page.close();
    this.current = this.open().at(-1);
    return this.page();
  }

  /** Header entries for every open tab. */
  async summaries(): Promise<TabSummary[]> {
    const current = await this.page();
    return Promise.all(
      this.open().map(async (page, index) => ({
        index,
        title: await page.title().catch(() => ''),
        url: page.url(),
        current: page === current,
      })),
    );
  }
}
