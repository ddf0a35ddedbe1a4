/**
 * Candidate actions for WebShop states that do not list them (the synthetic environment):
 * the clickables the state shows, and on a page with the search bar, queries from the
 * instruction, from the human queries of `goal_query_map.json` and from the episode's
 * earlier searches.
 */
import type { Observation, Step } from '@dreamgym/core';
import { formatWebshopAction } from './action-grammar.js';
import { normalizeWebshopInstruction } from './datasets/human-goals.js';
import { webshopPageClickables } from './pages/webshop-page.js';
import { webshopSearchQueries } from './search-queries.js';

/** Where candidate queries come from besides the instruction. */
export interface WebshopCandidateSources {
  /**
   * Human queries by normalised instruction (`loadWebshopGoalQueryMap`, restricted to the
   * train split so evaluation goals never get their human queries).
   */
  queryMap?: ReadonlyMap<string, readonly string[]>;
  /** At most this many queries per state. Default 5. */
  maxQueries?: number;
}

/** The instruction of the episode: the state's `meta.instruction`, else the first step's. */
export function episodeInstruction(
  observation: Observation,
  history: readonly Step[],
): string | undefined {
  const fromMeta = (candidate: Observation | undefined) =>
    typeof candidate?.meta?.instruction === 'string' ? candidate.meta.instruction : undefined;
  return fromMeta(observation) ?? history.map((step) => fromMeta(step.observation)).find(Boolean);
}

/**
 * Proposes the actions that make sense in `observation` after `history`.
 *
 * When the observation lists `actions` (real pages), those are returned. Otherwise:
 * - `click[v]` for every `[v]` the state text shows (buttons, ASINs, option values); when
 *   the text shows none (an experience model answered without a page), those of the latest
 *   page in the history;
 * - where the text shows the search bar, `search[q]` for queries from the instruction
 *   (`webshopSearchQueries`), the human queries for it, and the episode's earlier queries.
 */
export function webshopCandidateActions(
  observation: Observation,
  history: readonly Step[],
  sources: WebshopCandidateSources = {},
): string[] {
  if (observation.actions !== undefined && observation.actions.length > 0) {
    return [...new Set(observation.actions)];
  }
  let page = webshopPageClickables(observation.text);
  if (!page.hasSearchBar && page.values.length === 0) {
    for (let index = history.length - 1; index >= 0; index -= 1) {
      const earlier = webshopPageClickables(history[index]!.observation.text);
      if (earlier.hasSearchBar || earlier.values.length > 0) {
        page = earlier;
        break;
      }
    }
  }
  const candidates: string[] = [];
  if (page.hasSearchBar) {
    const queries: string[] = [];
    const instruction = episodeInstruction(observation, history);
    if (instruction !== undefined) {
      queries.push(...(sources.queryMap?.get(normalizeWebshopInstruction(instruction)) ?? []));
      queries.push(...webshopSearchQueries(instruction));
    }
    for (const step of history) {
      if (step.action.startsWith('search[')) queries.push(step.action.slice(7, -1));
    }
    const seen = new Set<string>();
    for (const query of queries) {
      let action: string;
      try {
        action = formatWebshopAction('search', query);
      } catch {
        continue;
      }
      if (seen.has(action)) continue;
      seen.add(action);
      candidates.push(action);
      if (seen.size >= (sources.maxQueries ?? 5)) break;
    }
  }
  for (const value of page.values) {
    try {
      candidates.push(formatWebshopAction('click', value));
    } catch {
      // A bracketed text that is no clickable value (it holds brackets itself).
    }
  }
  return [...new Set(candidates)];
}
