/**
 * Reading a WebShop page from what a server gives: the `text` observation mode (visible
 * texts joined by ` [SEP] `), `text_rich` (one text per line, clickables in
 * `[button] ... [button_]`), or the page's HTML. Each is first turned into the page's
 * visible texts with their roles, then into a {@link WebshopPage}.
 */
import { ASIN_PATTERN, canonicalClickValue, WEBSHOP_BUTTONS } from '../action-grammar.js';
import {
  elements,
  type HtmlElement,
  hasClass,
  parseHtml,
  textOf,
  visibleTexts,
} from './html-document.js';
import type { WebshopItemOption, WebshopListedProduct, WebshopPage } from './webshop-page.js';

/** The observation modes of WebShop's text environment. */
export type WebshopObservationMode = 'text' | 'text_rich' | 'html';

/** One visible text of a page and what it is. */
interface Segment {
  text: string;
  role: 'text' | 'button' | 'product' | 'option';
  /** For option values whose option name is known (HTML). */
  optionName?: string;
  /** `text_rich` marks chosen options and visited products. */
  clicked?: boolean;
}

/** What the caller knows about the page besides its text. */
export interface PageHints {
  /** WebShop's clickables for the page (lower case), from `GET /available_actions`. */
  clickables?: readonly string[];
  hasSearchBar?: boolean;
  /** The page URL (`.../item_page/<session>/<asin>/<keywords>/<page>/<options>`), when known. */
  url?: string;
  /** The product shown, the query searched and the options chosen, when the caller tracked them. */
  asin?: string;
  query?: string;
  selected?: Record<string, string>;
}

const KNOWN_BUTTONS = new Set(Object.values(WEBSHOP_BUTTONS).map((button) => button.toLowerCase()));
const NAVIGATION = new Set<string>([
  WEBSHOP_BUTTONS.backToSearch,
  WEBSHOP_BUTTONS.previousPage,
  WEBSHOP_BUTTONS.nextPage,
  WEBSHOP_BUTTONS.backToResults,
  WEBSHOP_BUTTONS.backToItem,
]);
const SECTIONS = new Set<string>([
  WEBSHOP_BUTTONS.description,
  WEBSHOP_BUTTONS.features,
  WEBSHOP_BUTTONS.reviews,
  WEBSHOP_BUTTONS.attributes,
]);
/** Option names WebShop products use, to group option values when nothing else tells names from values. */
const KNOWN_OPTION_NAMES = new Set(
  [
    'color',
    'colour',
    'size',
    'style',
    'pattern',
    'pattern name',
    'flavor',
    'flavor name',
    'scent',
    'scent name',
    'material',
    'material type',
    'item package quantity',
    'number of items',
    'size name',
    'style name',
    'color name',
    'capacity',
    'length',
    'width',
    'item shape',
    'configuration',
    'edition',
    'format',
    'package type',
    'team name',
    'fit type',
    'model',
    'design',
    'unit count',
    'wattage',
    'voltage',
    'finish',
    'finish type',
    'shape',
    'quantity',
    'count',
    'weight',
  ].map((name) => name.toLowerCase()),
);
const PAGE_COUNTER = [
  /^Page (\d+) \(Total results: (\d+)\)$/i,
  /^Page (\d+) \(\d+-\d+\) of (\d+) total results$/i,
];

function roleOf(text: string, clickables: ReadonlySet<string> | undefined): Segment['role'] {
  const lower = text.toLowerCase();
  if (KNOWN_BUTTONS.has(lower)) return 'button';
  if (clickables !== undefined) {
    if (!clickables.has(lower) || lower === 'search') return 'text';
    return ASIN_PATTERN.test(text) ? 'product' : 'option';
  }
  return ASIN_PATTERN.test(text) && text === text.toUpperCase() ? 'product' : 'text';
}

function lowerSet(values: readonly string[] | undefined): Set<string> | undefined {
  return values === undefined ? undefined : new Set(values.map((value) => value.toLowerCase()));
}

/** Segments of WebShop's `text` mode. */
function textSegments(observation: string, hints: PageHints): Segment[] {
  const clickables = lowerSet(hints.clickables);
  return observation
    .split(/\s*\[SEP\]\s*/)
    .map((text) => text.trim())
    .filter((text) => text !== '')
    .map((text) => ({ text, role: roleOf(text, clickables) }));
}

/** Segments of WebShop's `text_rich` mode. */
function richTextSegments(observation: string, hints: PageHints): Segment[] {
  const clickables = lowerSet(hints.clickables);
  const segments: Segment[] = [];
  for (const raw of observation.split('\n')) {
    const line = raw.trim();
    if (line === '' || /^You have clicked .*\.$/.test(line)) continue;
    const button = /^\[(clicked )?button\] (.*) \[(?:clicked )?button_\]$/.exec(line);
    if (button) {
      const text = button[2]!.trim();
      const role = roleOf(text, clickables);
      segments.push({
        text,
        role: role === 'text' ? (ASIN_PATTERN.test(text) ? 'product' : 'option') : role,
        clicked: button[1] !== undefined,
      });
    } else {
      segments.push({ text: line, role: 'text' });
    }
  }
  return segments;
}

function closest(element: HtmlElement, test: (element: HtmlElement) => boolean) {
  for (let node: HtmlElement | undefined = element; node; node = node.parent) {
    if (test(node)) return node;
  }
  return undefined;
}

/** Segments of a page's HTML, with roles from the markup. */
function htmlSegments(root: HtmlElement): Segment[] {
  const radioByIdentifier = new Map<string, HtmlElement>();
  for (const element of elements(root)) {
    if (element.tag === 'input' && element.attributes.type === 'radio' && element.attributes.id) {
      radioByIdentifier.set(element.attributes.id, element);
    }
  }
  return visibleTexts(root).map((node) => {
    const text = node.text.trim();
    if (closest(node.parent, (element) => element.tag === 'button')) {
      return { text, role: 'button' };
    }
    if (closest(node.parent, (element) => hasClass(element, 'product-link'))) {
      return { text, role: 'product' };
    }
    const label = closest(node.parent, (element) => element.tag === 'label');
    const radio = label ? radioByIdentifier.get(label.attributes.for ?? '') : undefined;
    if (radio) {
      const segment: Segment = { text: radio.attributes.value ?? text, role: 'option' };
      if (radio.attributes.name) segment.optionName = radio.attributes.name;
      return segment;
    }
    return { text, role: 'text' };
  });
}

/** The options a WebShop item page was rendered with (its script's `JSON.parse(\`{...}\`)`). */
function htmlSelectedOptions(root: HtmlElement): Record<string, string> | undefined {
  for (const element of elements(root)) {
    if (element.tag !== 'script') continue;
    const match = /let options = JSON\.parse\(`(\{[^`]*\})`\)/.exec(textOf(element));
    if (match) return parseOptions(match[1]!);
  }
  return undefined;
}

/** Parses an options dictionary written as JSON or as a Python dict (`{'size': '8'}`). */
export function parseOptions(text: string): Record<string, string> | undefined {
  for (const candidate of [text, text.replace(/'/g, '"')]) {
    try {
      const value = JSON.parse(candidate) as unknown;
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        return Object.fromEntries(
          Object.entries(value as Record<string, unknown>).map(([key, entry]) => [
            key,
            String(entry),
          ]),
        );
      }
    } catch {
      // Not this spelling.
    }
  }
  return undefined;
}

/** What a WebShop URL says about its page. */
export interface WebshopUrlParts {
  page: 'index' | 'search_results' | 'item_page' | 'item_sub_page' | 'done';
  session?: string;
  asin?: string;
  keywords?: string[];
  pageNumber?: number;
  section?: string;
  options?: Record<string, string>;
}

function parseKeywords(text: string): string[] {
  if (text.startsWith('[')) {
    const words = [...text.matchAll(/'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"/g)].map(
      (match) => match[1] ?? match[2] ?? '',
    );
    if (words.length > 0) return words;
  }
  return text.split(/[+ ]/).filter(Boolean);
}

/** Splits a WebShop page URL into its parts (session, ASIN, keywords, page, options). */
export function parseWebshopUrl(url: string): WebshopUrlParts {
  let path: string;
  try {
    path = new URL(url, 'http://webshop.invalid').pathname;
  } catch {
    path = url;
  }
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return part;
      }
    });
  const [kind, ...rest] = parts;
  const options = (text: string | undefined) =>
    text === undefined ? undefined : parseOptions(text);
  const withOptional = (value: WebshopUrlParts): WebshopUrlParts =>
    Object.fromEntries(
      Object.entries(value).filter(([, entry]) => entry !== undefined),
    ) as unknown as WebshopUrlParts;
  switch (kind) {
    case 'search_results':
      return withOptional({
        page: 'search_results',
        session: rest[0],
        ...(rest[1] === undefined ? {} : { keywords: parseKeywords(rest[1]) }),
        ...(rest[2] === undefined ? {} : { pageNumber: Number(rest[2]) }),
      });
    case 'item_page':
      return withOptional({
        page: 'item_page',
        session: rest[0],
        asin: rest[1]?.toUpperCase(),
        ...(rest[2] === undefined ? {} : { keywords: parseKeywords(rest[2]) }),
        ...(rest[3] === undefined ? {} : { pageNumber: Number(rest[3]) }),
        options: options(rest[4]),
      });
    case 'item_sub_page':
      return withOptional({
        page: 'item_sub_page',
        session: rest[0],
        asin: rest[1]?.toUpperCase(),
        ...(rest[2] === undefined ? {} : { keywords: parseKeywords(rest[2]) }),
        ...(rest[3] === undefined ? {} : { pageNumber: Number(rest[3]) }),
        section: rest[4],
        options: options(rest[5]),
      });
    case 'done':
      return withOptional({
        page: 'done',
        session: rest[0],
        asin: rest[1]?.toUpperCase(),
        options: options(rest[2]),
      });
    default:
      return withOptional({ page: 'index', session: kind });
  }
}

function afterLabel(segments: readonly Segment[], label: string): string | undefined {
  const index = segments.findIndex((segment) => segment.text === label);
  return index >= 0 ? segments[index + 1]?.text : undefined;
}

/** Builds the page from its segments. */
function buildPage(
  all: Segment[],
  hints: PageHints,
  htmlSelected?: Record<string, string>,
): WebshopPage {
  const url = hints.url === undefined ? undefined : parseWebshopUrl(hints.url);
  if (all.some((segment) => segment.text === 'Thank you for shopping with us!')) {
    const scoreIndex = all.findIndex((segment) => segment.text.startsWith('Your score'));
    const score = Number(all[scoreIndex + 1]?.text);
    const options = parseOptions(afterLabel(all, 'options') ?? '') ?? url?.options;
    return {
      kind: 'done',
      hasSearchBar: false,
      buttons: [],
      ...(scoreIndex >= 0 && Number.isFinite(score) ? { score } : {}),
      ...(url?.asin ? { asin: url.asin } : {}),
      ...(options ? { purchasedOptions: options } : {}),
    };
  }

  let instruction: string | undefined;
  let query = hints.query ?? url?.keywords?.join(' ');
  const segments: Segment[] = [];
  for (let index = 0; index < all.length; index += 1) {
    const segment = all[index]!;
    if (segment.role === 'text' && /^Instruction:/.test(segment.text)) {
      const rest = segment.text.slice('Instruction:'.length).trim();
      if (rest !== '') instruction = rest;
      else {
        instruction = all[index + 1]?.text;
        index += 1;
      }
      continue;
    }
    if (segment.role === 'text' && /^Current Query:/.test(segment.text)) {
      const rest = segment.text.slice('Current Query:'.length).trim();
      if (rest !== '' && query === undefined) query = rest.replace(/\s+/g, ' ');
      continue;
    }
    segments.push(segment);
  }
  const hasSearchBar =
    hints.hasSearchBar ??
    (segments[0]?.text === 'WebShop' ||
      (segments.at(-1)?.text === 'Search' &&
        segments.every((segment) => segment.role !== 'product')));
  const base = { ...(instruction === undefined ? {} : { instruction }), hasSearchBar };
  if (hasSearchBar) return { ...base, kind: 'search', buttons: [] };

  const buttons = segments
    .filter((segment) => segment.role === 'button')
    .map((segment) => canonicalClickValue(segment.text));
  const counterIndex = segments.findIndex((segment) =>
    PAGE_COUNTER.some((pattern) => pattern.test(segment.text)),
  );
  if (counterIndex >= 0) {
    const counter = PAGE_COUNTER.map((pattern) => pattern.exec(segments[counterIndex]!.text)).find(
      Boolean,
    )!;
    const products: WebshopListedProduct[] = [];
    for (const segment of segments.slice(counterIndex + 1)) {
      if (segment.role === 'button') continue;
      if (
        segment.role === 'product' ||
        (segment.role === 'text' &&
          ASIN_PATTERN.test(segment.text) &&
          segment.text === segment.text.toUpperCase())
      ) {
        products.push({ asin: segment.text.toUpperCase() });
        continue;
      }
      const product = products.at(-1);
      if (!product) continue;
      if (segment.text.startsWith('$') && product.price === undefined) product.price = segment.text;
      else if (product.title === undefined) product.title = segment.text;
    }
    return {
      ...base,
      kind: 'results',
      buttons,
      ...(query === undefined ? {} : { query }),
      pageNumber: Number(counter[1]),
      totalResults: Number(counter[2]),
      products,
    };
  }

  const asin = hints.asin?.toUpperCase() ?? url?.asin;
  if (buttons.includes(WEBSHOP_BUTTONS.buyNow)) {
    const priceIndex = segments.findIndex(
      (segment) => segment.role === 'text' && segment.text.startsWith('Price:'),
    );
    const lastNavigation = segments.reduce(
      (last, segment, index) =>
        segment.role === 'button' && NAVIGATION.has(canonicalClickValue(segment.text))
          ? index
          : last,
      -1,
    );
    const titleIndex = priceIndex > 0 ? priceIndex - 1 : -1;
    const region = segments.slice(lastNavigation + 1, titleIndex >= 0 ? titleIndex : undefined);
    const options = groupOptions(region, hints.clickables !== undefined);
    const rating = segments.find((segment) => segment.text.startsWith('Rating:'));
    const selected: Record<string, string> = {
      ...(url?.options ?? {}),
      ...(htmlSelected ?? {}),
      ...(hints.selected ?? {}),
    };
    for (const option of options) {
      const clicked = region.find(
        (segment) => segment.clicked && option.values.includes(segment.text),
      );
      if (clicked) selected[option.name] = clicked.text;
    }
    return {
      ...base,
      kind: 'item',
      buttons,
      ...(asin === undefined ? {} : { asin }),
      ...(titleIndex >= 0 ? { title: segments[titleIndex]!.text } : {}),
      ...(priceIndex >= 0
        ? { price: segments[priceIndex]!.text.slice('Price:'.length).trim() }
        : {}),
      ...(rating ? { rating: rating.text.slice('Rating:'.length).trim() } : {}),
      options,
      selected,
    };
  }

  const detail = segments
    .filter((segment) => segment.role === 'text')
    .map((segment) => segment.text)
    .join(' ');
  const section = url?.section;
  return {
    ...base,
    kind: 'item-detail',
    buttons,
    ...(asin === undefined ? {} : { asin }),
    ...(section !== undefined && SECTIONS.has(section) ? { section } : {}),
    ...(detail === '' ? {} : { detail }),
  };
}

/**
 * Groups an item page's option texts into options. Option values are clickables; names are
 * not. When the clickables are unknown (plain `text` mode), known option names and the
 * first text start groups.
 */
function groupOptions(region: readonly Segment[], rolesKnown: boolean): WebshopItemOption[] {
  const options: WebshopItemOption[] = [];
  for (const segment of region) {
    if (segment.role === 'button' || segment.role === 'product') continue;
    const byName = segment.optionName;
    if (segment.role === 'option') {
      const name = byName ?? options.at(-1)?.name ?? 'option';
      let option = options.find((candidate) => candidate.name === name);
      if (!option) {
        option = { name, values: [] };
        options.push(option);
      }
      option.values.push(segment.text);
      continue;
    }
    const startsGroup =
      rolesKnown || options.length === 0 || KNOWN_OPTION_NAMES.has(segment.text.toLowerCase());
    if (startsGroup) options.push({ name: segment.text, values: [] });
    else options.at(-1)!.values.push(segment.text);
  }
  return options.filter((option) => option.values.length > 0);
}

/** Guesses the observation mode of a server's observation. */
export function detectObservationMode(observation: string): WebshopObservationMode {
  if (/^\s*(<!doctype html|<html)/i.test(observation)) return 'html';
  if (/\[(clicked )?button\] .* \[(clicked )?button_\]/.test(observation)) return 'text_rich';
  return 'text';
}

/**
 * Reads a WebShop page from a server observation.
 *
 * @example
 * parseWebshopPage('WebShop [SEP] Instruction: [SEP] i need a red earbud [SEP] Search')
 * // { kind: 'search', instruction: 'i need a red earbud', hasSearchBar: true, buttons: [] }
 */
export function parseWebshopPage(
  observation: string,
  mode: WebshopObservationMode = detectObservationMode(observation),
  hints: PageHints = {},
): WebshopPage {
  if (mode === 'html') {
    const root = parseHtml(observation);
    const withSearch = {
      ...hints,
      hasSearchBar:
        hints.hasSearchBar ??
        [...elements(root)].some((element) => element.attributes.id === 'search_input'),
    };
    const segments = htmlSegments(root).filter(
      (segment) =>
        !(withSearch.hasSearchBar && segment.role === 'button' && segment.text === 'Search'),
    );
    return buildPage(segments, withSearch, htmlSelectedOptions(root));
  }
  const segments =
    mode === 'text_rich' ? richTextSegments(observation, hints) : textSegments(observation, hints);
  return buildPage(segments, hints);
}
