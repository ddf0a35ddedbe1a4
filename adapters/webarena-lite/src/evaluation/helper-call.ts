/**
 * WebArena's helper functions, as configs name them in `program_html` (`func:` URLs and
 * locators): parsed from their call text, never evaluated as code.
 */

/** The helper functions WebArena configs call. */
export const WEBARENA_HELPER_FUNCTIONS = [
  'shopping_get_latest_order_url',
  'shopping_get_sku_latest_review_author',
  'shopping_get_sku_latest_review_rating',
  'reddit_get_post_url',
  'gitlab_get_project_memeber_role',
] as const;
/** A WebArena helper function name. */
export type WebarenaHelperFunction = (typeof WEBARENA_HELPER_FUNCTIONS)[number];

/** An argument of a helper call: the live page, or a string (`__last_url__` in it stands for the page's URL). */
export type HelperArgument = { kind: 'page' } | { kind: 'string'; value: string };

/** A parsed `func:name(args)` call. */
export interface HelperCall {
  name: WebarenaHelperFunction;
  args: HelperArgument[];
}

/**
 * Parses the text after `func:`, e.g. `gitlab_get_project_memeber_role(__page__, 'vinta')`.
 * Returns an error message instead when it is not a call of a known helper.
 */
export function parseHelperCall(text: string): HelperCall | { error: string } {
  const match = /^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$/s.exec(text);
  if (!match) return { error: `"${text}" is not a function call` };
  const name = match[1]!;
  if (!(WEBARENA_HELPER_FUNCTIONS as readonly string[]).includes(name)) {
    return {
      error: `unknown helper function ${name}; WebArena's are ${WEBARENA_HELPER_FUNCTIONS.join(', ')}`,
    };
  }
  const args: HelperArgument[] = [];
  let rest = match[2]!.trim();
  while (rest !== '') {
    const argument =
      /^(?:(__page__|page)|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*(?:,\s*|$)/s.exec(rest);
    if (!argument) return { error: `cannot read the arguments of ${name}: "${match[2]}"` };
    if (argument[1] !== undefined) args.push({ kind: 'page' });
    else
      args.push({
        kind: 'string',
        value: (argument[2] ?? argument[3] ?? '').replace(/\\(.)/g, '$1'),
      });
    rest = rest.slice(argument[0].length);
  }
  return { name: name as WebarenaHelperFunction, args };
}
