/**
 * The text comparisons of WebArena's evaluators, as pure functions: answers are compared
 * after trimming, removing one pair of surrounding quotes and lower-casing; a phrase that is
 * a single token must appear as a whole token (so `0` does not match `10`).
 */

/** Trims, strips one pair of surrounding quotes, lower-cases. */
export function cleanAnswer(answer: string): string {
  let cleaned = answer.trim();
  if (
    cleaned.length >= 2 &&
    ((cleaned.startsWith("'") && cleaned.endsWith("'")) ||
      (cleaned.startsWith('"') && cleaned.endsWith('"')))
  ) {
    cleaned = cleaned.slice(1, -1);
  }
  return cleaned.toLowerCase();
}

/**
 * Word tokens as an English word tokenizer splits them: words and numbers (with inner
 * `.`, `,`, `'` or `-`, as in `25.99`, `1,000` or `t-shirt`) and single punctuation marks.
 */
export function wordTokens(text: string): string[] {
  return text.match(/[\p{L}\p{N}_]+(?:[.,'’-][\p{L}\p{N}_]+)*|[^\s\p{L}\p{N}_]/gu) ?? [];
}

/** `exact_match`: equal after {@link cleanAnswer}. */
export function exactMatch(reference: string, answer: string): boolean {
  return cleanAnswer(answer) === cleanAnswer(reference);
}

/** `must_include` of one phrase: contained after cleaning; a one-token phrase must be a whole token. */
export function mustInclude(reference: string, answer: string): boolean {
  const phrase = cleanAnswer(reference);
  const text = cleanAnswer(answer);
  const tokens = wordTokens(phrase);
  if (tokens.length === 1) return wordTokens(text).includes(tokens[0]!);
  return text.includes(phrase);
}

/** A phrase with ` |OR| ` alternatives: any one of them is included. */
export function mustIncludeAny(reference: string, answer: string): boolean {
  return reference.split(' |OR| ').some((alternative) => mustInclude(alternative, answer));
}

/** `must_exclude`: the phrase does not appear. */
export function mustExclude(reference: string, answer: string): boolean {
  return !mustInclude(reference, answer);
}

/** The integer in `text` (commas allowed), or undefined. */
export function parseInteger(text: string): number | undefined {
  const cleaned = text.trim().replaceAll(',', '');
  return /^[-+]?\d+$/.test(cleaned) ? Number(cleaned) : undefined;
}

/**
 * `required_values`: `value` satisfies a condition such as `>= 3` or `== 12 |OR| == 13`.
 *
 * @throws Error for a condition without a comparison operator.
 */
export function satisfiesCondition(value: number, condition: string): boolean {
  return condition.split(' |OR| ').some((alternative) => {
    const match = /^\s*(<=|>=|==|<|>)\s*(-?[\d.]+)\s*$/.exec(alternative);
    if (!match) throw new Error(`"${alternative}" is not a condition such as ">= 3"`);
    const target = Number(match[2]);
    const tolerance = 1e-8;
    switch (match[1]) {
      case '<=':
        return value <= target + tolerance;
      case '>=':
        return value >= target - tolerance;
      case '==':
        return Math.abs(value - target) <= tolerance;
      case '<':
        return value < target + tolerance;
      default:
        return value > target - tolerance;
    }
  });
}

/** Decodes the HTML entities a page's markup may carry (`&amp;`, `&#39;`, `&#x2122;`...). */
export function unescapeHtml(text: string): string {
  const named: Record<string, string> = {
    amp: '&',
    lt: '<',
    gt: '>',
    quot: '"',
    apos: "'",
    nbsp: '\u00a0',
  };
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, body: string) => {
    if (body.startsWith('#x') || body.startsWith('#X'))
      return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
    if (body.startsWith('#')) return String.fromCodePoint(Number(body.slice(1)));
    return named[body.toLowerCase()] ?? entity;
  });
}
