/**
 * A WebShop page as the adapter understands it, whatever the server's observation mode
 * (`text`, `text_rich`, `html`) or the source (a recorded human session), and its rendering
 * as the abstract state: a clean list of the page's elements in which every clickable is
 * written `[value]` and nothing else is, so the state can be read back.
 */
import { canonicalClickValue, formatWebshopAction, WEBSHOP_BUTTONS } from '../action-grammar.js';

/** The five WebShop page kinds. */
export type WebshopPageKind = 'search' | 'results' | 'item' | 'item-detail' | 'done';

/** A product in a result list. */
export interface WebshopListedProduct {
  asin: string;
  title?: string;
  /** As shown: `$10.99` or `$12.0 to $15.0`. */
  price?: string;
}

/** One option of an item (`color`) and its values (`black`, `pink`). */
export interface WebshopItemOption {
  name: string;
  values: string[];
}

/** A parsed WebShop page. */
export interface WebshopPage {
  kind: WebshopPageKind;
  /** The instruction shown on every page but the last. */
  instruction?: string;
  /** The page has the search bar (the start page). */
  hasSearchBar: boolean;
  /** Buttons besides products and options, canonical (`Back to Search`, `Next >`, `Buy Now`). */
  buttons: string[];
  /** Results: the query searched. */
  query?: string;
  /** Results: page number and total results. */
  pageNumber?: number;
  totalResults?: number;
  /** Results: the products listed. */
  products?: WebshopListedProduct[];
  /** Item and item detail pages: the product. */
  asin?: string;
  title?: string;
  /** Item page: `$10.99`. */
  price?: string;
  rating?: string;
  options?: WebshopItemOption[];
  /** Item page: chosen option values by option name. */
  selected?: Record<string, string>;
  /** Item detail: which section (`Description`, `Features`, `Reviews`, `Attributes`) and its text. */
  section?: string;
  detail?: string;
  /** Done: the purchase score in [0, 1] and what was bought. */
  score?: number;
  purchasedOptions?: Record<string, string>;
}

/** Square brackets mark clickables in the state text, so other text may not use them. */
function plain(text: string): string {
  return text.replace(/\[/g, '(').replace(/\]/g, ')').replace(/\s+/g, ' ').trim();
}

/** The line announcing the search bar; {@link webshopPageClickables} and candidates look for it. */
export const SEARCH_BAR_LINE = 'Search bar: search[<query>]';

function buttonLine(buttons: readonly string[]): string | undefined {
  return buttons.length === 0 ? undefined : buttons.map((button) => `[${button}]`).join(' ');
}

/**
 * Renders a page as the abstract state text. The instruction is left out: the policy and
 * the experience model get it as the task, and it is the same on every page.
 *
 * @example
 * renderWebshopPage({ kind: 'search', hasSearchBar: true, buttons: [] })
 * // 'WebShop search page.\nSearch bar: search[<query>]'
 */
export function renderWebshopPage(page: WebshopPage): string {
  const lines: string[] = [];
  const navigation = page.buttons.filter((button) => !ITEM_SECTION_BUTTONS.has(button));
  switch (page.kind) {
    case 'search':
      lines.push('WebShop search page.');
      break;
    case 'results': {
      const where = page.pageNumber === undefined ? '' : `, page ${page.pageNumber}`;
      const total = page.totalResults === undefined ? '' : ` (${page.totalResults} results)`;
      lines.push(
        `Search results${page.query ? ` for "${plain(page.query)}"` : ''}${where}${total}.`,
      );
      const nav = buttonLine(navigation);
      if (nav) lines.push(nav);
      for (const product of page.products ?? []) {
        const parts = [`[${product.asin}]`];
        if (product.title) parts.push(plain(product.title));
        if (product.price) parts.push(`| ${plain(product.price)}`);
        lines.push(parts.join(' '));
      }
      if ((page.products ?? []).length === 0) lines.push('No products listed.');
      break;
    }
    case 'item': {
      lines.push(
        `Item ${page.asin ?? '(unknown ASIN)'}${page.title ? `: ${plain(page.title)}` : ''}`,
      );
      const facts = [
        page.price ? `Price: ${plain(page.price)}` : undefined,
        page.rating ? `Rating: ${plain(page.rating)}` : undefined,
      ].filter(Boolean);
      if (facts.length > 0) lines.push(facts.join('. '));
      const nav = buttonLine(navigation);
      if (nav) lines.push(nav);
      for (const option of page.options ?? []) {
        const chosen = page.selected?.[option.name];
        const values = option.values.map((value) => `[${value}]`).join(' ');
        lines.push(
          `${plain(option.name)}: ${values}${chosen === undefined ? '' : ` (selected: ${chosen})`}`,
        );
      }
      for (const [name, value] of Object.entries(page.selected ?? {})) {
        if (!(page.options ?? []).some((option) => option.name === name)) {
          lines.push(`${plain(name)}: (selected: ${value})`);
        }
      }
      const sections = buttonLine(
        page.buttons.filter((button) => ITEM_SECTION_BUTTONS.has(button)),
      );
      if (sections) lines.push(sections);
      break;
    }
    case 'item-detail': {
      lines.push(
        `${page.section ?? 'Details'} of item ${page.asin ?? '(unknown ASIN)'}${page.title ? ` (${plain(page.title)})` : ''}:`,
      );
      lines.push(page.detail ? plain(page.detail) : '(not shown)');
      const nav = buttonLine(navigation);
      if (nav) lines.push(nav);
      break;
    }
    case 'done':
      lines.push(
        `Purchase complete.${page.score === undefined ? '' : ` Score: ${formatScore(page.score)} (1 is a perfect match).`}`,
      );
      break;
  }
  if (page.hasSearchBar) lines.push(SEARCH_BAR_LINE);
  return lines.join('\n');
}

function formatScore(score: number): string {
  return String(Math.round(score * 1e4) / 1e4);
}

/** Buttons listed after an item's options, in page order. */
const ITEM_SECTION_BUTTONS: ReadonlySet<string> = new Set([
  WEBSHOP_BUTTONS.description,
  WEBSHOP_BUTTONS.features,
  WEBSHOP_BUTTONS.reviews,
  WEBSHOP_BUTTONS.attributes,
  WEBSHOP_BUTTONS.buyNow,
]);

/** The canonical click values of a page, in page order: buttons, products, option values. */
export function webshopPageClickValues(page: WebshopPage): string[] {
  const values: string[] = [];
  const navigation = page.buttons.filter((button) => !ITEM_SECTION_BUTTONS.has(button));
  values.push(...navigation);
  for (const product of page.products ?? []) values.push(product.asin);
  for (const option of page.options ?? []) values.push(...option.values);
  values.push(...page.buttons.filter((button) => ITEM_SECTION_BUTTONS.has(button)));
  return [...new Set(values.map(canonicalClickValue))];
}

/** The `click[...]` actions of a page (no `search[...]`: queries come from the instruction). */
export function webshopPageClicks(page: WebshopPage): string[] {
  return webshopPageClickValues(page).map((value) => formatWebshopAction('click', value));
}

/**
 * Reads the clickables back from a state text written by {@link renderWebshopPage} (or an
 * experience model imitating it): every `[value]`, in order, and whether the search bar is
 * shown.
 */
export function webshopPageClickables(text: string): { hasSearchBar: boolean; values: string[] } {
  let hasSearchBar = false;
  const values: string[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === SEARCH_BAR_LINE) {
      hasSearchBar = true;
      continue;
    }
    for (const match of line.matchAll(/\[([^[\]]+)\]/g)) {
      const value = match[1]!.trim();
      if (value !== '' && !/^search$/i.test(value)) values.push(canonicalClickValue(value));
    }
  }
  return { hasSearchBar, values: [...new Set(values)] };
}
