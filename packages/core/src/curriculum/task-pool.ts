/**
 * `TaskPool`: the seed tasks and every generated task, with lineage (`origin`,
 * `parentId`, `iteration` on each task), per-task statistics, JSON snapshots for
 * checkpoints, and the per-iteration batch sampler that bounds the share of generated
 * tasks by `lambda`.
 */
import { z } from 'zod';
import { CheckpointError, ConfigError, InvalidArgumentError } from '../errors.js';
import { formatFieldPath } from '../mdp/jsonl.js';
import { type Task, type TaskInput, TaskSchema } from '../mdp/schemas.js';
import type { SeededRandom } from '../random/seeded-random.js';
import type { TaskValue } from './task-value.js';

/** What the curriculum knows about one task. */
export const TaskStatsSchema = z.object({
  /** Times the task was put in an iteration's batch. */
  timesSampled: z.number().int().nonnegative(),
  /** Times a rollout group of the task was observed. */
  timesObserved: z.number().int().nonnegative(),
  /** Times the task was chosen as a parent for new tasks. */
  timesExpanded: z.number().int().nonnegative(),
  /** Reward variance (task value, Eq. 7) of the last observed group. */
  lastVariance: z.number().finite().nonnegative().optional(),
  /** Mean reward of the last observed group. */
  lastMeanReward: z.number().finite().optional(),
  /** Iteration of the last observed group. */
  lastObservedIteration: z.number().int().nonnegative().optional(),
});
export type TaskStats = z.infer<typeof TaskStatsSchema>;

/** A task pool as saved in a checkpoint. */
export const TaskPoolSnapshotSchema = z.object({
  format: z.literal('dreamgym-task-pool'),
  version: z.literal(1),
  /** Tasks in insertion order (parents before their children), with their statistics. */
  entries: z.array(z.object({ task: TaskSchema, stats: TaskStatsSchema })),
});
export type TaskPoolSnapshot = z.infer<typeof TaskPoolSnapshotSchema>;

/** How many seed and generated tasks an iteration's batch holds. */
export interface BatchComposition {
  seed: number;
  generated: number;
}

/**
 * The exact make-up of a batch of `size` tasks: `generated = min(floor(lambda * size),
 * available generated tasks)` and `seed = size - generated`. So the share of generated
 * tasks never exceeds `lambda`, is 0 while there are none, and is 0 for `lambda = 0`.
 * (`floor` is taken with a 1e-9 tolerance so that, e.g., 0.29 * 100 counts as 29.)
 */
export function batchComposition(
  size: number,
  lambda: number,
  availableGenerated: number,
): BatchComposition {
  if (!Number.isInteger(size) || size < 0) {
    throw new InvalidArgumentError(`Batch size must be a non-negative integer, got ${size}.`, {
      argument: 'size',
    });
  }
  if (!(lambda >= 0 && lambda <= 1)) {
    throw new ConfigError(`lambda must be in [0, 1], got ${lambda}.`, {
      field: 'curriculum.lambda',
    });
  }
  const generated = Math.min(Math.floor(lambda * size + 1e-9), availableGenerated);
  return { seed: size - generated, generated };
}

/**
 * `count` items drawn from `items` spread as evenly as possible: without replacement
 * while the items last, then again from a fresh shuffle, so no item appears twice
 * before every item has appeared once.
 */
function drawSpread<T>(items: readonly T[], count: number, random: SeededRandom): T[] {
  const drawn: T[] = [];
  while (drawn.length < count) {
    const round = random.shuffle([...items]);
    drawn.push(...round.slice(0, count - drawn.length));
  }
  return drawn;
}

function emptyStats(): TaskStats {
  return { timesSampled: 0, timesObserved: 0, timesExpanded: 0 };
}

/** The curriculum's task pool. */
export class TaskPool {
  private readonly entries = new Map<string, { task: Task; stats: TaskStats }>();

  /** A pool holding `seedTasks` (validated; ids must be unique). */
  constructor(seedTasks: Iterable<TaskInput> = []) {
    this.add(seedTasks);
  }

  /** Number of tasks. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Adds tasks, validated by `TaskSchema`. Throws a `ConfigError` naming the field for an
   * invalid task, a duplicate id, or a generated task whose `parentId` is not in the
   * pool (lineage must stay complete). Adds nothing when any task is rejected.
   */
  add(tasks: Iterable<TaskInput>): Task[] {
    const parsed: Task[] = [];
    const ids = new Set<string>();
    let position = 0;
    for (const input of tasks) {
      const result = TaskSchema.safeParse(input);
      if (!result.success) {
        const issue = result.error.issues[0]!;
        const field = formatFieldPath([String(position), ...issue.path]);
        throw new ConfigError(`Task ${position} cannot join the pool: ${field}: ${issue.message}`, {
          field,
          cause: result.error,
        });
      }
      const task = result.data;
      if (this.entries.has(task.id) || ids.has(task.id)) {
        throw new ConfigError(
          `Task ${position} cannot join the pool: id "${task.id}" is already taken. Task ids must be unique.`,
          { field: `${position}.id` },
        );
      }
      if (task.origin === 'generated') {
        if (task.parentId === undefined) {
          throw new ConfigError(
            `Generated task "${task.id}" has no parentId; the pool records the lineage of every generated task.`,
            { field: `${position}.parentId` },
          );
        }
        if (!this.entries.has(task.parentId) && !ids.has(task.parentId)) {
          throw new ConfigError(
            `Generated task "${task.id}" names parent "${task.parentId}", which is not in the pool. Add the parent first.`,
            { field: `${position}.parentId` },
          );
        }
      }
      ids.add(task.id);
      parsed.push(task);
      position += 1;
    }
    for (const task of parsed) this.entries.set(task.id, { task, stats: emptyStats() });
    return parsed;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** The task with this id, or undefined. */
  get(id: string): Task | undefined {
    return this.entries.get(id)?.task;
  }

  /** The task's statistics (a copy), or undefined when it is not in the pool. */
  stats(id: string): TaskStats | undefined {
    const entry = this.entries.get(id);
    return entry ? { ...entry.stats } : undefined;
  }

  /** All tasks, in insertion order. */
  tasks(): Task[] {
    return [...this.entries.values()].map((entry) => entry.task);
  }

  /** Tasks with `origin: 'seed'`, in insertion order. */
  seedTasks(): Task[] {
    return this.tasks().filter((task) => task.origin === 'seed');
  }

  /** Tasks with `origin: 'generated'`, in insertion order. */
  generatedTasks(): Task[] {
    return this.tasks().filter((task) => task.origin === 'generated');
  }

  /** The task's ancestry: the task itself, its parent, its parent's parent... up to a seed task. */
  lineage(id: string): Task[] {
    const chain: Task[] = [];
    let current = this.entries.get(id)?.task;
    while (current) {
      chain.push(current);
      current =
        current.parentId === undefined ? undefined : this.entries.get(current.parentId)?.task;
    }
    return chain;
  }

  /** Tasks generated directly from `id`, in insertion order. */
  children(id: string): Task[] {
    return this.tasks().filter((task) => task.parentId === id);
  }

  /** Counts one more sampling of each id (an id listed twice counts twice). */
  recordSampled(ids: Iterable<string>): void {
    for (const id of ids) this.entryOf(id).stats.timesSampled += 1;
  }

  /** Records the value of a task's latest rollout group, observed at `iteration`. */
  recordValue(value: TaskValue, iteration?: number): void {
    const stats = this.entryOf(value.taskId).stats;
    stats.timesObserved += 1;
    stats.lastVariance = value.variance;
    stats.lastMeanReward = value.meanReward;
    if (iteration !== undefined) stats.lastObservedIteration = iteration;
  }

  /** Counts one more expansion of the task (it was chosen as a parent). */
  recordExpanded(id: string): void {
    this.entryOf(id).stats.timesExpanded += 1;
  }

  /**
   * An iteration's batch of `size` tasks: exactly {@link batchComposition}`(size, lambda,
   * generated tasks in the pool)` generated tasks and the rest seed tasks, each group
   * drawn uniformly without replacement while it lasts (with repeats only when the
   * batch needs more tasks than the group has), then shuffled together. Counts each
   * drawn task as sampled. With `lambda = 0` (curriculum off) the batch is all seed tasks.
   */
  sampleBatch(size: number, lambda: number, random: SeededRandom): Task[] {
    const seeds = this.seedTasks();
    const generated = this.generatedTasks();
    const composition = batchComposition(size, lambda, generated.length);
    if (composition.seed > 0 && seeds.length === 0) {
      throw new ConfigError(
        'The task pool has no seed tasks to sample from; load seed tasks from the dataset first.',
        { field: 'tasks' },
      );
    }
    const batch = random.shuffle([
      ...drawSpread(seeds, composition.seed, random),
      ...drawSpread(generated, composition.generated, random),
    ]);
    this.recordSampled(batch.map((task) => task.id));
    return batch;
  }

  /** A JSON-ready snapshot for checkpoints; restore it with {@link TaskPool.fromJSON}. */
  toJSON(): TaskPoolSnapshot {
    return {
      format: 'dreamgym-task-pool',
      version: 1,
      entries: [...this.entries.values()].map(({ task, stats }) => ({
        task: structuredClone(task),
        stats: { ...stats },
      })),
    };
  }

  /**
   * Restores a pool from {@link TaskPool.toJSON} output (parsed JSON). Throws a
   * `CheckpointError` naming the field (`entries.3.task.instruction`) when the snapshot
   * is malformed, has duplicate ids or breaks lineage. `source` (a file path) goes into
   * the message.
   */
  static fromJSON(value: unknown, options: { source?: string } = {}): TaskPool {
    const where = options.source ? ` in ${options.source}` : '';
    const fail = (field: string, message: string, cause?: unknown): never => {
      throw new CheckpointError(
        `Task pool snapshot${where} is corrupt: field \`${field}\`: ${message}. Restore it from an intact checkpoint.`,
        { ...(options.source ? { path: options.source } : {}), cause },
      );
    };
    const result = TaskPoolSnapshotSchema.safeParse(value);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      const more =
        result.error.issues.length > 1 ? ` (+${result.error.issues.length - 1} more)` : '';
      return fail(formatFieldPath(issue.path) || '(root)', `${issue.message}${more}`, result.error);
    }
    const pool = new TaskPool();
    for (const [position, { task, stats }] of result.data.entries.entries()) {
      if (pool.entries.has(task.id)) {
        fail(`entries.${position}.task.id`, `duplicate task id "${task.id}"`);
      }
      if (
        task.origin === 'generated' &&
        (task.parentId === undefined || !pool.entries.has(task.parentId))
      ) {
        fail(
          `entries.${position}.task.parentId`,
          task.parentId === undefined
            ? `generated task "${task.id}" has no parent`
            : `parent "${task.parentId}" of task "${task.id}" is not an earlier entry`,
        );
      }
      pool.entries.set(task.id, { task, stats: { ...stats } });
    }
    return pool;
  }

  private entryOf(id: string): { task: Task; stats: TaskStats } {
    const entry = this.entries.get(id);
    if (!entry) {
      throw new ConfigError(`Task "${id}" is not in the curriculum's task pool.`, {
        field: 'taskId',
      });
    }
    return entry;
  }
}
