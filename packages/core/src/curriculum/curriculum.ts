/**
 * `Curriculum`: DreamGym's curriculum task generation, tied together. Each iteration
 * the loop samples a batch (seed tasks plus at most a `lambda` share of generated
 * ones), runs groups of rollouts, reports their rewards to `observe`, and calls `grow`,
 * which picks the tasks whose rewards varied most (Eq. 7) and has the generator write
 * variations of them into the pool.
 */
import { z } from 'zod';
import { CheckpointError, ConfigError } from '../errors.js';
import { formatFieldPath } from '../mdp/jsonl.js';
import type { Task } from '../mdp/schemas.js';
import { parseOptions } from '../parse-options.js';
import type { SeededRandom } from '../random/seeded-random.js';
import { emptyGrowthWarning } from './growth-warning.js';
import type { TaskGenerator, TaskRejection } from './task-generator.js';
import { TaskPool, TaskPoolSnapshotSchema } from './task-pool.js';
import { selectTasksToExpand } from './task-selection.js';
import { type TaskRolloutGroup, type TaskValue, taskValues } from './task-value.js';

/** Curriculum settings. */
export const CurriculumConfigSchema = z.object({
  /** Ablation switch: `false` trains on seed tasks only and never generates tasks. Default true. */
  enabled: z.boolean().default(true),
  /** Upper bound on the share of generated tasks in each iteration's batch, in [0, 1]; the paper uses 0.2-0.5. Default 0.3. */
  lambda: z.number().min(0).max(1).default(0.3),
  /** m: how many of the highest-variance tasks are expanded per `grow`. Default 4. */
  tasksToExpand: z.number().int().positive().default(4),
  /** New tasks asked of the generator per expanded task. Default 2. */
  variantsPerTask: z.number().int().positive().default(2),
  /** Only tasks with reward variance strictly above this are expanded. Default 0. */
  minVariance: z.number().nonnegative().default(0),
  /** Stop growing when the pool holds this many tasks (seed included). Default: no limit. */
  maxPoolSize: z.number().int().positive().optional(),
  /** A task is expanded at most this many times in a run. Default: no limit. */
  maxExpansionsPerTask: z.number().int().positive().optional(),
  /** Whether generated tasks may themselves be expanded (generations of variations). Default true. */
  expandGenerated: z.boolean().default(true),
});
export type CurriculumConfig = z.infer<typeof CurriculumConfigSchema>;
export type CurriculumConfigInput = z.input<typeof CurriculumConfigSchema>;

/** A curriculum as saved in a checkpoint: the pool and the values not yet used by `grow`. */
export const CurriculumSnapshotSchema = z.object({
  format: z.literal('dreamgym-curriculum'),
  version: z.literal(1),
  pool: TaskPoolSnapshotSchema,
  pending: z.array(
    z.object({
      taskId: z.string().min(1),
      variance: z.number().finite().nonnegative(),
      meanReward: z.number().finite(),
      rollouts: z.number().int().positive(),
    }),
  ),
});
export type CurriculumSnapshot = z.infer<typeof CurriculumSnapshotSchema>;

/** What one `grow` did. */
export interface CurriculumGrowth {
  iteration: number;
  /** The expanded tasks with their values, most informative first. */
  expanded: TaskValue[];
  /** New tasks added to the pool. */
  added: Task[];
  /** Candidates the generator dropped, and why. */
  rejected: TaskRejection[];
  /** Why nothing was generated, when nothing was. */
  skipped?: 'disabled' | 'no-informative-task' | 'pool-full';
  /**
   * Set when tasks were expanded but none was added (every candidate rejected): why, and
   * what to do. `DreamGymLoop` logs it; a run that always gets it trains on its seed tasks only.
   */
  warning?: string;
}

/** Options of {@link Curriculum}. */
export interface CurriculumOptions {
  /** The task pool (seed tasks, or one restored with `TaskPool.fromJSON`). */
  pool: TaskPool;
  /** Writes the new tasks. */
  generator: TaskGenerator;
  /** Settings; validated, defaults applied. */
  config?: CurriculumConfigInput;
}

/** Parses curriculum settings, throwing a `ConfigError` naming the field (`curriculum.lambda`). */
export function parseCurriculumConfig(input: CurriculumConfigInput = {}): CurriculumConfig {
  return parseOptions(CurriculumConfigSchema, input, 'curriculum', 'curriculum');
}

/** The curriculum: task values, selection, generation and the `lambda`-bounded batch. */
export class Curriculum {
  readonly pool: TaskPool;
  readonly config: CurriculumConfig;
  private readonly generator: TaskGenerator;
  /** Latest value per task observed since the last `grow`; only fresh values drive expansion. */
  private pending = new Map<string, TaskValue>();

  constructor(options: CurriculumOptions) {
    this.pool = options.pool;
    this.generator = options.generator;
    this.config = parseCurriculumConfig(options.config);
  }

  /**
   * Records the rollout groups of one iteration: computes each task's value (Eq. 7),
   * stores it in the pool's statistics and keeps it for the next `grow`. Throws a
   * `ConfigError` for a task that is not in the pool. Returns the values.
   */
  observe(groups: Iterable<TaskRolloutGroup>, iteration?: number): TaskValue[] {
    const values = taskValues(groups);
    for (const value of values) {
      if (!this.pool.has(value.taskId)) {
        throw new ConfigError(
          `observe() got rollouts of task "${value.taskId}", which is not in the curriculum's pool. Pass only rollouts of tasks from sampleBatch().`,
          { field: 'taskId' },
        );
      }
    }
    for (const value of values) {
      this.pool.recordValue(value, iteration);
      this.pending.set(value.taskId, value);
    }
    return values;
  }

  /**
   * Expands the top `tasksToExpand` tasks observed since the last `grow` whose variance
   * exceeds `minVariance` (ties: fewer past expansions first, then id), asking the
   * generator for `variantsPerTask` new tasks each (fewer when `maxPoolSize` is near),
   * and adds what it returns to the pool with its lineage. Clears the observed values.
   */
  async grow(
    iteration: number,
    random: SeededRandom,
    options: { signal?: AbortSignal } = {},
  ): Promise<CurriculumGrowth> {
    const pending = [...this.pending.values()];
    this.pending = new Map();
    const base = { iteration, expanded: [], added: [], rejected: [] };
    if (!this.config.enabled) return { ...base, skipped: 'disabled' };
    const room =
      this.config.maxPoolSize === undefined
        ? Number.POSITIVE_INFINITY
        : this.config.maxPoolSize - this.pool.size;
    if (room <= 0) return { ...base, skipped: 'pool-full' };

    const candidates = pending
      .map((value) => ({
        ...value,
        task: this.pool.get(value.taskId)!,
        stats: this.pool.stats(value.taskId)!,
      }))
      .filter(
        ({ task, stats }) =>
          (this.config.expandGenerated || task.origin === 'seed') &&
          (this.config.maxExpansionsPerTask === undefined ||
            stats.timesExpanded < this.config.maxExpansionsPerTask),
      )
      .map((candidate) => ({ ...candidate, timesExpanded: candidate.stats.timesExpanded }));
    const selected = selectTasksToExpand(candidates, this.config.tasksToExpand, {
      minVariance: this.config.minVariance,
    });
    if (selected.length === 0) return { ...base, skipped: 'no-informative-task' };

    const count = Math.min(selected.length * this.config.variantsPerTask, room);
    const rejected: TaskRejection[] = [];
    const generated = await this.generator.generate(
      selected.map(({ task }) => task),
      count,
      {
        iteration,
        random,
        existing: this.pool.tasks(),
        onReject: (rejection) => rejected.push(rejection),
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    const added = this.pool.add(
      generated
        .slice(0, count)
        .map((task) => ({ ...task, origin: 'generated' as const, iteration })),
    );
    for (const { taskId } of selected) this.pool.recordExpanded(taskId);
    const warning = emptyGrowthWarning({
      expanded: selected.length,
      asked: count,
      added: added.length,
      rejected,
    });
    return {
      iteration,
      expanded: selected.map(({ taskId, variance, meanReward, rollouts }) => ({
        taskId,
        variance,
        meanReward,
        rollouts,
      })),
      added,
      rejected,
      ...(warning === undefined ? {} : { warning }),
    };
  }

  /**
   * The iteration's batch of `size` tasks: `min(floor(lambda * size), generated tasks)`
   * generated tasks, the rest seed tasks (see `batchComposition`); seed tasks only when
   * the curriculum is disabled.
   */
  sampleBatch(size: number, random: SeededRandom): Task[] {
    return this.pool.sampleBatch(size, this.config.enabled ? this.config.lambda : 0, random);
  }

  /** A JSON-ready snapshot for checkpoints. */
  toJSON(): CurriculumSnapshot {
    return {
      format: 'dreamgym-curriculum',
      version: 1,
      pool: this.pool.toJSON(),
      pending: [...this.pending.values()].map((value) => ({ ...value })),
    };
  }

  /**
   * Restores a curriculum from {@link Curriculum.toJSON} output. Throws a
   * `CheckpointError` naming the field when the snapshot is corrupt.
   */
  static fromJSON(
    value: unknown,
    options: Omit<CurriculumOptions, 'pool'> & { source?: string },
  ): Curriculum {
    const where = options.source ? ` in ${options.source}` : '';
    const fail = (field: string, message: string, cause?: unknown): never => {
      throw new CheckpointError(
        `Curriculum snapshot${where} is corrupt: field \`${field}\`: ${message}. Restore it from an intact checkpoint.`,
        { ...(options.source ? { path: options.source } : {}), cause },
      );
    };
    const result = CurriculumSnapshotSchema.safeParse(value);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      return fail(formatFieldPath(issue.path) || '(root)', issue.message, result.error);
    }
    const pool = TaskPool.fromJSON(result.data.pool, {
      ...(options.source ? { source: options.source } : {}),
    });
    const curriculum = new Curriculum({
      pool,
      generator: options.generator,
      ...(options.config ? { config: options.config } : {}),
    });
    for (const [position, value] of result.data.pending.entries()) {
      if (!pool.has(value.taskId)) {
        fail(`pending.${position}.taskId`, `task "${value.taskId}" is not in the pool`);
      }
      curriculum.pending.set(value.taskId, value);
    }
    return curriculum;
  }
}
