/**
 * The WebArena-Lite state mapper at the adapter's surface: the browser package's AX-tree
 * mapper makes the text (`[id] role 'name' prop: value` under a tab header); this turns it,
 * or a state an experience model wrote, into an `Observation` with candidate actions.
 */
import { webCandidateActions } from '@dreamgym/browser';
import type { Observation } from '@dreamgym/core';

/** A raw WebArena-Lite state: the mapped page text, with the page's URL and title when known. */
export type WebarenaRawObservation =
  | string
  | { text: string; url?: string; title?: string; meta?: Record<string, unknown> };

/** Maps a raw state to an {@link Observation}: its text, candidate actions, and URL and title in `meta`. */
export function mapWebarenaObservation(raw: WebarenaRawObservation): Observation {
  const state = typeof raw === 'string' ? { text: raw } : raw;
  const urlLine = /^URL: (\S+)$/m.exec(state.text)?.[1];
  const url = state.url ?? urlLine;
  const meta: Record<string, unknown> = {
    ...(state.meta ?? {}),
    ...(url === undefined ? {} : { url }),
    ...(state.title === undefined ? {} : { title: state.title }),
  };
  const observation: Observation = {
    text: state.text,
    ...(Object.keys(meta).length > 0 ? { meta } : {}),
  };
  return { ...observation, actions: webCandidateActions(observation, []) };
}
