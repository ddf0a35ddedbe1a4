/**
 * `url_match`: the URL the episode ended on against the config's reference URL(s)
 * (alternatives separated by ` |OR| `).
 */
import type { EvaluationCheck } from './evaluation-result.js';

/** Drops a trailing slash and reads `localhost` as `127.0.0.1`. */
function cleanUrl(url: string): string {
  return url.trim().replace('://localhost', '://127.0.0.1').replace(/\/+$/, '');
}

/** `host/path` without a trailing slash, and the query's values by name. */
function splitUrl(url: string): { base: string; query: Map<string, Set<string>> } {
  const query = new Map<string, Set<string>>();
  try {
    const parsed = new URL(url);
    for (const [name, value] of parsed.searchParams) {
      if (!query.has(name)) query.set(name, new Set());
      query.get(name)!.add(value);
    }
    return { base: cleanUrl(`${parsed.host}${parsed.pathname}`), query };
  } catch {
    return { base: cleanUrl(url), query };
  }
}

/**
 * Whether `pageUrl` matches `referenceUrl` under `rule`:
 * - `GOLD in PRED` (WebArena's rule): one reference's `host/path` appears in the page's
 *   `host/path`, and for every query parameter of the references the page has one of its
 *   values (so parameter order does not matter);
 * - `EXACT` (the default when a config names no rule): the page URL equals one reference.
 */
export function urlMatches(
  referenceUrl: string,
  pageUrl: string,
  rule: 'GOLD in PRED' | 'EXACT' = 'EXACT',
): boolean {
  const references = referenceUrl.split(' |OR| ').map(cleanUrl);
  const page = cleanUrl(pageUrl);
  if (rule === 'EXACT') return references.includes(page);
  const predicted = splitUrl(page);
  const wanted = new Map<string, Set<string>>();
  const bases: string[] = [];
  for (const reference of references) {
    const { base, query } = splitUrl(reference);
    bases.push(base);
    for (const [name, values] of query) {
      if (!wanted.has(name)) wanted.set(name, new Set());
      for (const value of values) wanted.get(name)!.add(value);
    }
  }
  if (!bases.some((base) => predicted.base.includes(base))) return false;
  for (const [name, values] of wanted) {
    const got = predicted.query.get(name);
    if (!got || ![...values].some((value) => got.has(value))) return false;
  }
  return true;
}

/** The `url_match` check of an episode that ended on `pageUrl`. */
export function evaluateUrlMatch(
  referenceUrl: string,
  pageUrl: string,
  rule: 'GOLD in PRED' | 'EXACT' | null | undefined,
): EvaluationCheck {
  const effective = rule ?? 'EXACT';
  return {
    evaluator: 'url_match',
    kind: effective,
    reference: referenceUrl,
    actual: pageUrl,
    passed: urlMatches(referenceUrl, pageUrl, effective),
  };
}
