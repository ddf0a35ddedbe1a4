import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { selectTasksToExpand } from './task-selection.js';

const candidate = (taskId: string, variance: number, timesExpanded = 0) => ({
  taskId,
  variance,
  meanReward: 0.5,
  rollouts: 4,
  timesExpanded,
});

describe('selectTasksToExpand', () => {
  it('keeps only non-zero variance, highest first, top m', () => {
    const selected = selectTasksToExpand(
      [candidate('a', 0), candidate('b', 0.1875), candidate('c', 0.25), candidate('d', 0.09)],
      2,
    );
    expect(selected.map((c) => c.taskId)).toEqual(['c', 'b']);
    expect(selectTasksToExpand([candidate('a', 0), candidate('b', 0)], 3)).toEqual([]);
  });

  it('breaks ties by fewer past expansions, then by id in code-unit order', () => {
    const selected = selectTasksToExpand(
      [
        candidate('task-b', 0.25, 1),
        candidate('task-c', 0.25, 0),
        candidate('task-a', 0.25, 1),
        candidate('Task-z', 0.25, 1),
      ],
      4,
    );
    // 'T' (84) sorts before 't' (116) whatever the locale.
    expect(selected.map((c) => c.taskId)).toEqual(['task-c', 'Task-z', 'task-a', 'task-b']);
  });

  it('honours minVariance, returns fewer than m when fewer qualify, and checks m', () => {
    const candidates = [candidate('a', 0.25), candidate('b', 0.1), candidate('c', 0.05)];
    expect(selectTasksToExpand(candidates, 5, { minVariance: 0.05 }).map((c) => c.taskId)).toEqual([
      'a',
      'b',
    ]);
    expect(selectTasksToExpand(candidates, 0)).toEqual([]);
    expect(() => selectTasksToExpand(candidates, -1)).toThrow(InvalidArgumentError);
    expect(() => selectTasksToExpand(candidates, 1.5)).toThrow(InvalidArgumentError);
  });

  it('does not reorder its input', () => {
    const candidates = [candidate('a', 0.1), candidate('b', 0.2)];
    selectTasksToExpand(candidates, 2);
    expect(candidates.map((c) => c.taskId)).toEqual(['a', 'b']);
  });
});
