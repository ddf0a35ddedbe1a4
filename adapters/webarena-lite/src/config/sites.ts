/**
 * WebArena's self-hosted sites and the placeholders configs use for their URLs
 * (`__SHOPPING__/checkout/cart`): each deployment serves the sites at its own addresses,
 * given as `sites` options and substituted when configs are loaded or episodes start.
 */
import { z } from 'zod';

/** The sites of WebArena, with the placeholder that stands for each one's base URL. */
export const WEBARENA_SITES = {
  shopping: '__SHOPPING__',
  shopping_admin: '__SHOPPING_ADMIN__',
  gitlab: '__GITLAB__',
  reddit: '__REDDIT__',
  map: '__MAP__',
  wikipedia: '__WIKIPEDIA__',
  homepage: '__HOMEPAGE__',
} as const;
/** A WebArena site name. */
export type WebarenaSite = keyof typeof WEBARENA_SITES;

const siteUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL, such as http://127.0.0.1:7770' })
  .transform((url) => url.replace(/\/+$/, ''));

/**
 * Base URLs of the deployed sites, as in WebArena's environment variables (`SHOPPING`,
 * `SHOPPING_ADMIN`...). A trailing slash is removed. Only the sites a task uses are needed.
 */
export const WebarenaSitesSchema = z.object({
  /** The storefront (OneStopShop, Magento), e.g. `http://127.0.0.1:7770`. */
  shopping: siteUrl.optional(),
  /** The shop's admin panel, e.g. `http://127.0.0.1:7780/admin`. */
  shopping_admin: siteUrl.optional(),
  /** GitLab, e.g. `http://127.0.0.1:8023`. */
  gitlab: siteUrl.optional(),
  /** The forum (Postmill), e.g. `http://127.0.0.1:9999`. */
  reddit: siteUrl.optional(),
  /** OpenStreetMap, e.g. `http://127.0.0.1:3000`. */
  map: siteUrl.optional(),
  /** Kiwix Wikipedia, e.g. `http://127.0.0.1:8888/wikipedia_en_all_maxi_2022-05/A/User:The_other_Kiwix_guy/Landing`. */
  wikipedia: siteUrl.optional(),
  /** WebArena's homepage listing the sites, e.g. `http://127.0.0.1:4399`. */
  homepage: siteUrl.optional(),
});
/** Site URLs as a caller writes them. */
export type WebarenaSitesInput = z.input<typeof WebarenaSitesSchema>;
/** Site URLs after validation. */
export type WebarenaSites = z.output<typeof WebarenaSitesSchema>;

const PLACEHOLDER = /__([A-Z]+(?:_[A-Z]+)*)__/g;

const SITE_OF_PLACEHOLDER = new Map<string, WebarenaSite>(
  Object.entries(WEBARENA_SITES).map(([site, placeholder]) => [placeholder, site as WebarenaSite]),
);

/** The placeholders in `text` that name no WebArena site (`__FOO__`). */
export function unknownPlaceholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)]
    .map((match) => match[0])
    .filter((placeholder) => !SITE_OF_PLACEHOLDER.has(placeholder));
}

/** The sites whose placeholders appear in `text`. */
export function sitesIn(text: string): WebarenaSite[] {
  const found = new Set<WebarenaSite>();
  for (const match of text.matchAll(PLACEHOLDER)) {
    const site = SITE_OF_PLACEHOLDER.get(match[0]);
    if (site) found.add(site);
  }
  return [...found];
}

/**
 * Replaces every site placeholder in `text` whose site has a URL in `sites`; placeholders
 * of sites without a URL stay (see {@link sitesIn} to find them).
 */
export function resolvePlaceholders(text: string, sites: WebarenaSites): string {
  return text.replace(PLACEHOLDER, (placeholder) => {
    const site = SITE_OF_PLACEHOLDER.get(placeholder);
    const url = site === undefined ? undefined : sites[site];
    return url ?? placeholder;
  });
}

/** Replaces placeholders in every string inside `value` (objects and arrays walked). */
export function resolvePlaceholdersDeep<T>(value: T, sites: WebarenaSites): T {
  if (typeof value === 'string') return resolvePlaceholders(value, sites) as T;
  if (Array.isArray(value)) return value.map((item) => resolvePlaceholdersDeep(item, sites)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => [name, resolvePlaceholdersDeep(item, sites)]),
    ) as T;
  }
  return value;
}
