/**
 * The ALFWorld state mapper: engine text (and the engine's admissible commands) ->
 * the abstract {@link Observation} the policy and the experience model read.
 *
 * The same mapping is applied to expert trajectories, to the real engine and to
 * synthetic states, so the three look alike to every model.
 */
import type { Observation } from '@dreamgym/core';

/** What the ALFWorld engine (or an expert trajectory) gives for one state. */
export interface AlfworldRawObservation {
  /** The engine's text: the welcome banner, room description and task line on reset; feedback after a step. */
  text: string;
  /** The engine's admissible commands for this state, when it lists them. */
  admissibleCommands?: string[];
}

/** The banner TextWorld prints at the top of every ALFWorld game's first observation. */
export const ALFWORLD_BANNER = '-= Welcome to TextWorld, ALFRED! =-';

/**
 * Commands the engine lists as admissible but that never change the world or help the
 * task (`help` prints the command list). They are dropped from `actions` so that the
 * policy does not spend turns on them.
 */
export const ENGINE_META_COMMANDS: readonly string[] = ['help'];

const TASK_LINE = /^\s*Your task is to:\s*(.+?)\s*$/m;

/**
 * Extracts the instruction from a text holding ALFWorld's `Your task is to: ...` line
 * (`look at alarmclock under the desklamp.`), or undefined when there is none.
 */
export function extractAlfworldTask(text: string): string | undefined {
  return TASK_LINE.exec(text)?.[1];
}

/**
 * Maps one raw ALFWorld state to an {@link Observation}.
 *
 * - The `-= Welcome to TextWorld, ALFRED! =-` banner is removed.
 * - The room description and step feedback (`You arrive at ...`, `Nothing happens.`) are kept.
 * - The `Your task is to: ...` line is moved out of `text` into `meta.task`: the policy
 *   and the experience model receive the task as the trajectory's instruction, so
 *   repeating it in the state would only duplicate it (and would make the initial state
 *   of a generated task disagree with its rewritten instruction).
 * - Admissible commands become `actions`, trimmed, de-duplicated, in engine order,
 *   without {@link ENGINE_META_COMMANDS}. When the engine gives none, `actions` is absent.
 */
export function mapAlfworldObservation(raw: AlfworldRawObservation): Observation {
  const task = extractAlfworldTask(raw.text);
  const text = raw.text
    .replace(ALFWORLD_BANNER, '')
    .replace(TASK_LINE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const observation: Observation = { text };
  if (raw.admissibleCommands !== undefined) {
    const seen = new Set<string>();
    for (const command of raw.admissibleCommands) {
      const trimmed = command.trim();
      if (trimmed === '' || ENGINE_META_COMMANDS.includes(trimmed)) continue;
      seen.add(trimmed);
    }
    observation.actions = [...seen];
  }
  if (task !== undefined) observation.meta = { task };
  return observation;
}
