/**
 * The state mapper: the TextWorld engine's text (as the Z-machine prints it) -> the abstract
 * state the policy and the experience model read. It drops what changes while the game's
 * state does not, or says nothing about it: the `TEXTWORLD` title banner, the game's objective
 * (the task's instruction carries it), the command prompt and the status line after it (the
 * room, the score and a move counter), and the end-of-game score summary and restart menu.
 */
import type { Observation } from '@dreamgym/core';

/** What the real environment answers: the engine's text and its admissible commands. */
export interface TextworldRawObservation {
  /** The engine's text for the last command (or the game's start). */
  text: string;
  /** The commands the engine accepts in this state. */
  admissibleCommands?: readonly string[];
  /** The game's objective, dropped from the text where it appears. */
  objective?: string;
}

/** The objective every cooking game states at its start. */
export const TEXTWORLD_COOKING_OBJECTIVE =
  "You are hungry! Let's cook a delicious meal. Check the cookbook in the kitchen for the recipe. Once done, enjoy your meal!";

/** A line of the title banner: box-drawing made of `$`, `\`, `|`, `_`, `/` and `>`. */
const BANNER_LINE = /^[ \t]*[$\\|_/<>][ \t$\\|_/<>]*$/;
/** The prompt, then the status line the Z-machine pads to the screen's width. */
const PROMPT_AND_STATUS = /\n?>[ \t]*(?:-= .*? =-[ \t]*-?\d+\/\d+)?[ \t]*$/;
/** The end of a game: the score summary (with a turn count) and the restart menu. */
const END_SUMMARY = /^You scored \d+ out of a possible \d+, in \d+ turns?\.$/;
const RESTART_MENU =
  /^Would you like to RESTART, RESTORE a saved game, QUIT or UNDO the last command\?$/;

/** The engine's text, cleaned: stable across visits to one state. */
export function cleanTextworldText(text: string, objective = TEXTWORLD_COOKING_OBJECTIVE): string {
  let body = text.replace(/\r\n?/g, '\n');
  // The prompt may be followed by nothing but padding and the status line.
  for (;;) {
    const stripped = body.replace(/\s+$/, '').replace(PROMPT_AND_STATUS, '');
    if (stripped === body) break;
    body = stripped;
  }
  const lines = body
    .split('\n')
    .map((line) => line.replace(/[ \t]+$/, ''))
    // `*** The End ***` and `*** You lost! ***` come centred on the screen.
    .map((line) => (/^\s+\*\*\*.*\*\*\*$/.test(line) ? line.trim() : line))
    .filter(
      (line) =>
        !BANNER_LINE.test(line) &&
        !END_SUMMARY.test(line.trim()) &&
        !RESTART_MENU.test(line.trim()) &&
        line.trim() !== '>' &&
        (objective === '' || line.trim() !== objective),
    );
  return lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Maps one answer of the engine to an `Observation`: the cleaned text, and the admissible
 * commands (sorted, unique) as `actions`. A bare string is mapped as text without actions.
 */
export function mapTextworldObservation(raw: TextworldRawObservation | string): Observation {
  const { text, admissibleCommands, objective } = typeof raw === 'string' ? { text: raw } : raw;
  const observation: Observation = { text: cleanTextworldText(text, objective) };
  if (admissibleCommands !== undefined) {
    observation.actions = [...new Set(admissibleCommands)].sort();
  }
  return observation;
}
