/**
 * Candidate actions for a web state: what an agent could sensibly do next, proposed from the
 * observation's own lines. It works on the text alone (`[id] role 'name' prop: value`), so it
 * serves synthetic states that an experience model wrote as well as real ones: the synthetic
 * environment and the embedded policy both choose among these.
 */
import type { Observation, Step } from '@dreamgym/core';
import { parseWebAction } from './web-action-grammar.js';

/** One parsed line of an observation tree. */
export interface ObservationLine {
  /** The element id, for lines that have one (static text has none). */
  id?: number;
  role: string;
  name: string;
  /** Printed properties (`checked`, `value`, `url`, `focused`...), as text. */
  properties: Record<string, string>;
  /** Indentation depth (tabs). */
  depth: number;
}

const PROPERTY_NAMES = 'focused|checked|expanded|selected|pressed|disabled|required|value|url';
/** `\t[12] role 'name' prop: value, prop: value`: the name ends at the quote before the properties. */
const LINE = new RegExp(
  `^(\\t*)(?:\\[(\\d+)\\] )?([A-Za-z][\\w-]*)(?: '(.*?)'(?=$| (?:${PROPERTY_NAMES}): ))?(.*)$`,
);
const PROPERTY = new RegExp(`(?:^|, )(${PROPERTY_NAMES}): ('.*?'(?=$|, [a-z]+: )|[^,]*)`, 'g');

/**
 * Parses the tree lines of an observation text (the header and URL lines are skipped).
 * Lines that are not tree lines are ignored.
 */
export function parseObservationLines(text: string): ObservationLine[] {
  const lines: ObservationLine[] = [];
  for (const raw of text.split('\n')) {
    if (raw.startsWith('Tab ') || raw.startsWith('URL: ') || raw.trim() === '') continue;
    const match = LINE.exec(raw);
    if (!match) continue;
    const properties: Record<string, string> = {};
    for (const property of (match[5] ?? '').trim().matchAll(PROPERTY)) {
      const value = property[2]!.trim();
      properties[property[1]!] =
        value.length >= 2 && value.startsWith("'") && value.endsWith("'")
          ? value.slice(1, -1)
          : value;
    }
    lines.push({
      ...(match[2] === undefined ? {} : { id: Number(match[2]) }),
      role: match[3]!,
      name: match[4] ?? '',
      properties,
      depth: match[1]!.length,
    });
  }
  return lines;
}

/** Roles that take text: they get `type` candidates instead of `click`. */
const TEXT_INPUT_ROLES = new Set(['textbox', 'searchbox', 'spinbutton', 'TextField']);
/** Roles that only group or describe other elements: clicking them does nothing useful. */
const CONTAINER_ROLES = new Set([
  'list',
  'table',
  'grid',
  'treegrid',
  'rowgroup',
  'row',
  'navigation',
  'main',
  'banner',
  'contentinfo',
  'complementary',
  'form',
  'region',
  'article',
  'Iframe',
  'MenuListPopup',
  'tablist',
  'menu',
  'menubar',
  'tree',
  'radiogroup',
  'toolbar',
  'document',
  'application',
  'dialog',
  'alertdialog',
  'status',
  'log',
  'search',
  'StaticText',
  'heading',
  'status',
  'alert',
  'note',
  'tooltip',
  'separator',
  'progressbar',
  'meter',
  'caption',
  'listitem',
  'paragraph',
  'LabelText',
]);

/** Options of {@link webCandidateActions}. */
export interface WebCandidateOptions {
  /** At most this many element actions (global actions come on top). Default 100. */
  maxElementActions?: number;
  /** Texts to propose for `type` actions, besides those the state and history suggest. */
  typeTexts?: readonly string[];
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value)
    ? value.filter((item): item is string => typeof item === 'string')
    : [];
}

/**
 * Candidate actions for `observation`: `click` on every element that is not a container or
 * a text field, `type` into text fields (with the texts the task suggests:
 * `observation.meta.typeSuggestions`, texts typed earlier in the episode, `options.typeTexts`),
 * `press [Enter]` when a field has focus, and `scroll [down]`, `scroll [up]`, `go_back`
 * (after the first step) and `stop []`. Every candidate parses with the web grammar; none
 * repeats.
 */
export function webCandidateActions(
  observation: Observation,
  history: readonly Step[] = [],
  options: WebCandidateOptions = {},
): string[] {
  const lines = parseObservationLines(observation.text);
  const texts = new Set<string>(stringsOf(observation.meta?.typeSuggestions));
  for (const text of options.typeTexts ?? []) texts.add(text);
  for (const step of history) {
    for (const text of stringsOf(step.observation.meta?.typeSuggestions)) texts.add(text);
    try {
      const action = parseWebAction(step.action);
      if (action.type === 'type' && action.text !== '') texts.add(action.text);
    } catch {
      // an invalid action of the history suggests nothing
    }
  }
  const maxElementActions = options.maxElementActions ?? 100;
  const elementActions: string[] = [];
  let focusedField = false;
  for (const line of lines) {
    if (line.id === undefined || line.properties.disabled === 'true') continue;
    if (
      TEXT_INPUT_ROLES.has(line.role) ||
      (line.role === 'combobox' && line.properties.expanded === undefined)
    ) {
      if (line.properties.focused === 'true') focusedField = true;
      for (const text of texts) elementActions.push(`type [${line.id}] [${text}] [1]`);
      if (line.role === 'combobox') elementActions.push(`click [${line.id}]`);
      continue;
    }
    if (CONTAINER_ROLES.has(line.role)) continue;
    elementActions.push(`click [${line.id}]`);
  }
  const candidates = new Set(elementActions.slice(0, maxElementActions));
  if (focusedField) candidates.add('press [Enter]');
  candidates.add('scroll [down]');
  candidates.add('scroll [up]');
  if (history.length > 0) candidates.add('go_back');
  candidates.add('stop []');
  return [...candidates];
}
