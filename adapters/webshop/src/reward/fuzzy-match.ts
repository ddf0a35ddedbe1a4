/**
 * The fuzzy string matching WebShop's reward uses: `thefuzz.fuzz.token_set_ratio` of
 * `thefuzz` 0.19.0, the version WebShop (and AgentGym's copy of it) pins. Without the
 * optional `python-Levenshtein` (which WebShop does not install) that version scores with
 * Python's `difflib.SequenceMatcher`, so this module reproduces `SequenceMatcher.ratio()`
 * (including its "popular element" heuristic for sequences of 200 or more items), thefuzz's
 * string preprocessing and its rounding. Scores are integers in [0, 100], as thefuzz gives.
 */

/** Characters U+0080-U+00FF, which thefuzz's `asciidammit` deletes before matching. */
const LATIN1_SUPPLEMENT = /[\u0080-\u00ff]/g;
/** Python's `\W` on `str`: anything but letters, numbers and the underscore. */
const NON_WORD = /[^\p{L}\p{N}_]/gu;

/**
 * thefuzz's `utils.full_process(s, force_ascii=True)`: drop U+0080-U+00FF, turn every
 * character that is not a letter, number or underscore into a space, lower-case, strip.
 */
export function fuzzFullProcess(text: string): string {
  return text.replace(LATIN1_SUPPLEMENT, '').replace(NON_WORD, ' ').toLowerCase().trim();
}

/** Python's `round()`: half to even. */
function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction > 0.5) return floor + 1;
  if (fraction < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

interface Match {
  i: number;
  j: number;
  size: number;
}

/**
 * `difflib.SequenceMatcher(None, a, b).ratio()`: twice the number of matched elements over
 * the total length, where matches are found as Python finds them (longest matching block
 * first, leftmost on ties, then recursively left and right of it).
 */
export function sequenceMatcherRatio(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  const total = left.length + right.length;
  if (total === 0) return 1;
  const positions = new Map<string, number[]>();
  right.forEach((element, index) => {
    const list = positions.get(element);
    if (list) list.push(index);
    else positions.set(element, [index]);
  });
  // difflib's autojunk: in a sequence of 200+ items, items more common than 1% + 1 are
  // "popular" and never start a match (they can still extend one).
  if (right.length >= 200) {
    const limit = Math.floor(right.length / 100) + 1;
    for (const [element, list] of positions) if (list.length > limit) positions.delete(element);
  }

  const longest = (aLow: number, aHigh: number, bLow: number, bHigh: number): Match => {
    let bestI = aLow;
    let bestJ = bLow;
    let bestSize = 0;
    let lengths = new Map<number, number>();
    for (let i = aLow; i < aHigh; i += 1) {
      const next = new Map<number, number>();
      for (const j of positions.get(left[i]!) ?? []) {
        if (j < bLow) continue;
        if (j >= bHigh) break;
        const size = (lengths.get(j - 1) ?? 0) + 1;
        next.set(j, size);
        if (size > bestSize) {
          bestI = i - size + 1;
          bestJ = j - size + 1;
          bestSize = size;
        }
      }
      lengths = next;
    }
    while (bestI > aLow && bestJ > bLow && left[bestI - 1] === right[bestJ - 1]) {
      bestI -= 1;
      bestJ -= 1;
      bestSize += 1;
    }
    while (
      bestI + bestSize < aHigh &&
      bestJ + bestSize < bHigh &&
      left[bestI + bestSize] === right[bestJ + bestSize]
    ) {
      bestSize += 1;
    }
    return { i: bestI, j: bestJ, size: bestSize };
  };

  let matched = 0;
  const queue: Array<[number, number, number, number]> = [[0, left.length, 0, right.length]];
  while (queue.length > 0) {
    const [aLow, aHigh, bLow, bHigh] = queue.pop()!;
    const { i, j, size } = longest(aLow, aHigh, bLow, bHigh);
    if (size === 0) continue;
    matched += size;
    if (aLow < i && bLow < j) queue.push([aLow, i, bLow, j]);
    if (i + size < aHigh && j + size < bHigh) queue.push([i + size, aHigh, j + size, bHigh]);
  }
  return (2.0 * matched) / total;
}

/** thefuzz's `fuzz.ratio`: 100 for equal strings, 0 when one is empty, else the rounded difflib ratio. */
export function fuzzRatio(a: string, b: string): number {
  if (a === b) return 100;
  if (a.length === 0 || b.length === 0) return 0;
  return roundHalfEven(100 * sequenceMatcherRatio(a, b));
}

/**
 * thefuzz's `fuzz.token_set_ratio`: both strings preprocessed ({@link fuzzFullProcess}) and
 * split into word sets; the best {@link fuzzRatio} among the sorted intersection and the
 * intersection followed by each side's remaining words. Order and repeated words do not
 * matter: `token_set_ratio('z2-pink', 'pink')` is 100.
 */
export function tokenSetRatio(a: string, b: string): number {
  const first = fuzzFullProcess(a);
  const second = fuzzFullProcess(b);
  if (first.length === 0 || second.length === 0) return 0;
  const tokensA = new Set(first.split(/\s+/));
  const tokensB = new Set(second.split(/\s+/));
  const sorted = (tokens: Iterable<string>) => [...tokens].sort(compareCodePoints).join(' ');
  const intersection = sorted([...tokensA].filter((token) => tokensB.has(token)));
  const onlyA = sorted([...tokensA].filter((token) => !tokensB.has(token)));
  const onlyB = sorted([...tokensB].filter((token) => !tokensA.has(token)));
  const combinedA = `${intersection} ${onlyA}`.trim();
  const combinedB = `${intersection} ${onlyB}`.trim();
  return Math.max(
    fuzzRatio(intersection, combinedA),
    fuzzRatio(intersection, combinedB),
    fuzzRatio(combinedA, combinedB),
  );
}

/** Python's string order (by code point), not JavaScript's (by UTF-16 unit). */
function compareCodePoints(a: string, b: string): number {
  const left = Array.from(a);
  const right = Array.from(b);
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    const difference = left[index]!.codePointAt(0)! - right[index]!.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}
