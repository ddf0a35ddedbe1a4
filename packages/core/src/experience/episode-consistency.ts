/**
 * Episode consistency: what the history already showed about a place is reused when
 * the agent looks at it again, edited by what the episode moved in or out since
 * (`take apple 1 from countertop 1` removes the apple from the countertop's listing).
 * Domain-agnostic: the domain names its action types through {@link ConsistencyHints}.
 */
import type { ConsistencyHints, ParsedAction } from '../adapter.js';
import type { Observation, Step } from '../mdp/schemas.js';
import { addToListing, mentionsEntity, removeFromListing } from './listing.js';

export type { ConsistencyHints };

/** A state text recalled from the history. */
export interface Recollection {
  text: string;
  /** Index of the history step whose outcome was recalled. */
  fromStep: number;
  /** Edits applied since: `-apple 1` removed, `+mug 2` added. */
  edits: string[];
}

function sameArguments(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((argument, index) => argument === b[index]);
}

/**
 * Recalls what looking at the current action's place showed last, with later moves
 * applied. Undefined when the action is not a revisit, the place was never looked at,
 * or something changed it in a way a listing edit cannot express (opened, closed).
 */
export function recallFromHistory(
  input: { history: readonly Step[]; state: Observation; action: string },
  parse: (text: string) => ParsedAction,
  hints: ConsistencyHints,
): Recollection | undefined {
  const revisit = new Set(hints.revisitActionTypes ?? []);
  if (revisit.size === 0) return undefined;
  const noEffect = new Set((hints.noEffectObservations ?? ['Nothing happens.']).map(normalize));
  let current: ParsedAction;
  try {
    current = parse(input.action);
  } catch {
    return undefined;
  }
  if (!revisit.has(current.type) || current.args.length === 0) return undefined;
  const outcome = (index: number) => input.history[index + 1]?.observation.text ?? input.state.text;
  const parsed = input.history.map((step) => {
    try {
      return parse(step.action);
    } catch {
      return undefined;
    }
  });
  let from = -1;
  for (let index = input.history.length - 1; index >= 0; index -= 1) {
    const step = parsed[index];
    if (step && revisit.has(step.type) && sameArguments(step.args, current.args)) {
      if (!noEffect.has(normalize(outcome(index)))) from = index;
      if (from >= 0) break;
    }
  }
  if (from < 0) return undefined;
  const place = current.args[current.args.length - 1]!;
  const removes = new Set(hints.removeActionTypes ?? []);
  const places = new Set(hints.placeActionTypes ?? []);
  let text: string | undefined = outcome(from);
  const edits: string[] = [];
  for (let index = from + 1; index < input.history.length && text !== undefined; index += 1) {
    const step = parsed[index];
    if (step === undefined) continue;
    if (!step.args.includes(place) || noEffect.has(normalize(outcome(index)))) continue;
    const moved = step.args[0]!;
    const target = step.args[step.args.length - 1];
    if (target === place && removes.has(step.type) && moved !== place) {
      text = mentionsEntity(text, moved) ? removeFromListing(text, moved, hints) : text;
      edits.push(`-${moved}`);
    } else if (target === place && places.has(step.type) && moved !== place) {
      text = addToListing(text, moved, hints);
      edits.push(`+${moved}`);
    } else if (step.args.length === 1 && !revisit.has(step.type)) {
      // Opened, closed, switched: the place looks different in a way we cannot write.
      return undefined;
    }
  }
  return text === undefined ? undefined : { text, fromStep: from, edits };
}

function normalize(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}
