/**
 * Candidate actions: what an agent could do next, for states that do not list their own
 * admissible actions (the synthetic environment's predicted states).
 */
import type { Observation, Step } from '@dreamgym/core';
import { notImplemented } from './not-implemented.js';

/** Unique actions the grammar accepts, proposed from the observation and the episode so far. */
export function miniwobCandidateActions(
  observation: Observation,
  history: readonly Step[],
): string[] {
  void observation;
  void history;
  throw notImplemented(
    'candidateActions',
    'src/candidate-actions.ts',
    'write miniwobCandidateActions(observation, history): propose unique actions that parseMiniwobAction accepts, from what the observation text and the history show',
    5,
  );
}
