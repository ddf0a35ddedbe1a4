/**
 * The embedded curriculum's task mutation for WebArena-Lite: a task of the same intent
 * template with one slot refilled (`What are the top-{{n}} best-selling product in
 * {{period}}`: `period` Jan 2023 -> Quarter 1 2022). Values come from other tasks of the same
 * template (WebArena's 812 configs have several per template), else from the same slot of
 * other templates on the same site (WebArena-Lite has one task per template), else a
 * neighbouring number for a numeric slot. Generated tasks keep the parent's start page and
 * login but carry no evaluation config: their real episodes are reported `not_evaluated`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SeededRandom, Task } from '@dreamgym/core';
import { WebarenaConfigSchema } from './config/config-schema.js';
import { parseJsonWithLines } from './config/json-with-lines.js';

/** Slot values seen in configs (values as JSON). */
export interface WebarenaTemplateVocabulary {
  /** Template id -> slot -> values. */
  byTemplate: Map<number, Map<string, string[]>>;
  /** `<first site>|<slot>` -> values, across templates. */
  bySiteSlot: Map<string, string[]>;
}

function addValue(map: Map<string, string[]>, key: string, value: unknown): void {
  if (!map.has(key)) map.set(key, []);
  const values = map.get(key)!;
  const encoded = JSON.stringify(value);
  if (!values.includes(encoded)) values.push(encoded);
}

/** The site a task's slot values belong to: its first site. */
function siteOf(task: Task): string {
  const sites = task.meta.sites;
  return Array.isArray(sites) && typeof sites[0] === 'string' ? sites[0] : '';
}

/** Collects the slot values of `tasks` (from `meta.intentTemplateId`, `meta.instantiationDict`, `meta.sites`). */
export function buildWebarenaTemplateVocabulary(tasks: Iterable<Task>): WebarenaTemplateVocabulary {
  const vocabulary: WebarenaTemplateVocabulary = { byTemplate: new Map(), bySiteSlot: new Map() };
  for (const task of tasks) {
    const template = task.meta.intentTemplateId;
    const slots = task.meta.instantiationDict;
    if (typeof template !== 'number' || slots === null || typeof slots !== 'object') continue;
    if (!vocabulary.byTemplate.has(template)) vocabulary.byTemplate.set(template, new Map());
    const bySlot = vocabulary.byTemplate.get(template)!;
    for (const [slot, value] of Object.entries(slots as Record<string, unknown>)) {
      addValue(bySlot, slot, value);
      addValue(vocabulary.bySiteSlot, `${siteOf(task)}|${slot}`, value);
    }
  }
  return vocabulary;
}

/**
 * Reads the template vocabulary from the config files in `dir` (synchronously, for
 * `mutateTask`'s first call). Invalid files are skipped here; the task loader reports them.
 */
export function loadWebarenaTemplateVocabularySync(dir: string): WebarenaTemplateVocabulary {
  const tasks: Task[] = [];
  const files = [dir, join(dir, 'config_files')].flatMap((directory) => {
    try {
      return statSync(directory).isDirectory()
        ? readdirSync(directory)
            .filter((name) => name.endsWith('.json'))
            .map((name) => join(directory, name))
        : [];
    } catch {
      return [];
    }
  });
  for (const file of files) {
    let document: unknown;
    try {
      document = parseJsonWithLines(readFileSync(file, 'utf8'), file).value;
    } catch {
      continue;
    }
    for (const value of Array.isArray(document) ? document : [document]) {
      const config = WebarenaConfigSchema.safeParse(value);
      if (!config.success) continue;
      tasks.push({
        id: String(config.data.task_id),
        domain: 'webarena-lite',
        instruction: config.data.intent,
        origin: 'seed',
        meta: {
          sites: config.data.sites,
          ...(config.data.intent_template_id === undefined
            ? {}
            : { intentTemplateId: config.data.intent_template_id }),
          ...(config.data.instantiation_dict === undefined
            ? {}
            : { instantiationDict: config.data.instantiation_dict }),
        },
      });
    }
  }
  return buildWebarenaTemplateVocabulary(tasks);
}

function render(template: string, slots: Record<string, unknown>): string {
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (match, slot: string) =>
    slot in slots ? String(slots[slot]) : match,
  );
}

/**
 * A new task from `task`: one slot of its intent template refilled with a value the same
 * template takes elsewhere, or undefined when the task has no template or no slot has
 * another value.
 */
export function mutateWebarenaTask(
  task: Task,
  random: SeededRandom,
  vocabulary: WebarenaTemplateVocabulary,
): Task | undefined {
  const template = task.meta.intentTemplate;
  const templateId = task.meta.intentTemplateId;
  const slots = task.meta.instantiationDict as Record<string, unknown> | undefined;
  if (typeof template !== 'string' || typeof templateId !== 'number' || !slots) return undefined;
  const bySlot = vocabulary.byTemplate.get(templateId);
  const options: { slot: string; value: unknown }[] = [];
  const offer = (slot: string, current: unknown, encodedValues: readonly string[]) => {
    for (const encoded of encodedValues) {
      if (encoded === JSON.stringify(current)) continue;
      const value = JSON.parse(encoded) as unknown;
      // A value of another type (a number for a text slot) would not read right.
      if (typeof value !== typeof current) continue;
      if (
        !options.some((option) => option.slot === slot && JSON.stringify(option.value) === encoded)
      ) {
        options.push({ slot, value });
      }
    }
  };
  for (const [slot, current] of Object.entries(slots)) {
    if (!template.includes(`{{${slot}}}`)) continue;
    offer(slot, current, bySlot?.get(slot) ?? []);
  }
  if (options.length === 0) {
    for (const [slot, current] of Object.entries(slots)) {
      if (!template.includes(`{{${slot}}}`)) continue;
      offer(slot, current, vocabulary.bySiteSlot.get(`${siteOf(task)}|${slot}`) ?? []);
      if (typeof current === 'number' && Number.isInteger(current)) {
        offer(
          slot,
          current,
          [current + 1, ...(current > 1 ? [current - 1] : [])].map((value) =>
            JSON.stringify(value),
          ),
        );
      }
    }
  }
  if (options.length === 0) return undefined;
  const choice = random.choice(options);
  const instantiation = { ...slots, [choice.slot]: choice.value };
  const { config: _config, evalTypes: _evalTypes, source: _source, ...meta } = task.meta;
  return {
    id: `${task.id}~${choice.slot}=${JSON.stringify(choice.value)}`,
    domain: task.domain,
    instruction: render(template, instantiation),
    origin: 'generated',
    parentId: task.id,
    meta: { ...meta, instantiationDict: instantiation, mutatedSlot: choice.slot },
  };
}
