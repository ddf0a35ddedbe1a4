/**
 * The MiniWoB++ state mapper: the browser environment's AX-tree observation of a task page
 * (`[id] role 'name'` lines under a tab header) made stable across episodes, with the
 * candidate actions listed.
 *
 * - The page server's origin is dropped from the URL line (`URL: /miniwob/click-button.html`):
 *   its port changes with every run and would make two identical states differ.
 * - MiniWoB++'s own harness lines (`Last reward:`, `Last 10 average:`, `Time left:`,
 *   `Episodes done:`) are dropped: they report on the episode counter and the clock, not on
 *   the task, and change while the state does not.
 */
import type { Observation } from '@dreamgym/core';
import { miniwobCandidateActions } from './candidate-actions.js';

/** What the browser environment returns: its observation, or the observation text alone. */
export type MiniwobRawObservation = string | { text: string; meta?: Record<string, unknown> };

const HARNESS_LINE =
  /^\t*StaticText '(Last reward:|Last 10 average:|Time left:|Episodes done:)[^\n]*'$/;
const URL_LINE = /^URL: https?:\/\/[^/\s]+(\/\S*)$/;

/** The observation text without the harness lines and with the URL's origin dropped. */
export function normalizeMiniwobText(text: string): string {
  return text
    .split('\n')
    .filter((line) => !HARNESS_LINE.test(line))
    .map((line) => line.replace(URL_LINE, 'URL: $1'))
    .join('\n')
    .trimEnd();
}

/** The meta fields kept from the browser's observation (the rest is per-run detail). */
const KEPT_META = ['title', 'instruction', 'typeSuggestions', 'elementCount'] as const;

/**
 * Maps a browser observation of a MiniWoB++ page to the abstract state: the normalised text,
 * the page's instruction and title in `meta`, and the candidate actions (with element notes)
 * in `actions`.
 *
 * @example
 * mapMiniwobObservation("Tab 0 (current): Click Test Task\nURL: http://127.0.0.1:41215/miniwob/click-test.html\n\nStaticText 'Click the button.'\n[1] button 'Click Me!'");
 * // { text: "...URL: /miniwob/click-test.html...", actions: ["click [1] # button 'Click Me!'"] }
 */
export function mapMiniwobObservation(raw: MiniwobRawObservation): Observation {
  const text = normalizeMiniwobText(typeof raw === 'string' ? raw : raw.text);
  const meta: Record<string, unknown> = {};
  if (typeof raw !== 'string' && raw.meta) {
    for (const key of KEPT_META) {
      if (raw.meta[key] !== undefined) meta[key] = raw.meta[key];
    }
    if (typeof raw.meta.url === 'string') meta.path = new URL(raw.meta.url).pathname;
  }
  const observation: Observation = Object.keys(meta).length > 0 ? { text, meta } : { text };
  return { ...observation, actions: miniwobCandidateActions(observation, []) };
}
