/**
 * What WebShop's actions do to what the agent has seen, for the embedded retrieval
 * experience model's episode consistency (`DomainAdapter.experienceHints`).
 */
import type { ConsistencyHints } from '@dreamgym/core/experience';

/**
 * Searching a query again shows the same results. Clicks cannot be replayed by type
 * (`click[< Prev]` leads back to different pages), and nothing is taken or placed.
 */
export const webshopExperienceHints: ConsistencyHints = {
  revisitActionTypes: ['search'],
  noEffectObservations: ['Nothing happens.'],
};
