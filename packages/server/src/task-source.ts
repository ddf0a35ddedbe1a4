/**
 * Where served episodes get their tasks, and where finished episodes go: the seam between
 * the protocol server (any `Environment`) and DreamGym's curriculum and replay buffer.
 */
import {
  ConfigError,
  type Observation,
  SeededRandom,
  type Step,
  type Task,
  TaskSchema,
} from '@dreamgym/core';

/** One served episode, as handed to {@link TaskSource} when it ends. */
export interface EpisodeRecord {
  /** The episode id on the wire (the client's `episode_id`, or a UUID). */
  episodeId: string;
  task: Task;
  /** The steps, each with the state it was taken in. */
  steps: Step[];
  /** The state after the last step. */
  finalObservation: Observation | undefined;
  /** True when the task was accomplished. */
  success: boolean;
  /** True when a limit, not the task, ended it. */
  truncated: boolean;
  /** Sum of the step rewards. */
  totalReward: number;
  /** `performance.now()` at reset and at the end. */
  startedAt: number;
  endedAt: number;
}

/** What a `reset` asks for. */
export interface TaskRequest {
  /** Seeds the choice: the same seed gives the same task. */
  seed?: number;
  /** A task id to play; unknown ids are refused with a `ConfigError` on field `task_id`. */
  taskId?: string;
}

/** Supplies tasks to served episodes and receives their outcomes. */
export interface TaskSource {
  /** The task of a new episode. A `ConfigError` is reported to the client as a validation error. */
  drawTask(request: TaskRequest): Task | Promise<Task>;
  /** An episode ran to `done` (the task ended it, or a limit did). */
  episodeFinished?(episode: EpisodeRecord): void | Promise<void>;
  /** An episode ended early: a new `reset`, a disconnect, the idle reaper or shutdown. */
  episodeAbandoned?(episode: EpisodeRecord): void | Promise<void>;
}

/**
 * A fixed list of tasks, drawn uniformly with a seeded random generator: for serving an
 * environment without DreamGym's curriculum.
 */
export class StaticTaskSource implements TaskSource {
  private readonly tasks: Task[];
  private readonly byId: Map<string, Task>;
  private readonly random: SeededRandom;

  constructor(tasks: readonly Task[], options: { seed?: number } = {}) {
    if (tasks.length === 0) {
      throw new ConfigError('StaticTaskSource needs at least one task.', { field: 'tasks' });
    }
    this.tasks = tasks.map((task) => TaskSchema.parse(task));
    this.byId = new Map(this.tasks.map((task) => [task.id, task]));
    this.random = new SeededRandom(options.seed ?? 0);
  }

  drawTask(request: TaskRequest): Task {
    if (request.taskId !== undefined) return findTask(this.byId, request.taskId);
    const random = request.seed === undefined ? this.random : new SeededRandom(request.seed);
    return this.tasks[random.int(this.tasks.length)]!;
  }
}

/** The task with `id`, or a `ConfigError` on `task_id` saying how many there are. */
export function findTask(tasks: ReadonlyMap<string, Task>, id: string): Task {
  const task = tasks.get(id);
  if (task) return task;
  throw new ConfigError(
    `task_id "${id}" is not one of the server's ${tasks.size} tasks. Leave task_id out to let the server draw a task, or pass the task_id an earlier observation reported.`,
    { field: 'task_id' },
  );
}
