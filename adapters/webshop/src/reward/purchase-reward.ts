/**
 * WebShop's purchase reward (`get_reward` of `web_agent_site/engine/goal.py`) as pure
 * functions. The score of buying `product` at `price` with `options` for `goal` is
 *
 *   r = r_type * (attribute matches + option matches + [price <= price_upper])
 *             / (#goal attributes + #goal options + 1)
 *
 * where a goal attribute matches when some product attribute scores above 85 with
 * `token_set_ratio` or it occurs in the product's title, bullet points or description; a
 * goal option matches when some chosen option value does (both colour-normalised); and the
 * product-type factor r_type is 1, 0.5, 0.1 or 0 by how query, category and title agree.
 */
import { normalizeWebshopColor, WEBSHOP_COLORS } from './colors.js';
import { tokenSetRatio } from './fuzzy-match.js';

/** The goal of a WebShop episode, as WebShop's goal records hold it. */
export interface WebshopGoal {
  /** The target product's search query (WebShop's `query`, lower case). */
  query: string;
  /** The target product's name (its title), for the title score. */
  name: string;
  /** The target product's category path, `A › B › C`. */
  productCategory: string;
  /** Attributes the purchase must have (`wood frame`, `living room`). */
  attributes: readonly string[];
  /**
   * Option values the purchase must have: a list for human goals (`['grey', '8']`), or
   * option name to value for synthetic goals (WebShop then matches against `(name, value)`
   * pairs, as its code does).
   */
  goalOptions: readonly string[] | Readonly<Record<string, string>>;
  /** The price bound in dollars; 0 or less means none. */
  priceUpper: number;
}

/** The purchased product, as WebShop's product records hold it. */
export interface WebshopProduct {
  query: string;
  name: string;
  productCategory: string;
  /** The product's attribute list (WebShop's `Attributes`). */
  attributes: readonly string[];
  title: string;
  bulletPoints: readonly string[];
  description: string;
}

/** What decides the product-type factor r_type. */
export interface TypeMatch {
  /** The purchased product was listed under the goal's query. */
  queryMatch: boolean;
  /** The category paths share at least two levels. */
  categoryMatch: boolean;
  /** Share of the goal name's nouns found among the purchased name's nouns (0.2 when the goal name has none). */
  titleScore: number;
}

/** Nouns of a product name, lower case, as spaCy's POS tagger marks them (`NOUN`, `PROPN`). */
export type NounExtractor = (name: string) => string[];

/** The purchase reward and its parts, named as WebShop's `reward_info` names them. */
export interface PurchaseReward {
  reward: number;
  rType: number;
  rAtt: number;
  rOption: number | undefined;
  rPrice: boolean | undefined;
  queryMatch: boolean;
  categoryMatch: boolean;
  titleScore: number;
  attributeMatches: number;
  optionMatches: number;
}

/**
 * The product-type factor from how the purchase matches the goal's type: 1 when query,
 * category or title (score above 0.2) agree, 0.5 when none does, 0.1 when the title score
 * is below 0.1 and 0 when it is 0.
 */
export function productTypeFactor(match: TypeMatch): number {
  let factor = match.queryMatch || match.categoryMatch || match.titleScore > 0.2 ? 1 : 0.5;
  if (match.titleScore < 0.1) factor = 0.1;
  if (match.titleScore === 0) factor = 0;
  return factor;
}

const NAME_STOPWORDS = new Set(
  (
    'a an and are as at be by for from in into is it its of on or the to with without w ' +
    'x up your you our new set pack pcs piece pieces'
  ).split(' '),
);

/**
 * The default {@link NounExtractor}: lower-case word tokens of two or more characters that
 * are not function words. WebShop keeps the tokens spaCy's `en_core_web_lg` tags as nouns;
 * that model cannot run in TypeScript, so this keeps adjectives too and can score titles
 * higher. Pass a real tagger's nouns (`nounTokens`) where title scores must be exact.
 */
export function approximateNouns(name: string): string[] {
  return (name.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu) ?? []).filter(
    (token) => token.length > 1 && !NAME_STOPWORDS.has(token) && !/^\d+$/.test(token),
  );
}

/** Splits a WebShop category path (`Electronics › Headphones`) into its trimmed levels. */
function categoryLevels(path: string): Set<string> {
  return new Set(path.split('›').map((level) => level.trim()));
}

/** How the purchased product's type matches the goal's (WebShop's `get_type_reward`). */
export function matchProductType(
  product: Pick<WebshopProduct, 'query' | 'name' | 'productCategory'>,
  goal: Pick<WebshopGoal, 'query' | 'name' | 'productCategory'>,
  nounTokens: NounExtractor = approximateNouns,
): TypeMatch {
  const goalLevels = categoryLevels(goal.productCategory);
  let shared = 0;
  for (const level of categoryLevels(product.productCategory))
    if (goalLevels.has(level)) shared += 1;
  const purchasedNouns = new Set(nounTokens(product.name));
  const desiredNouns = nounTokens(goal.name);
  const intersection = new Set(desiredNouns.filter((noun) => purchasedNouns.has(noun)));
  return {
    queryMatch: product.query === goal.query,
    categoryMatch: shared >= 2,
    titleScore: desiredNouns.length === 0 ? 0.2 : intersection.size / desiredNouns.length,
  };
}

/** How many goal attributes the product has (WebShop's `get_attribute_reward`). */
export function countAttributeMatches(
  product: Pick<WebshopProduct, 'attributes' | 'title' | 'bulletPoints' | 'description'>,
  goalAttributes: readonly string[],
): number {
  let matches = 0;
  const title = product.title.toLowerCase();
  const bullets = product.bulletPoints.join(' ').toLowerCase();
  const description = product.description.toLowerCase();
  for (const attribute of goalAttributes) {
    const listed = product.attributes.some(
      (productAttribute) => tokenSetRatio(productAttribute, attribute) > 85,
    );
    if (
      listed ||
      title.includes(attribute) ||
      bullets.includes(attribute) ||
      description.includes(attribute)
    ) {
      matches += 1;
    }
  }
  return matches;
}

/** Python's `repr` of a string, for WebShop's matching of synthetic `(name, value)` goal options. */
function pythonRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = text.replace(/\\/g, '\\\\').replace(new RegExp(quote, 'g'), `\\${quote}`);
  return `${quote}${escaped}${quote}`;
}

/**
 * WebShop's `normalize_color` applied to a synthetic goal's `(name, value)` pair: Python's
 * `color in pair` is tuple membership, so only a colour equal to the name or the value
 * normalises; otherwise the pair is matched as its text `('name', 'value')`.
 */
function normalizePair(name: string, value: string): string {
  for (const color of WEBSHOP_COLORS) if (name === color || value === color) return color;
  return `(${pythonRepr(name)}, ${pythonRepr(value)})`;
}

/**
 * How many goal options the chosen option values satisfy, and their share (undefined when
 * the goal has no options), as WebShop's `get_option_reward` counts them.
 */
export function matchOptions(
  chosenValues: readonly string[],
  goalOptions: WebshopGoal['goalOptions'],
): { matches: number; share: number | undefined } {
  const chosen = chosenValues.map(normalizeWebshopColor);
  const wanted = Array.isArray(goalOptions)
    ? (goalOptions as readonly string[]).map(normalizeWebshopColor)
    : Object.entries(goalOptions).map(([name, value]) => normalizePair(name, value));
  let matches = 0;
  for (const option of wanted) {
    if (chosen.some((value) => tokenSetRatio(value, option) > 85)) matches += 1;
  }
  return { matches, share: wanted.length > 0 ? matches / wanted.length : undefined };
}

/** Whether `price` is within the goal's bound; undefined when the goal has none. */
export function priceWithinBound(price: number, priceUpper: number): boolean | undefined {
  return priceUpper > 0 ? price <= priceUpper : undefined;
}

/** The parts {@link combinePurchaseReward} adds up. */
export interface PurchaseRewardParts {
  typeMatch: TypeMatch;
  attributeMatches: number;
  attributeCount: number;
  optionMatches: number;
  optionCount: number;
  /** Price within bound; undefined when the goal has no bound (it then adds nothing). */
  priceWithin: boolean | undefined;
}

/** Combines matched parts into the reward, with WebShop's arithmetic and its `reward_info` fields. */
export function combinePurchaseReward(parts: PurchaseRewardParts): PurchaseReward {
  const rType = productTypeFactor(parts.typeMatch);
  const denominator = parts.attributeCount + parts.optionCount + 1;
  const reward =
    ((parts.attributeMatches + parts.optionMatches + (parts.priceWithin ? 1 : 0)) / denominator) *
    rType;
  return {
    reward,
    rType,
    rAtt: parts.attributeCount === 0 ? 0 : parts.attributeMatches / parts.attributeCount,
    rOption: parts.optionCount > 0 ? parts.optionMatches / parts.optionCount : undefined,
    rPrice: parts.priceWithin,
    queryMatch: parts.typeMatch.queryMatch,
    categoryMatch: parts.typeMatch.categoryMatch,
    titleScore: parts.typeMatch.titleScore,
    attributeMatches: parts.attributeMatches,
    optionMatches: parts.optionMatches,
  };
}

/** What {@link webshopPurchaseReward} scores. */
export interface PurchaseInput {
  goal: WebshopGoal;
  product: WebshopProduct;
  /** The price paid, in dollars. */
  price: number;
  /** The chosen options, option name to value (`{ color: 'teal', size: '38 | 40 | 41 mm' }`). */
  options: Readonly<Record<string, string>>;
}

/**
 * The WebShop purchase reward of buying `product` for `goal`, with its parts. A perfect
 * purchase (right type, every attribute and option, within the price) scores 1.
 *
 * @example
 * webshopPurchaseReward({ goal, product, price: 11.98, options: { color: 'teal' } }).reward // 1
 */
export function webshopPurchaseReward(
  input: PurchaseInput,
  options: { nounTokens?: NounExtractor } = {},
): PurchaseReward {
  const { goal, product } = input;
  const optionCount = Array.isArray(goal.goalOptions)
    ? goal.goalOptions.length
    : Object.keys(goal.goalOptions).length;
  const optionMatch = matchOptions(Object.values(input.options), goal.goalOptions);
  return combinePurchaseReward({
    typeMatch: matchProductType(product, goal, options.nounTokens),
    attributeMatches: countAttributeMatches(product, goal.attributes),
    attributeCount: goal.attributes.length,
    optionMatches: optionMatch.matches,
    optionCount,
    priceWithin: priceWithinBound(input.price, goal.priceUpper),
  });
}
