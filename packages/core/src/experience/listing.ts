/**
 * Editing English listings in state texts (`you see a apple 1, a bread 1, and a mug 2.`):
 * removing an entity that was taken and adding one that was put, so a revisited place
 * shows what the episode did to it.
 */
import type { ListingStyle } from '../adapter.js';
import { BoundedMemo } from './bounded-memo.js';

export type { ListingStyle };

interface Listing {
  start: number;
  end: number;
  items: Array<{ article: string; name: string }>;
  finalSeparator: string | undefined;
}

const ITEM = /^(a|an) (\S.*)$/i;
const SEPARATORS = /,\s*and\s+|,\s+|\s+and\s+/;

/** The first listing in `text`: a run of `a X` items up to the end of its sentence. */
function findListing(text: string): Listing | undefined {
  for (const start of text.matchAll(/\b(?:a|an) /gi)) {
    const from = start.index;
    const stop = text.slice(from).search(/[.;:!?\n]/);
    const end = stop < 0 ? text.length : from + stop;
    const parts = text.slice(from, end).split(SEPARATORS);
    const items = parts.map((part) => ITEM.exec(part.trim()));
    if (items.every((item) => item !== null)) {
      const separators = text.slice(from, end).match(new RegExp(SEPARATORS, 'g')) ?? [];
      return {
        start: from,
        end,
        items: items.map((item) => ({ article: item[1]!, name: item[2]! })),
        finalSeparator: separators.length > 0 ? separators[separators.length - 1] : undefined,
      };
    }
  }
  return undefined;
}

function joinItems(
  items: ReadonlyArray<{ article: string; name: string }>,
  finalSeparator: string,
): string {
  const words = items.map((item) => `${item.article} ${item.name}`);
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')}${finalSeparator}${words[words.length - 1]}`;
}

/** True when `text` names `entity` as a whole name. */
export function mentionsEntity(text: string, entity: string): boolean {
  return wholeName.get(entity, wholeNamePattern).test(text);
}

/** The pattern of `entity` as a whole name (not global, so `test` keeps no state). */
function wholeNamePattern(entity: string): RegExp {
  const escaped = entity.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`, 'i');
}

/** Patterns of the names asked about (the same entities recur from step to step). */
const wholeName = new BoundedMemo<string, RegExp>(4096);

/**
 * Removes `entity` from the first listing of `text`, writing an empty listing as
 * `style.emptyListing`. Undefined when no listing holds it.
 *
 * @example removeFromListing('On the desk 1, you see a mug 1, and a pen 2.', 'mug 1') // 'On the desk 1, you see a pen 2.'
 */
export function removeFromListing(
  text: string,
  entity: string,
  style: ListingStyle = {},
): string | undefined {
  const listing = findListing(text);
  if (!listing) return undefined;
  const kept = listing.items.filter((item) => item.name.toLowerCase() !== entity.toLowerCase());
  if (kept.length === listing.items.length) return undefined;
  const replacement =
    kept.length === 0
      ? (style.emptyListing ?? 'nothing')
      : joinItems(kept, listing.finalSeparator ?? style.finalSeparator ?? ', and ');
  return text.slice(0, listing.start) + replacement + text.slice(listing.end);
}

/**
 * Adds `entity` to the first listing of `text` (or replaces an empty listing with it),
 * in `style.compareEntities` order. Undefined when `text` has no listing to extend.
 *
 * @example addToListing('On the desk 1, you see nothing.', 'mug 1') // 'On the desk 1, you see a mug 1.'
 */
export function addToListing(
  text: string,
  entity: string,
  style: ListingStyle = {},
): string | undefined {
  const listing = findListing(text);
  if (!listing) {
    const empty = (style.emptyListing ?? 'nothing').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const match = new RegExp(`\\b${empty}(?=\\s*[.;:!?\\n]|$)`).exec(text);
    if (!match) return undefined;
    return `${text.slice(0, match.index)}${style.article ?? 'a'} ${entity}${text.slice(match.index + match[0].length)}`;
  }
  if (listing.items.some((item) => item.name.toLowerCase() === entity.toLowerCase())) return text;
  const items = [...listing.items];
  const added = { article: items[0]?.article ?? style.article ?? 'a', name: entity };
  const compare = style.compareEntities;
  const at = compare ? items.findIndex((item) => compare(entity, item.name) < 0) : -1;
  items.splice(at < 0 ? items.length : at, 0, added);
  const replacement = joinItems(items, listing.finalSeparator ?? style.finalSeparator ?? ', and ');
  return text.slice(0, listing.start) + replacement + text.slice(listing.end);
}
