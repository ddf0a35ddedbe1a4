/**
 * MiniWoB++ task mutation, the embedded curriculum generator: a new utterance on the page of
 * the parent's seed. The part of the instruction that names the target changes to another
 * target the same page has (another button label, link, tab, the 2nd field instead of the
 * 3rd), or, for a quoted text that names no element (`Enter "Bernardine" ...`), to another
 * text the task's training instances quote. The child keeps the parent's page and seed, and
 * its initial state is the parent's with the page's instruction line rewritten: a task the
 * synthetic environment can play from its first state. Tasks whose utterance never varies
 * (`click-test`, `click-dialog`, `focus-text`) give none.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ObservationLine, parseObservationLines, suggestTypedTexts } from '@dreamgym/browser';
import type { Observation, SeededRandom, Task } from '@dreamgym/core';
import { MINIWOB_TASKS_FILE } from './datasets/tasks.js';

/** Texts the training instances of each MiniWoB++ task quote, for mutating typed texts. */
export interface MiniwobVocabulary {
  /** Quoted phrases per task page (`enter-text` -> `['Bernardine', 'Kasey', ...]`). */
  quoted: Record<string, string[]>;
}

/** The vocabulary of a list of tasks (the training split only: never mutate towards evaluation data). */
export function buildMiniwobVocabulary(tasks: Iterable<Task>): MiniwobVocabulary {
  const quoted: Record<string, Set<string>> = {};
  for (const task of tasks) {
    if (task.meta.split !== 'train' || typeof task.meta.miniwobTask !== 'string') continue;
    const phrases = quoted[task.meta.miniwobTask] ?? new Set<string>();
    quoted[task.meta.miniwobTask] = phrases;
    for (const match of task.instruction.matchAll(/"([^"]+)"/g)) phrases.add(match[1]!);
  }
  return {
    quoted: Object.fromEntries(
      Object.entries(quoted).map(([name, phrases]) => [name, [...phrases].sort()]),
    ),
  };
}

/** The vocabulary of a dataset directory's training tasks, read at once. */
export function loadMiniwobVocabularySync(dataDir: string): MiniwobVocabulary {
  const text = readFileSync(join(dataDir, MINIWOB_TASKS_FILE), 'utf8');
  const tasks = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Task);
  return buildMiniwobVocabulary(tasks);
}

const ORDINAL = /\b(\d+)(st|nd|rd|th)\b/;

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/** Elements of the page (lines with an id and a name). */
function namedElements(observation: Observation | undefined): ObservationLine[] {
  if (!observation) return [];
  return parseObservationLines(observation.text).filter(
    (line) => line.id !== undefined && line.name !== '',
  );
}

interface Replacement {
  from: string;
  choices: string[];
}

/** What of the instruction can change, and to what. */
function replacements(task: Task, vocabulary: MiniwobVocabulary | undefined): Replacement[] {
  const instruction = task.instruction;
  const elements = namedElements(task.initialObservation);
  const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  /** `name` as a whole word or phrase of the instruction (`ONE`, `Tab #2`, `"Ok"`). */
  const mentions = (name: string) =>
    new RegExp(`(^|[^\\w#])${escapeRegExp(name)}(?![\\w#])`).test(instruction);
  /** Names of the other elements of the role(s) that `target` has on the page. */
  const sameRole = (target: string, exclude: (name: string) => boolean) => {
    const roles = new Set(
      elements
        .filter((line) => line.name.toLowerCase() === target.toLowerCase())
        .map((line) => line.role),
    );
    return [
      ...new Set(
        elements
          .filter(
            (line) => roles.has(line.role) && line.name.toLowerCase() !== target.toLowerCase(),
          )
          .map((line) => line.name),
      ),
    ].filter((name) => !exclude(name));
  };
  const found: Replacement[] = [];
  const quoted = /"([^"]+)"/.exec(instruction)?.[1];
  if (quoted !== undefined) {
    const onPage = sameRole(quoted, (name) => name.includes('"'));
    if (elements.some((line) => line.name.toLowerCase() === quoted.toLowerCase())) {
      found.push({ from: `"${quoted}"`, choices: onPage.map((name) => `"${name}"`) });
    } else {
      const name = String(task.meta.miniwobTask ?? '');
      const texts = (vocabulary?.quoted[name] ?? []).filter((text) => text !== quoted);
      found.push({ from: `"${quoted}"`, choices: texts.map((text) => `"${text}"`) });
    }
    return found;
  }
  // An element named in the instruction's words (`Click button ONE.`, `Click on Tab #2.`).
  for (const line of elements) {
    if (mentions(line.name) && !found.some((entry) => entry.from === line.name)) {
      found.push({ from: line.name, choices: sameRole(line.name, mentions) });
    }
  }
  // An ordinal of the elements of the role the instruction names (`the 3rd input textbox`).
  const position = ORDINAL.exec(instruction);
  if (position && task.initialObservation) {
    const lines = parseObservationLines(task.initialObservation.text).filter(
      (line) =>
        line.id !== undefined && instruction.toLowerCase().includes(line.role.toLowerCase()),
    );
    const choices = Array.from({ length: lines.length }, (_, index) => ordinal(index + 1)).filter(
      (text) => text !== position[0],
    );
    found.push({ from: position[0], choices });
  }
  return found;
}

/** A slug of a replacement for task ids. */
function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'x'
  );
}

/**
 * A new task on the parent's page with another target in its utterance, or undefined when
 * the utterance names nothing that can change.
 *
 * @example
 * mutateMiniwobTask(clickButtonTask, random); // "Click on the \"Ok\" button." -> "Click on the \"previous\" button."
 */
export function mutateMiniwobTask(
  task: Task,
  random: SeededRandom,
  vocabulary?: MiniwobVocabulary,
): Task | undefined {
  const options = replacements(task, vocabulary).filter((entry) => entry.choices.length > 0);
  if (options.length === 0) return undefined;
  const { from, choices } = random.choice(options);
  const to = random.choice(choices);
  const instruction = task.instruction.replace(from, to);
  const child: Task = {
    id: `${task.id}~${slug(to)}`,
    domain: task.domain,
    instruction,
    origin: 'generated',
    parentId: task.id,
    meta: { ...task.meta, mutation: { from, to } },
  };
  if (task.initialObservation) {
    const { text, meta } = task.initialObservation;
    const typeSuggestions = suggestTypedTexts(instruction);
    child.initialObservation = {
      text: text.replace(`StaticText '${task.instruction}'`, `StaticText '${instruction}'`),
      ...(meta
        ? {
            meta: {
              ...meta,
              instruction,
              ...(typeSuggestions.length > 0 ? { typeSuggestions } : {}),
            },
          }
        : {}),
    };
  }
  return child;
}
