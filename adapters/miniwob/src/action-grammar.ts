/**
 * The action grammar: what an agent writes in this domain, parsed into a typed action with a
 * canonical text, or rejected with an `ActionParseError` that says why and lists the forms.
 */
import type { ParsedAction } from '@dreamgym/core';
import { notImplemented } from './not-implemented.js';

/**
 * Parses one action. The canonical `text` must parse to itself; anything outside the grammar
 * throws an `ActionParseError` whose `action` is the text as given.
 */
export function parseMiniwobAction(text: string): ParsedAction {
  void text;
  throw notImplemented(
    'parseAction',
    'src/action-grammar.ts',
    'write parseMiniwobAction(text): return { type, args, text } with a canonical text, and throw ActionParseError (naming the action and listing the forms) for anything else',
    4,
  );
}
