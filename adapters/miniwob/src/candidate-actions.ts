/**
 * MiniWoB++ candidate actions: what an agent could do on a task page, proposed from the
 * observation text alone (so they serve the experience model's predicted states as well as
 * real ones), each with a note naming its element (`click [3] # button 'previous'`).
 */
import {
  type ObservationLine,
  parseObservationLines,
  parseWebAction,
  suggestTypedTexts,
  webCandidateActions,
} from '@dreamgym/browser';
import type { Observation, Step } from '@dreamgym/core';
import { NOTE_SEPARATOR, parseMiniwobAction } from './action-grammar.js';

/** Roles that take text: they get `click` (to focus them) besides `type`. */
const TEXT_FIELD_ROLES = new Set(['textbox', 'searchbox', 'spinbutton', 'TextField', 'combobox']);

/** The note of an element: its role and name as the observation line prints them. */
export function elementNote(line: ObservationLine): string {
  return line.name === '' ? line.role : `${line.role} '${line.name}'`;
}

/**
 * The task's instruction as the page shows it: the first line of the tree, MiniWoB++'s
 * `#query` text (`StaticText 'Click on the "Ok" button.'`).
 */
export function instructionLine(observation: Observation): string | undefined {
  const first = parseObservationLines(observation.text)[0];
  return first?.role === 'StaticText' ? first.name : undefined;
}

/**
 * Candidate actions for a MiniWoB++ state: `click` on every element that takes clicks and on
 * text fields (to focus them), `type` into text fields with the texts the instruction
 * quotes (and those typed before in the episode), each with its element note. Scrolling,
 * navigation and `stop` are left out: MiniWoB++ pages fit the viewport and end their
 * episodes themselves.
 */
export function miniwobCandidateActions(
  observation: Observation,
  history: readonly Step[] = [],
): string[] {
  const lines = parseObservationLines(observation.text);
  const byId = new Map<number, ObservationLine>();
  for (const line of lines) if (line.id !== undefined) byId.set(line.id, line);
  const query = instructionLine(observation);
  const typeTexts = query === undefined ? [] : suggestTypedTexts(query);
  const candidates = new Set<string>();
  const add = (action: string, id: number) => {
    const line = byId.get(id);
    candidates.add(line ? `${action}${NOTE_SEPARATOR}${elementNote(line)}` : action);
  };
  const webHistory = history.map((step) => {
    try {
      return { ...step, action: parseMiniwobAction(step.action).webAction };
    } catch {
      return step;
    }
  });
  for (const action of webCandidateActions(observation, webHistory, { typeTexts })) {
    const parsed = parseWebAction(action);
    if (parsed.type === 'click' || parsed.type === 'hover') add(action, parsed.id);
    else if (parsed.type === 'type') {
      add(action, parsed.id);
      const line = byId.get(parsed.id);
      if (line && TEXT_FIELD_ROLES.has(line.role)) add(`click [${parsed.id}]`, parsed.id);
    }
  }
  // Text fields with nothing to type still take a click (focus-text: "Focus into the textbox").
  for (const line of lines) {
    if (
      line.id !== undefined &&
      TEXT_FIELD_ROLES.has(line.role) &&
      line.properties.disabled !== 'true'
    ) {
      add(`click [${line.id}]`, line.id);
    }
  }
  return [...candidates];
}
