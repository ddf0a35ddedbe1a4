/**
 * The embedded curriculum generator for WebShop: a new instruction from a seed goal by
 * changing one constraint within WebShop's item vocabulary: an attribute (to one that
 * products with it also carry), a colour, a size, or the price bound.
 */
import type { SeededRandom, Task } from '@dreamgym/core';
import { z } from 'zod';
import type { WebshopItemRecord } from './datasets/goal-query-map.js';
import { WEBSHOP_COLORS, WEBSHOP_SIZES } from './reward/colors.js';
import { PRICE_CLAUSE } from './search-queries.js';
import { webshopPageToObservation } from './state-mapper.js';

/** What `mutateTask` may change attributes into. */
export const WebshopVocabularySchema = z.object({
  /** Product attributes, most common first (`high quality`, `long lasting`...). */
  attributes: z.array(z.string().min(1)),
  /** For each attribute, the attributes products carrying it also carry, most common first. */
  related: z.record(z.string(), z.array(z.string())),
});
export type WebshopVocabulary = z.infer<typeof WebshopVocabularySchema>;

/** Builds the vocabulary from `items_ins_v2_1000.json` records (product data, no goals). */
export function buildWebshopVocabulary(items: Iterable<WebshopItemRecord>): WebshopVocabulary {
  const counts = new Map<string, number>();
  const together = new Map<string, Map<string, number>>();
  for (const item of items) {
    const attributes = [
      ...new Set(item.attributes.map((attribute) => attribute.trim().toLowerCase())),
    ].filter((attribute) => attribute.length > 2);
    for (const attribute of attributes) {
      counts.set(attribute, (counts.get(attribute) ?? 0) + 1);
      const row = together.get(attribute) ?? new Map<string, number>();
      for (const other of attributes)
        if (other !== attribute) row.set(other, (row.get(other) ?? 0) + 1);
      together.set(attribute, row);
    }
  }
  const byCount = (map: Map<string, number>) =>
    [...map].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([name]) => name);
  return {
    attributes: byCount(counts),
    related: Object.fromEntries([...together].map(([name, row]) => [name, byCount(row)])),
  };
}

/** The price bounds WebShop's goals use: 10 to 990 dollars in steps of 10. */
const PRICE_BOUNDS = Array.from({ length: 99 }, (_, index) => 10 * (index + 1));

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function wordPattern(phrase: string): RegExp {
  return new RegExp(`(?<![\\w-])${escapeRegExp(phrase)}(?![\\w-])`, 'i');
}

interface Mutation {
  kind: 'attribute' | 'color' | 'size' | 'price';
  instruction: string;
  detail: string;
}

function replaceOnce(text: string, phrase: string, replacement: string): string {
  return text.replace(wordPattern(phrase), replacement);
}

/** Every single-constraint change of `instruction` the vocabulary allows. */
function possibleMutations(
  instruction: string,
  vocabulary: WebshopVocabulary,
  random: SeededRandom,
): Mutation[] {
  const options: Mutation[] = [];
  const lower = instruction.toLowerCase();
  const attribute = vocabulary.attributes.find(
    (candidate) => candidate.includes(' ') && wordPattern(candidate).test(lower),
  );
  if (attribute !== undefined) {
    const related = (vocabulary.related[attribute] ?? []).filter(
      (candidate) => !wordPattern(candidate).test(lower) && candidate.includes(' '),
    );
    const pool = related.length > 0 ? related.slice(0, 12) : vocabulary.attributes.slice(0, 40);
    const replacement = pool.filter((candidate) => candidate !== attribute);
    if (replacement.length > 0) {
      const chosen = random.choice(replacement);
      options.push({
        kind: 'attribute',
        instruction: replaceOnce(instruction, attribute, chosen),
        detail: `${attribute} -> ${chosen}`,
      });
    }
  }
  const color = WEBSHOP_COLORS.find((candidate) => wordPattern(candidate).test(lower));
  if (color !== undefined) {
    const chosen = random.choice(
      WEBSHOP_COLORS.filter(
        (candidate) => candidate !== color && candidate !== 'dark' && candidate !== 'light',
      ),
    );
    options.push({
      kind: 'color',
      instruction: replaceOnce(instruction, color, chosen),
      detail: `${color} -> ${chosen}`,
    });
  }
  const size = ['xx-large', 'x-large', 'x-small', 'medium', 'large', 'small'].find((candidate) =>
    wordPattern(candidate).test(lower),
  );
  if (size !== undefined) {
    const sizes = ['x-small', 'small', 'medium', 'large', 'x-large', 'xx-large'].filter(
      (candidate) => candidate !== size && WEBSHOP_SIZES.includes(candidate),
    );
    const chosen = random.choice(sizes);
    options.push({
      kind: 'size',
      instruction: replaceOnce(instruction, size, chosen),
      detail: `${size} -> ${chosen}`,
    });
  }
  const price = PRICE_CLAUSE.exec(instruction);
  if (price) {
    const current = Number(price[1]!.replace(/,/g, ''));
    const chosen = random.choice(
      PRICE_BOUNDS.filter((bound) => bound !== current && bound <= Math.max(100, current * 3)),
    );
    options.push({
      kind: 'price',
      instruction: `${instruction.slice(0, price.index)}, and price lower than ${chosen.toFixed(2)} dollars`,
      detail: `price ${current} -> ${chosen}`,
    });
  } else {
    const chosen = random.choice(PRICE_BOUNDS.slice(0, 10));
    options.push({
      kind: 'price',
      instruction: `${instruction.replace(/[.\s]+$/, '')}, and price lower than ${chosen.toFixed(2)} dollars`,
      detail: `price bound ${chosen}`,
    });
  }
  return options.filter((option) => option.instruction.toLowerCase() !== lower);
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/**
 * A variation of `task` with one constraint changed: an attribute phrase of the instruction
 * becomes one that products carrying it also carry, a colour another WebShop colour, a size
 * a neighbouring size, or the price bound another of WebShop's bounds (a bound is added when
 * the instruction has none). Returns undefined when `task` is no WebShop task.
 *
 * The child is not playable on the real server (no goal there has its instruction): its
 * meta drops `goalIndex` and keeps the parent's as `baseGoalIndex`.
 */
export function mutateWebshopTask(
  task: Task,
  random: SeededRandom,
  vocabulary: WebshopVocabulary,
): Task | undefined {
  if (task.domain !== 'webshop') return undefined;
  const mutations = possibleMutations(task.instruction, vocabulary, random);
  if (mutations.length === 0) return undefined;
  const mutation = random.choice(mutations);
  const { goalIndex, sessionId: _sessionId, ...meta } = task.meta;
  const baseGoalIndex = typeof goalIndex === 'number' ? goalIndex : task.meta.baseGoalIndex;
  const base = typeof task.meta.baseTaskId === 'string' ? task.meta.baseTaskId : task.id;
  const instruction = mutation.instruction;
  return {
    id: `${base}~${mutation.kind}-${slug(mutation.detail)}`,
    domain: task.domain,
    instruction,
    origin: 'generated',
    parentId: task.id,
    // Every WebShop episode starts on the search page; only the instruction changes.
    initialObservation: webshopPageToObservation(
      { kind: 'search', hasSearchBar: true, buttons: [], instruction },
      instruction,
    ),
    meta: {
      ...meta,
      baseTaskId: base,
      ...(baseGoalIndex === undefined ? {} : { baseGoalIndex }),
      mutation: mutation.kind,
      mutationDetail: mutation.detail,
    },
  };
}
