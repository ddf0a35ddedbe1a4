/**
 * What TextWorld's commands do to what the agent has seen, for the embedded retrieval
 * experience model's episode consistency (`DomainAdapter.experienceHints`).
 */
import type { ConsistencyHints } from '@dreamgym/core/experience';

/**
 * `examine` looks at a thing again, `take X from Y` removes X from Y's listing, `put X on Y`
 * and `insert X into Y` add it. TextWorld lists things as "a carrot, some milk and a knife".
 */
export const textworldExperienceHints: ConsistencyHints = {
  revisitActionTypes: ['examine'],
  removeActionTypes: ['take'],
  placeActionTypes: ['put', 'insert'],
  finalSeparator: ' and ',
  noEffectObservations: [
    "You can't see any such thing.",
    "That's not a verb I recognise.",
    'You can only do one thing at a time.',
  ],
};
