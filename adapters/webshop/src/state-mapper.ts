/**
 * The WebShop state mapper: a server observation (any of WebShop's observation modes) or a
 * page read from a recorded session -> the abstract {@link Observation}: a clean list of
 * the page's elements (search bar, buttons, products with title and price, options, page
 * counter), the instruction moved to `meta.instruction`, and the page's moves as `actions`.
 */
import type { Observation } from '@dreamgym/core';
import { formatWebshopAction } from './action-grammar.js';
import {
  type PageHints,
  parseWebshopPage,
  type WebshopObservationMode,
} from './pages/parse-page.js';
import { renderWebshopPage, type WebshopPage, webshopPageClicks } from './pages/webshop-page.js';
import { webshopSearchQueries } from './search-queries.js';

/** What a WebShop server gives for one state, with what the caller knows about the page. */
export interface WebshopRawObservation {
  /** The observation: `text` mode (`... [SEP] ...`), `text_rich` mode or the page HTML. */
  observation: string;
  /** Its mode; guessed from the text when absent. */
  mode?: WebshopObservationMode;
  /** AgentGym's `GET /available_actions` answer for the page. */
  availableActions?: { has_search_bar: boolean; clickables: readonly string[] };
  /** The instruction, when the page does not show it (the done page) or the caller knows it better. */
  instruction?: string;
  /** The page URL (`GET /state`), which tells the product and the chosen options. */
  url?: string;
  /** The product shown, the last query and the chosen options, when the caller tracked them. */
  asin?: string;
  query?: string;
  selectedOptions?: Record<string, string>;
}

/** A page the caller already parsed (recorded sessions build these). */
export interface WebshopParsedRawObservation {
  page: WebshopPage;
}

/**
 * Maps a parsed page to the abstract state: `text` from {@link renderWebshopPage},
 * `actions` the page's `click[...]` moves, plus up to three `search[...]` queries from the
 * instruction where the page has the search bar, and `meta` with the page kind,
 * instruction, query, product and score.
 */
export function webshopPageToObservation(page: WebshopPage, instruction?: string): Observation {
  const goal = instruction ?? page.instruction;
  const actions = webshopPageClicks(page);
  if (page.hasSearchBar && goal !== undefined) {
    actions.unshift(
      ...webshopSearchQueries(goal).map((query) => formatWebshopAction('search', query)),
    );
  }
  const meta: Record<string, unknown> = { page: page.kind };
  if (goal !== undefined) meta.instruction = goal;
  if (page.query !== undefined) meta.query = page.query;
  if (page.asin !== undefined) meta.asin = page.asin;
  if (page.selected !== undefined && Object.keys(page.selected).length > 0) {
    meta.selectedOptions = page.selected;
  }
  if (page.score !== undefined) meta.score = page.score;
  if (page.purchasedOptions !== undefined) meta.purchasedOptions = page.purchasedOptions;
  return { text: renderWebshopPage(page), actions: [...new Set(actions)], meta };
}

/**
 * Maps one raw WebShop state to an {@link Observation}.
 *
 * @example
 * mapWebshopObservation({ observation: 'WebShop [SEP] Instruction: [SEP] i need red earbuds [SEP] Search' })
 * // { text: 'WebShop search page.\nSearch bar: search[<query>]', actions: ['search[red earbuds]', ...],
 * //   meta: { page: 'search', instruction: 'i need red earbuds' } }
 */
export function mapWebshopObservation(
  raw: WebshopRawObservation | WebshopParsedRawObservation | string,
): Observation {
  if (typeof raw === 'string') return webshopPageToObservation(parseWebshopPage(raw));
  if ('page' in raw) return webshopPageToObservation(raw.page);
  const hints: PageHints = {};
  if (raw.availableActions) {
    hints.clickables = raw.availableActions.clickables;
    hints.hasSearchBar = raw.availableActions.has_search_bar;
  }
  if (raw.url !== undefined) hints.url = raw.url;
  if (raw.asin !== undefined) hints.asin = raw.asin;
  if (raw.query !== undefined) hints.query = raw.query;
  if (raw.selectedOptions !== undefined) hints.selected = raw.selectedOptions;
  const page = parseWebshopPage(raw.observation, raw.mode, hints);
  return webshopPageToObservation(page, raw.instruction ?? page.instruction);
}
