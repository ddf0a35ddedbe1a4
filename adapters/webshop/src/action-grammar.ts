/**
 * The WebShop action grammar: `search[query]` on a page with a search bar and
 * `click[value]` on one of the page's clickables (a button, a product ASIN, an option value).
 * WebShop lower-cases both before acting, so the canonical form here is lower case except
 * for the named buttons and ASINs, written as the page shows them (`click[Buy Now]`,
 * `click[B078GWRC1J]`).
 */
import { ActionParseError, type ParsedAction } from '@dreamgym/core';

/** The two WebShop verbs. */
export type WebshopActionType = 'search' | 'click';

/** The buttons WebShop pages show, as they are written (`END_BUTTON`, `NEXT_PAGE`... of its engine). */
export const WEBSHOP_BUTTONS = {
  backToSearch: 'Back to Search',
  nextPage: 'Next >',
  previousPage: '< Prev',
  buyNow: 'Buy Now',
  description: 'Description',
  features: 'Features',
  reviews: 'Reviews',
  attributes: 'Attributes',
  /** Newer WebShop pages name the item page's way back so; it acts as `< Prev`. */
  backToResults: '< Back to Results',
  /** Newer WebShop pages name the sub page's way back so; it acts as `< Prev`. */
  backToItem: '< Back to Item Page',
} as const;

const CANONICAL_BUTTONS = new Map<string, string>(
  Object.values(WEBSHOP_BUTTONS).map((button) => [button.toLowerCase(), button]),
);

/** An Amazon ASIN as WebShop lists products: ten letters and digits (`B078GWRC1J`, `0972853213`). */
export const ASIN_PATTERN = /^(?=.*\d)[a-z0-9]{10}$/i;

function fail(action: string, reason: string): never {
  throw new ActionParseError(
    `"${action}" is not a WebShop action: ${reason}. WebShop actions are \`search[query]\` (on a page with a search bar) and \`click[value]\` with a button, product ASIN or option value shown on the page, e.g. \`search[red stereo earbuds]\`, \`click[B08CZ8WS38]\`, \`click[Buy Now]\`.`,
    { action },
  );
}

/** The canonical text of a clicked value: named buttons as shown, ASINs upper case, the rest lower case. */
export function canonicalClickValue(value: string): string {
  const normalized = value.trim().replace(/\s+/g, ' ');
  const lower = normalized.toLowerCase();
  const button = CANONICAL_BUTTONS.get(lower);
  if (button !== undefined) return button;
  if (ASIN_PATTERN.test(normalized)) return normalized.toUpperCase();
  return lower;
}

/**
 * Parses a WebShop action. Surrounding space and the verb's case are forgiven; the query is
 * lower-cased and its spaces collapsed (WebShop searches on the lower-case words).
 *
 * @throws ActionParseError saying why and showing the grammar.
 * @example
 * parseWebshopAction('Click[buy now]') // { type: 'click', args: ['Buy Now'], text: 'click[Buy Now]' }
 * parseWebshopAction('search[ Red  earbuds ]') // { type: 'search', args: ['red earbuds'], text: 'search[red earbuds]' }
 */
export function parseWebshopAction(text: string): ParsedAction {
  const trimmed = text.trim();
  if (trimmed === '') fail(text, 'it is empty');
  const match = /^([A-Za-z_]+)\s*\[(.*)\]$/s.exec(trimmed);
  if (!match) {
    if (/^(search|click)$/i.test(trimmed)) {
      fail(text, `\`${trimmed.toLowerCase()}\` needs its argument in square brackets`);
    }
    fail(text, 'it is not of the form `verb[argument]`');
  }
  const verb = match[1]!.toLowerCase();
  const argument = match[2]!.trim().replace(/\s+/g, ' ');
  if (verb !== 'search' && verb !== 'click')
    fail(text, `"${match[1]}" is not a verb (search, click)`);
  if (argument === '') fail(text, `\`${verb}[...]\` needs a non-empty argument`);
  if (/[[\]]/.test(argument)) {
    fail(text, 'the argument may not contain square brackets (WebShop cannot act on it)');
  }
  const value = verb === 'search' ? argument.toLowerCase() : canonicalClickValue(argument);
  return { type: verb, args: [value], text: `${verb}[${value}]` };
}

/** Writes an action from its verb and argument (the inverse of {@link parseWebshopAction}). */
export function formatWebshopAction(type: WebshopActionType, argument: string): string {
  return parseWebshopAction(`${type}[${argument}]`).text;
}

/** What a WebShop page accepts: AgentGym's `GET /available_actions` answer. */
export interface WebshopAvailableActions {
  /** The page has a search bar (only the start page). */
  hasSearchBar: boolean;
  /** The page's clickables as WebShop lists them (lower case), `search` for the search button. */
  clickables: readonly string[];
}

/**
 * Parses `text` and checks it against what the page accepts, as WebShop decides it:
 * `search[...]` needs a search bar; `click[v]` needs `v` (lower case) among the clickables,
 * and never the search button itself.
 *
 * @throws ActionParseError naming what the page offers instead.
 */
export function checkWebshopAction(text: string, available: WebshopAvailableActions): ParsedAction {
  const parsed = parseWebshopAction(text);
  if (parsed.type === 'search') {
    if (!available.hasSearchBar) {
      throw new ActionParseError(
        `"${text}" cannot be done here: this page has no search bar (click[Back to Search] returns to it).`,
        { action: text },
      );
    }
    return parsed;
  }
  const value = parsed.args[0]!.toLowerCase();
  const clickables = available.clickables.map((clickable) => clickable.toLowerCase());
  if (value === 'search' || !clickables.includes(value)) {
    const offered = clickables
      .filter((clickable) => clickable !== 'search')
      .map((clickable) => `click[${canonicalClickValue(clickable)}]`);
    throw new ActionParseError(
      `"${text}" cannot be done here: "${parsed.args[0]}" is not clickable on this page. ${
        offered.length > 0 ? `Clickable: ${offered.join(', ')}` : 'Nothing is clickable'
      }${available.hasSearchBar ? '; or search[query]' : ''}.`,
      { action: text },
    );
  }
  return parsed;
}
