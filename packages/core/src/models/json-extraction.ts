/**
 * Finds the JSON value in a model's free-text answer, for servers without JSON modes and
 * models that wrap their JSON in prose, code fences or `<think>` reasoning.
 */

/** Reasoning models (Qwen3, DeepSeek-R1) may prefix their answer with a thinking block. */
function stripThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>/gi, '');
}

function tryParse(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/** Index just past the bracket that closes the one at `start`, or -1; skips brackets in strings. */
export function matchingBracketEnd(text: string, start: number): number {
  const open = text[start];
  const close = open === '{' ? '}' : open === '[' ? ']' : undefined;
  if (close === undefined) return -1;
  let depth = 0;
  let inString = false;
  for (let index = start; index < text.length; index += 1) {
    const character = text[index];
    if (inString) {
      if (character === '\\') index += 1;
      else if (character === '"') inString = false;
    } else if (character === '"') {
      inString = true;
    } else if (character === '{' || character === '[') {
      depth += 1;
    } else if (character === '}' || character === ']') {
      depth -= 1;
      if (depth === 0) return character === close ? index + 1 : -1;
    }
  }
  return -1;
}

/** At most this many bracket positions are tried, so pathological outputs stay cheap. */
const MAX_CANDIDATES = 256;

/**
 * The JSON value a model's answer holds, or `undefined` when none parses. Tries, in order:
 * the whole answer; each fenced code block; the first balanced `{...}`, then `[...]`,
 * that parses. `<think>...</think>` blocks are ignored.
 */
export function extractJson(text: string): { value: unknown } | undefined {
  const answer = stripThinking(text).trim();
  if (answer === '') return undefined;
  const whole = tryParse(answer);
  if (whole) return whole;
  for (const fence of answer.matchAll(/```[a-zA-Z]*[^\S\n]*\n?([\s\S]*?)```/g)) {
    const inside = tryParse((fence[1] ?? '').trim());
    if (inside) return inside;
  }
  let candidates = 0;
  for (const opener of ['{', '[']) {
    for (
      let start = answer.indexOf(opener);
      start >= 0 && candidates < MAX_CANDIDATES;
      start = answer.indexOf(opener, start + 1)
    ) {
      candidates += 1;
      const end = matchingBracketEnd(answer, start);
      if (end < 0) continue;
      const parsed = tryParse(answer.slice(start, end));
      if (parsed) return parsed;
    }
  }
  return undefined;
}
