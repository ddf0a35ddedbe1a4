/**
 * Selection of the tasks to expand: those whose rollouts disagree (non-zero reward
 * variance), most informative first.
 */

import { InvalidArgumentError } from '../errors.js';
import type { TaskValue } from './task-value.js';

/** A task value with how often the task was already expanded, for tie-breaking. */
export interface ExpansionCandidate extends TaskValue {
  /** Times the task was already chosen as a parent for new tasks. */
  timesExpanded: number;
}

/** Options of {@link selectTasksToExpand}. */
export interface TaskSelectionOptions {
  /** Only tasks with a variance strictly above this are selected. Default 0. */
  minVariance?: number;
}

/**
 * Compares candidates for expansion: higher variance first, then fewer past expansions
 * (spreads the curriculum over tasks), then task id in code-unit order (locale-independent,
 * so runs are reproducible on any machine).
 */
export function compareExpansionCandidates(a: ExpansionCandidate, b: ExpansionCandidate): number {
  if (a.variance !== b.variance) return b.variance - a.variance;
  if (a.timesExpanded !== b.timesExpanded) return a.timesExpanded - b.timesExpanded;
  return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
}

/**
 * The top `m` candidates with variance above `minVariance` (default 0), ordered by
 * {@link compareExpansionCandidates}. Returns fewer when fewer qualify.
 */
export function selectTasksToExpand<C extends ExpansionCandidate>(
  candidates: readonly C[],
  m: number,
  options: TaskSelectionOptions = {},
): C[] {
  if (!Number.isInteger(m) || m < 0) {
    throw new InvalidArgumentError(
      `selectTasksToExpand() needs a non-negative integer m, got ${m}.`,
      { argument: 'm' },
    );
  }
  const minVariance = options.minVariance ?? 0;
  return candidates
    .filter((candidate) => candidate.variance > minVariance)
    .sort(compareExpansionCandidates)
    .slice(0, m);
}
