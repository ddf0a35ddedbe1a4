/**
 * What ALFWorld's commands do to what the agent has seen, for the embedded retrieval
 * experience model's episode consistency (`DomainAdapter.experienceHints`).
 */
import type { ConsistencyHints } from '@dreamgym/core/experience';

/** ALFWorld lists objects by name, and instances of one name from the highest number down. */
export function compareAlfworldEntities(a: string, b: string): number {
  const nameA = a.replace(/ \d+$/, '');
  const nameB = b.replace(/ \d+$/, '');
  if (nameA !== nameB) return nameA < nameB ? -1 : 1;
  return Number(b.split(' ').pop()) - Number(a.split(' ').pop());
}

/** `go to` and `examine` revisit a place, `take` removes an object from it, `put` adds one. */
export const alfworldExperienceHints: ConsistencyHints = {
  revisitActionTypes: ['go to', 'examine'],
  removeActionTypes: ['take'],
  placeActionTypes: ['put'],
  compareEntities: compareAlfworldEntities,
};
