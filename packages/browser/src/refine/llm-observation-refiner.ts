/**
 * The paper's second stage of web state mapping: an LLM reads the flattened AX tree and the
 * task, and keeps what matters for the task. The refined observation is built from the
 * tree's own lines (the model only picks element ids and writes a short summary), so every
 * kept element keeps its id and actions still resolve.
 */
import { ModelError, ModelOutputError } from '@dreamgym/core';
import type { ChatModel } from '@dreamgym/core/models';
import { z } from 'zod';
import { formatObservationText } from '../axtree/page-observer.js';
import type { ObservationRefiner } from '../environment/options.js';

/** Options of {@link createLlmObservationRefiner}. */
export interface LlmObservationRefinerOptions {
  /** The model that reads the tree. */
  model: ChatModel;
  /** At most this many elements are kept. Default 40. */
  maxElements?: number;
  /** Largest tree (in characters) sent to the model; longer trees are cut at a line. Default 24 000. */
  maxTreeCharacters?: number;
  /** Sampling temperature. Default 0. */
  temperature?: number;
  /** What happens when the model fails or answers nonsense: keep the full tree (default) or throw. */
  onFailure?: 'full-tree' | 'throw';
}

const SelectionSchema = z.object({
  summary: z
    .string()
    .max(600)
    .describe('one or two sentences: what the page shows that matters for the task'),
  relevantIds: z
    .array(z.number().int().nonnegative())
    .max(200)
    .describe('ids of the elements needed for the task, most important first'),
});

function prompt(task: string, tree: string, maxElements: number): string {
  return [
    `Task: ${task}`,
    '',
    'Below is the accessibility tree of the current web page. Each element line starts with its id in brackets.',
    `Pick the at most ${maxElements} elements an agent needs to read or act on to make progress on the task (inputs, buttons, links, and the text with the facts it asks about), and summarize what the page shows that matters for the task.`,
    'Answer with JSON: {"summary": string, "relevantIds": number[]}. Use only ids that appear in the tree.',
    '',
    tree,
  ].join('\n');
}

/** Keeps the lines of `selected` ids, their ancestors (for context) and the text lines right under a kept element. */
export function selectTreeLines(tree: string, selected: ReadonlySet<number>): string {
  const lines = tree.split('\n');
  const keep = new Array<boolean>(lines.length).fill(false);
  const depthOf = (line: string) => /^\t*/.exec(line)![0].length;
  const idOf = (line: string) => {
    const match = /^\t*\[(\d+)\]/.exec(line);
    return match ? Number(match[1]) : undefined;
  };
  const stack: number[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const depth = depthOf(lines[index]!);
    while (stack.length > 0 && depthOf(lines[stack.at(-1)!]!) >= depth) stack.pop();
    const id = idOf(lines[index]!);
    if (id !== undefined && selected.has(id)) {
      keep[index] = true;
      for (const ancestor of stack) keep[ancestor] = true;
      for (let next = index + 1; next < lines.length && depthOf(lines[next]!) > depth; next += 1) {
        if (idOf(lines[next]!) === undefined) keep[next] = true;
      }
    }
    stack.push(index);
  }
  return lines.filter((_, index) => keep[index]).join('\n');
}

/**
 * Creates a refiner that asks `model` which elements matter for the task and keeps only
 * their lines (with their ancestors and their text), under a one-line summary:
 *
 * ```text
 * Tab 0 (current): Orders
 * URL: http://127.0.0.1:7780/admin/sales/order/
 *
 * Summary: the orders grid lists 20 orders; the filter form is open.
 * [31] textbox 'Order ID'
 * [40] button 'Apply Filters'
 * ```
 *
 * Ids the model invents are dropped. When the model fails (after the client's retries) or
 * keeps nothing, the full tree is used and `info.refinement.fallback` says why.
 */
export function createLlmObservationRefiner(
  options: LlmObservationRefinerOptions,
): ObservationRefiner {
  const maxElements = options.maxElements ?? 40;
  const maxCharacters = options.maxTreeCharacters ?? 24_000;
  return {
    async refine({ task, observation, instruction }) {
      const full = observation.text;
      let tree = observation.tree;
      if (tree.length > maxCharacters) tree = tree.slice(0, tree.lastIndexOf('\n', maxCharacters));
      const goal = instruction ? `${task.instruction}\n${instruction}` : task.instruction;
      const fallback = (reason: string) => {
        if (options.onFailure === 'throw') {
          throw new ModelOutputError(`Observation refinement failed: ${reason}`, {
            output: reason,
          });
        }
        return { text: full, info: { fallback: reason } };
      };
      let selection: z.infer<typeof SelectionSchema>;
      try {
        const response = await options.model.completeStructured({
          messages: [{ role: 'user', content: prompt(goal, tree, maxElements) }],
          schema: SelectionSchema,
          schemaName: 'observation_selection',
          temperature: options.temperature ?? 0,
        });
        selection = response.value;
      } catch (error) {
        if (ModelError.isInstance(error) || ModelOutputError.isInstance(error)) {
          if (options.onFailure === 'throw') throw error;
          return { text: full, info: { fallback: (error as Error).message } };
        }
        throw error;
      }
      const known = selection.relevantIds.filter((id) => observation.elements.has(id));
      const selected = new Set(known.slice(0, maxElements));
      if (selected.size === 0) return fallback('the model kept no element of the page');
      const kept = selectTreeLines(observation.tree, selected);
      const summary = selection.summary.trim().replace(/\s+/g, ' ');
      const body = summary === '' ? kept : `Summary: ${summary}\n${kept}`;
      return {
        text: formatObservationText(observation.tabs, observation.url, body),
        info: {
          keptElements: selected.size,
          droppedIds: selection.relevantIds.filter((id) => !observation.elements.has(id)),
          fullLines: observation.tree.split('\n').length,
          keptLines: kept.split('\n').length,
        },
      };
    },
  };
}
