/**
 * Reads what an ALFWorld episode has shown so far out of its texts: the receptacles of
 * the room, where the agent stands, what it saw where, what is open, what it holds.
 * The synthetic environment has no engine state, so this is all the adapter can know.
 */
import type { Observation, Step } from '@dreamgym/core';
import { parseAlfworldAction } from './action-grammar.js';

/** What an ALFWorld episode has revealed after its last observation. */
export interface AlfworldEpisodeState {
  /** Every receptacle named so far, in order of first mention (room listing first). */
  receptacles: string[];
  /** The receptacle the agent went to last, when it has gone anywhere. */
  location: string | undefined;
  /** Objects last seen in or on each receptacle. */
  contents: Map<string, Set<string>>;
  /** `true` open, `false` closed, for the openable receptacles seen so far. */
  opened: Map<string, boolean>;
  /** The object in the agent's hands. */
  held: string | undefined;
}

const NAME = '[a-z]+ \\d+';
const ROOM_LISTING = /Looking quickly around you, you see ([^.]*)\./g;
const ON_RECEPTACLE = new RegExp(`On the (${NAME}), you see ([^.]*)\\.`, 'g');
const OPEN_RECEPTACLE = new RegExp(`The (${NAME}) is open\\. In it, you see ([^.]*)\\.`, 'g');
const CLOSED_RECEPTACLE = new RegExp(`The (${NAME}) is closed\\.`, 'g');
const FACING = new RegExp(`You are facing the (${NAME})`, 'g');
const OPENED = new RegExp(`You open the (${NAME})\\.`, 'g');
const CLOSED = new RegExp(`You close the (${NAME})\\.`, 'g');
const PICKED_UP = new RegExp(`You pick up the (${NAME}) from the (${NAME})\\.`, 'g');
const PUT = new RegExp(`You put the (${NAME}) in/on the (${NAME})\\.`, 'g');
const CARRYING = new RegExp(`You are carrying: (?:a|an) (${NAME})`, 'g');
const NOT_CARRYING = /You are not carrying anything\./;
const NOTHING_HAPPENS = /^\s*Nothing happens\.\s*$/;

/**
 * The names in an ALFWorld listing (`a apple 1, a bowl 2, and a cup 1` -> three names;
 * `nothing` -> none).
 */
export function parseAlfworldListing(listing: string): string[] {
  return [...listing.matchAll(new RegExp(`\\b(?:a|an) (${NAME})`, 'g'))].map((match) => match[1]!);
}

function emptyState(): AlfworldEpisodeState {
  return {
    receptacles: [],
    location: undefined,
    contents: new Map(),
    opened: new Map(),
    held: undefined,
  };
}

function addReceptacle(state: AlfworldEpisodeState, name: string): void {
  if (!state.receptacles.includes(name)) state.receptacles.push(name);
}

function setContents(state: AlfworldEpisodeState, receptacle: string, listing: string): void {
  addReceptacle(state, receptacle);
  state.contents.set(receptacle, new Set(parseAlfworldListing(listing)));
}

/** Applies one engine text (reset text or the feedback of an action) to the state. */
function applyText(state: AlfworldEpisodeState, text: string): void {
  for (const [, listing] of text.matchAll(ROOM_LISTING)) {
    for (const name of parseAlfworldListing(listing!)) addReceptacle(state, name);
  }
  for (const [, receptacle] of text.matchAll(FACING)) state.location = receptacle!;
  for (const [, receptacle, listing] of text.matchAll(ON_RECEPTACLE)) {
    setContents(state, receptacle!, listing!);
  }
  for (const [, receptacle, listing] of text.matchAll(OPEN_RECEPTACLE)) {
    setContents(state, receptacle!, listing!);
    state.opened.set(receptacle!, true);
  }
  for (const [, receptacle] of text.matchAll(CLOSED_RECEPTACLE)) {
    addReceptacle(state, receptacle!);
    state.opened.set(receptacle!, false);
  }
  for (const [, receptacle] of text.matchAll(OPENED)) state.opened.set(receptacle!, true);
  for (const [, receptacle] of text.matchAll(CLOSED)) state.opened.set(receptacle!, false);
  for (const [, object, receptacle] of text.matchAll(PICKED_UP)) {
    state.contents.get(receptacle!)?.delete(object!);
    state.held = object!;
  }
  for (const [, object, receptacle] of text.matchAll(PUT)) {
    addReceptacle(state, receptacle!);
    const contents = state.contents.get(receptacle!) ?? new Set<string>();
    contents.add(object!);
    state.contents.set(receptacle!, contents);
    if (state.held === object) state.held = undefined;
  }
  for (const [, object] of text.matchAll(CARRYING)) state.held = object!;
  if (NOT_CARRYING.test(text)) state.held = undefined;
}

/**
 * Replays an episode's texts and actions into an {@link AlfworldEpisodeState}.
 *
 * `history[i].observation` is the state in which `history[i].action` was taken; the
 * feedback of that action is the next step's observation, or `observation` for the
 * last one. A `go to R` that was answered with anything but `Nothing happens.` moves the
 * agent to R (the engine's arrival text does not always name R).
 */
export function trackAlfworldEpisode(
  observation: Observation,
  history: readonly Step[],
): AlfworldEpisodeState {
  const last = history.length - 1;
  // The state before the last step depends on history[0..last] alone; an episode that grew
  // by one step since the previous call resumes from it instead of replaying every text.
  const remembered = settled.get(history);
  let state: AlfworldEpisodeState;
  let from: number;
  if (remembered !== undefined && isPrefixOf(remembered.steps, history)) {
    state = copyState(remembered.state);
    from = remembered.steps.length - 1;
  } else {
    state = emptyState();
    applyText(state, history[0]?.observation.text ?? observation.text);
    from = 0;
  }
  for (let index = from; index < history.length; index += 1) {
    if (index === last) settled.set(history, { steps: history.slice(), state: copyState(state) });
    const feedback = history[index + 1]?.observation.text ?? observation.text;
    applyStep(state, history[index]!.action, feedback);
  }
  return state;
}

/** Per history array: its steps when last seen and the state before its last step. */
const settled = new WeakMap<
  readonly Step[],
  { steps: readonly Step[]; state: AlfworldEpisodeState }
>();

/** Whether `history` starts with exactly the step objects of `steps`. */
function isPrefixOf(steps: readonly Step[], history: readonly Step[]): boolean {
  if (steps.length === 0 || steps.length > history.length) return false;
  return steps.every((step, index) => history[index] === step);
}

function copyState(state: AlfworldEpisodeState): AlfworldEpisodeState {
  return {
    receptacles: [...state.receptacles],
    location: state.location,
    contents: new Map([...state.contents].map(([name, objects]) => [name, new Set(objects)])),
    opened: new Map(state.opened),
    held: state.held,
  };
}

/** Applies an action and the text it was answered with. */
function applyStep(state: AlfworldEpisodeState, action: string, feedback: string): void {
  if (!NOTHING_HAPPENS.test(feedback)) {
    const parsed = tryParse(action);
    if (parsed?.type === 'go to') {
      state.location = parsed.args[0]!;
      addReceptacle(state, parsed.args[0]!);
    }
  }
  applyText(state, feedback);
}

function tryParse(action: string) {
  try {
    return parseAlfworldAction(action);
  } catch {
    // A malformed command in the history changed nothing in the engine either.
    return undefined;
  }
}
