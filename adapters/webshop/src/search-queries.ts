/**
 * Search queries from a shopping instruction: WebShop instructions are sentences
 * ("i am looking for a red stereo sound earbud headphones, and price lower than 50.00
 * dollars"), while its search engine (BM25 over product texts) does best on the product's
 * words ("red stereo sound earbud headphones").
 */

/** Openings of WebShop instructions that say nothing about the product. */
const OPENINGS = [
  /^(hi|hello|hey)[,! ]+/,
  /^(can|could|would) you (please )?(help me )?(find|get|search for|look for|show) (me )?/,
  /^(please )?(find|get|show|search for|look for|locate|buy|order|purchase) (me )?/,
  /^i(?:'m| am|m)? (?:really )?(?:looking|searching|shopping|hunting) (?:for|to (?:buy|get|find|purchase|order))\s*/,
  /^i(?:'d| would)? (?:like|love|want|need|wish) (?:to (?:buy|get|find|purchase|order|have|see) )?/,
  /^i(?:'m| am|m) (?:interested in|in need of|trying to find)\s*/,
  /^(?:i )?(?:need|want) (?:to (?:buy|get|find|purchase|order) )?/,
  /^(?:i )?(?:am )?(?:searching|looking) (?:for )?/,
];

const STOPWORDS = new Set(
  (
    "a an the some any that which who whom this these those it its it's is are be been being was " +
    'were has have had do does did will would should can could may might must shall i me my ' +
    'mine we our you your he she they them their his her for with without of to in on at by ' +
    'from as and or but so also too very just please thanks thank really please one ones ' +
    'made make makes something thing things item items product products pair pairs kind type ' +
    'looking need want like get buy find am im id ive'
  ).split(' '),
);

/** The price clause WebShop appends to goals: `, and price lower than 50.00 dollars`. */
export const PRICE_CLAUSE =
  /,?\s*(?:and\s+)?(?:the\s+)?price\s+(?:lower|less)\s+than\s+\$?\s*([\d.,]+)\s*(?:dollars?|usd|\$)?\s*\.?\s*$/i;

/** Removes WebShop's trailing price clause from an instruction. */
export function withoutPriceClause(instruction: string): string {
  return instruction.replace(PRICE_CLAUSE, '').trim();
}

/** Lower-case words of an instruction as WebShop's search splits them, punctuation removed. */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[“”"]/g, ' ')
    .replace(/[^a-z0-9&'./+|-]+/g, ' ')
    .split(/\s+/)
    .map((word) => word.replace(/^[.'-]+|[.'-]+$/g, ''))
    .filter((word) => word !== '');
}

/**
 * Up to `limit` distinct search queries for an instruction, best first: the instruction's
 * product words (opening phrases, function words and the price clause removed, at most 12
 * words), then their first five and first three words.
 *
 * @example
 * webshopSearchQueries('i am looking for a red stereo sound earbud headphones, and price lower than 50.00 dollars')
 * // ['red stereo sound earbud headphones', 'red stereo sound']
 */
export function webshopSearchQueries(instruction: string, limit = 3): string[] {
  let text = withoutPriceClause(instruction).toLowerCase().trim();
  for (let changed = true; changed; ) {
    changed = false;
    for (const opening of OPENINGS) {
      const next = text.replace(opening, '');
      if (next !== text) {
        text = next.trim();
        changed = true;
      }
    }
  }
  const content = words(text).filter((word) => !STOPWORDS.has(word.replace(/'s$/, '')));
  const queries: string[] = [];
  const add = (list: readonly string[]) => {
    const query = list.join(' ').trim();
    if (query !== '' && !queries.includes(query)) queries.push(query);
  };
  add(content.slice(0, 12));
  add(content.slice(0, 5));
  add(content.slice(0, 3));
  if (queries.length === 0) add(words(instruction).slice(0, 8));
  return queries.slice(0, limit);
}
