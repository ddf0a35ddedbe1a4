/**
 * Task mutation, the embedded curriculum generator: a new task of the same kind with other
 * entities or constraints.
 */
import type { SeededRandom, Task } from '@dreamgym/core';
import { notImplemented } from './not-implemented.js';

/**
 * A new task derived from `task` (`origin: 'generated'`, `parentId: task.id`, a new id, the
 * same domain), or undefined when none can be made.
 */
export function mutateMiniwobTask(task: Task, random: SeededRandom): Task | undefined {
  void task;
  void random;
  throw notImplemented(
    'mutateTask',
    'src/mutate-task.ts',
    'write mutateMiniwobTask(task, random): return a generated task of the same kind with other entities (or undefined)',
    7,
  );
}
