/**
 * What a TextWorld episode has shown so far, read from its texts and commands: the room the
 * agent is in, the things seen in each room, where each portable thing lies, which containers
 * and doors are open, and what is in hand. TextWorld answers most commands with their outcome
 * alone ("You take the carrot from the fridge."), so the state of the world is the episode's,
 * not the last text's.
 */
import type { Observation, Step } from '@dreamgym/core';
import { parseTextworldAction, TEXTWORLD_DIRECTIONS } from './action-grammar.js';
import {
  TEXTWORLD_CONTAINERS,
  TEXTWORLD_COOKERS,
  TEXTWORLD_DOORS,
  TEXTWORLD_FOODS,
  TEXTWORLD_SUPPORTERS,
  TEXTWORLD_TOOLS,
} from './vocabulary.js';

const FOODS = new Set<string>(TEXTWORLD_FOODS);
const CONTAINERS = new Set<string>(TEXTWORLD_CONTAINERS);
const SUPPORTERS = new Set<string>(TEXTWORLD_SUPPORTERS);
const OPENABLE = new Set<string>([...TEXTWORLD_CONTAINERS, ...TEXTWORLD_DOORS]);
const PORTABLE = new Set<string>([...TEXTWORLD_FOODS, ...TEXTWORLD_TOOLS]);
/** Every known name, longest first, so that `red potato` is found before `potato`. */
export const TEXTWORLD_KNOWN_NAMES: readonly string[] = [
  ...new Set<string>([...PORTABLE, ...OPENABLE, ...SUPPORTERS, ...TEXTWORLD_COOKERS]),
].sort((a, b) => b.length - a.length);

/** What the engine answers to a command it did not carry out. */
const REFUSAL =
  /\b(can't|cannot|not|isn't|aren't|already|need to|first|still miss|what do you want|that's|you have to)\b/i;
const ROOM_HEADER = /^-= (.+?) =-$/m;
const FLOOR = 'the floor';

/** Kinds of things, for proposing what can be done with them. */
export const textworldKinds = {
  isFood: (name: string) => FOODS.has(name),
  isContainer: (name: string) => CONTAINERS.has(name),
  isSupporter: (name: string) => SUPPORTERS.has(name),
  isOpenable: (name: string) => OPENABLE.has(name),
  isPortable: (name: string) => PORTABLE.has(name),
  isCooker: (name: string) => (TEXTWORLD_COOKERS as readonly string[]).includes(name),
};

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The known names `text` mentions, longest first, each once (a name inside a longer one is not counted). */
export function mentionedTextworldEntities(
  text: string,
  names: readonly string[] = TEXTWORLD_KNOWN_NAMES,
): string[] {
  let rest = ` ${text.toLowerCase().replace(/[^a-z0-9'& -]+/g, ' ')} `;
  const found: string[] = [];
  for (const name of names) {
    const pattern = new RegExp(`(?<=[^a-z0-9'-])${escapeRegExp(name)}(?=[^a-z0-9'-])`, 'g');
    if (pattern.test(rest)) {
      found.push(name);
      rest = rest.replace(pattern, ' ');
    }
  }
  return found;
}

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?:])\s+|\n+/)
    .map((sentence) => sentence.trim())
    .filter(Boolean);
}

/** The episode's world as its texts and commands showed it. */
export interface TextworldEpisodeState {
  /** The room the agent is in (lower case), when a text named it. */
  room: string | undefined;
  /** Each thing seen, with the room it was seen in. */
  seenIn: Map<string, string | undefined>;
  /** Where each portable thing lies: a holder's name, `the floor`, or `hand`. */
  location: Map<string, string>;
  /** Containers and doors known to be open (true) or closed (false). */
  opened: Map<string, boolean>;
  /** Directions the texts of each room named. */
  exits: Map<string | undefined, Set<string>>;
  /** What is in hand. */
  held: Set<string>;
}

function readText(state: TextworldEpisodeState, text: string, names: readonly string[]): void {
  const header = ROOM_HEADER.exec(text);
  if (header) state.room = header[1]!.toLowerCase();
  for (const sentence of sentences(text)) {
    const here = mentionedTextworldEntities(sentence, names);
    for (const thing of here) {
      if (!state.held.has(thing)) state.seenIn.set(thing, state.room);
      const lower = sentence.toLowerCase();
      if (OPENABLE.has(thing)) {
        if (
          new RegExp(`\\bclosed ${escapeRegExp(thing)}|${escapeRegExp(thing)} is closed`).test(
            lower,
          )
        ) {
          state.opened.set(thing, false);
        } else if (
          new RegExp(`\\b(opened|open) ${escapeRegExp(thing)}|${escapeRegExp(thing)} is open`).test(
            lower,
          )
        ) {
          state.opened.set(thing, true);
        }
      }
    }
    const holders = here.filter((thing) => CONTAINERS.has(thing) || SUPPORTERS.has(thing));
    if (holders.length !== 1) continue;
    for (const thing of here) {
      if (PORTABLE.has(thing) && !state.held.has(thing)) state.location.set(thing, holders[0]!);
    }
  }
  if (header) {
    const exits = state.exits.get(state.room) ?? new Set<string>();
    for (const direction of TEXTWORLD_DIRECTIONS) {
      if (new RegExp(`\\b${direction}\\b`, 'i').test(text)) exits.add(direction);
    }
    state.exits.set(state.room, exits);
  }
}

function applyCommand(state: TextworldEpisodeState, action: string, outcome: string): void {
  if (REFUSAL.test(outcome.split('\n')[0] ?? '')) return;
  let parsed: ReturnType<typeof parseTextworldAction>;
  try {
    parsed = parseTextworldAction(action);
  } catch {
    return;
  }
  const [first, second] = parsed.args;
  switch (parsed.type) {
    case 'take':
      state.held.add(first!);
      state.location.set(first!, 'hand');
      break;
    case 'drop':
      state.held.delete(first!);
      state.location.set(first!, FLOOR);
      state.seenIn.set(first!, state.room);
      break;
    case 'put':
    case 'insert':
      state.held.delete(first!);
      state.location.set(first!, second!);
      state.seenIn.set(first!, state.room);
      break;
    case 'eat':
    case 'drink':
      state.held.delete(first!);
      state.location.delete(first!);
      state.seenIn.delete(first!);
      break;
    case 'open':
    case 'close':
      state.opened.set(first!, parsed.type === 'open');
      break;
    case 'prepare':
      for (const item of [...state.held]) {
        if (FOODS.has(item)) {
          state.held.delete(item);
          state.location.delete(item);
          state.seenIn.delete(item);
        }
      }
      state.held.add('meal');
      state.location.set('meal', 'hand');
      break;
    default:
  }
}

/**
 * Reads an episode: the texts of `history`'s observations and of `observation` in order,
 * each command applied once its outcome (the next text) is known. `names` are the things to
 * look for (default: the cooking games' vocabulary).
 */
export function trackTextworldEpisode(
  observation: Observation,
  history: readonly Step[],
  names: readonly string[] = TEXTWORLD_KNOWN_NAMES,
): TextworldEpisodeState {
  const state: TextworldEpisodeState = {
    room: undefined,
    seenIn: new Map(),
    location: new Map(),
    opened: new Map(),
    exits: new Map(),
    held: new Set(),
  };
  for (const [index, step] of history.entries()) {
    if (index === 0) readText(state, step.observation.text, names);
    const outcome = history[index + 1]?.observation.text ?? observation.text;
    readText(state, outcome, names);
    applyCommand(state, step.action, outcome);
  }
  if (history.length === 0) readText(state, observation.text, names);
  return state;
}

/** The things in the agent's room or hand. */
export function presentThings(state: TextworldEpisodeState): string[] {
  const present = new Set(state.held);
  for (const [thing, room] of state.seenIn) {
    if (room === state.room) present.add(thing);
  }
  return [...present].sort();
}
