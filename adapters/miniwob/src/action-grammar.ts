/**
 * The MiniWoB++ action grammar: the shared web grammar of `@dreamgym/browser`
 * (`click [id]`, `type [id] [text] [0|1]`, `press [keys]`, `scroll [up|down]`, `stop [answer]`
 * ...), where an element action may carry a note naming its element after ` # `:
 *
 * ```text
 * click [3] # button 'previous'
 * type [1] [Bernardine] [0] # textbox
 * ```
 *
 * The note is what the element's line of the observation says (`role 'name'`). The id alone
 * decides what is clicked: the environment drops the note. It is there for the learner: an
 * id means nothing across two pages, the element's name does, so the candidate actions carry
 * it and the embedded policy and the experience model's retrieval generalise over it.
 */
import { parseWebAction, parseWebActionText } from '@dreamgym/browser';
import { ActionParseError, type ParsedAction } from '@dreamgym/core';

/** The separator between an element action and its note. */
export const NOTE_SEPARATOR = ' # ';

/** Verbs that act on an element and may carry a note. */
const ELEMENT_VERBS = new Set(['click', 'hover', 'type']);

/** An action split into its web-grammar part and its note. */
export interface MiniwobAction extends ParsedAction {
  /** The action in the web grammar, without the note: what the browser carries out. */
  webAction: string;
  /** The element note (`button 'Submit'`), or undefined. */
  note?: string;
}

/**
 * Splits `text` into a web action and a note: the note starts at the last ` # ` whose left
 * side parses as an element action (a typed text may itself hold ` # `).
 */
function splitNote(text: string): { web: string; note?: string } {
  let at = text.lastIndexOf(NOTE_SEPARATOR);
  while (at > 0) {
    const web = text.slice(0, at);
    const note = text.slice(at + NOTE_SEPARATOR.length).trim();
    try {
      const action = parseWebAction(web);
      if (ELEMENT_VERBS.has(action.type) && note !== '') return { web, note };
    } catch {
      // not an action on its left: look for an earlier separator
    }
    at = text.lastIndexOf(NOTE_SEPARATOR, at - 1);
  }
  return { web: text };
}

/**
 * Parses a MiniWoB++ action: the web grammar, with an optional element note. The canonical
 * text is the web action's canonical form, then ` # ` and the note when there is one.
 *
 * @throws ActionParseError naming the action when the web part is not in the grammar, or a
 *   note follows an action that takes no element.
 * @example
 * parseMiniwobAction("click [3] # button 'previous'");
 * // { type: 'click', args: ['3'], text: "click [3] # button 'previous'", webAction: 'click [3]', note: "button 'previous'" }
 */
export function parseMiniwobAction(text: string): MiniwobAction {
  const { web, note } = splitNote(text);
  let parsed: ParsedAction;
  try {
    parsed = parseWebActionText(web);
  } catch (error) {
    if (!ActionParseError.isInstance(error)) throw error;
    throw new ActionParseError(
      `${error.message} In MiniWoB++ an element action may end with a note naming its element: \`click [3] # button 'Submit'\`.`,
      { action: text, cause: error },
    );
  }
  if (note === undefined) return { ...parsed, webAction: parsed.text };
  return {
    ...parsed,
    text: `${parsed.text}${NOTE_SEPARATOR}${note}`,
    webAction: parsed.text,
    note,
  };
}
