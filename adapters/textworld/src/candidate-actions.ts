/**
 * Candidate actions: the engine's admissible commands where a state lists them, and for the
 * synthetic environment's predicted states (text only) the commands of the grammar over what
 * the episode has shown: the room, the things in it, where they lie, what is in hand.
 */
import type { Observation, Step } from '@dreamgym/core';
import { parseTextworldAction } from './action-grammar.js';
import {
  presentThings,
  TEXTWORLD_KNOWN_NAMES,
  textworldKinds,
  trackTextworldEpisode,
} from './episode-tracker.js';
import { TEXTWORLD_COOKERS, TEXTWORLD_CUTTING_VERBS } from './vocabulary.js';

export { mentionedTextworldEntities } from './episode-tracker.js';

/**
 * Proposes the commands that make sense after `history` ended in `observation`.
 *
 * When the observation lists admissible `actions` (the real engine), those are returned.
 * Otherwise, from the episode so far (`trackTextworldEpisode`):
 * - `look`, `inventory`, `go` for each exit the room's texts named, and `prepare meal` with
 *   food in hand;
 * - `examine` every thing in the room or in hand; `open` a closed (or unknown) container or
 *   door there, `close` an open (or unknown) one;
 * - `take X from Y` for a portable thing last seen in or on a holder of the room (not in a
 *   closed container), `take X` for one on the floor;
 * - for each thing in hand: `drop`, `eat` a food or the meal, `put X on S` / `insert X into C`
 *   for the supporters and open containers of the room, `cook X with` each cooker of the
 *   room, and with the knife in hand `slice`/`dice`/`chop X with knife`.
 * Names are the cooking games' things and any the episode's admissible lists named.
 */
export function textworldCandidateActions(
  observation: Observation,
  history: readonly Step[],
): string[] {
  if (observation.actions !== undefined && observation.actions.length > 0) {
    return [...new Set(observation.actions)];
  }
  const names = new Set<string>(TEXTWORLD_KNOWN_NAMES);
  for (const step of history) {
    for (const action of step.observation.actions ?? []) {
      try {
        for (const argument of parseTextworldAction(action).args) names.add(argument);
      } catch {
        // Not a command of the grammar: nothing to learn from it.
      }
    }
  }
  const vocabulary = [...names].sort((a, b) => b.length - a.length);
  const state = trackTextworldEpisode(observation, history, vocabulary);
  const present = presentThings(state);
  const here = new Set(present);
  const { held, opened, location } = state;
  const candidates = new Set<string>(['look', 'inventory']);
  // The engine admits `prepare meal` only with the recipe's ingredients in hand: never propose
  // it empty-handed (a synthetic environment that accepted it would pay for a meal of nothing).
  if ([...held].some((item) => textworldKinds.isFood(item)) && !held.has('meal')) {
    candidates.add('prepare meal');
  }
  for (const direction of state.exits.get(state.room) ?? []) candidates.add(`go ${direction}`);
  for (const thing of present) {
    if (thing === 'meal' && !held.has('meal')) continue;
    candidates.add(`examine ${thing}`);
    if (textworldKinds.isOpenable(thing)) {
      if (opened.get(thing) !== true) candidates.add(`open ${thing}`);
      if (opened.get(thing) !== false) candidates.add(`close ${thing}`);
    }
    const where = location.get(thing);
    if (!textworldKinds.isPortable(thing) || held.has(thing) || where === undefined) continue;
    if (where === 'the floor') candidates.add(`take ${thing}`);
    else if (here.has(where) && opened.get(where) !== false) {
      candidates.add(`take ${thing} from ${where}`);
    }
  }
  for (const item of held) {
    candidates.add(`drop ${item}`);
    if (textworldKinds.isFood(item) || item === 'meal') candidates.add(`eat ${item}`);
    if (item === 'meal') continue;
    for (const holder of present) {
      if (textworldKinds.isSupporter(holder)) candidates.add(`put ${item} on ${holder}`);
      if (textworldKinds.isContainer(holder) && opened.get(holder) !== false) {
        candidates.add(`insert ${item} into ${holder}`);
      }
    }
    if (!textworldKinds.isFood(item)) continue;
    for (const cooker of TEXTWORLD_COOKERS) {
      if (here.has(cooker)) candidates.add(`cook ${item} with ${cooker}`);
    }
    if (held.has('knife')) {
      for (const verb of TEXTWORLD_CUTTING_VERBS) candidates.add(`${verb} ${item} with knife`);
    }
  }
  return [...candidates].filter((candidate) => {
    try {
      return parseTextworldAction(candidate).text === candidate;
    } catch {
      return false;
    }
  });
}
