/**
 * Recording episodes as offline trajectories: a wrapper around any `Environment` that passes
 * every call through and appends each finished episode to a JSONL file, one core
 * `Trajectory` per line (the format the web adapters' trajectory loaders read, and the
 * replay buffer's seed data).
 */
import {
  type Environment,
  EnvironmentStateError,
  type Observation,
  type Step,
  type StepResult,
  type Task,
  type Trajectory,
  TrajectorySchema,
} from '@dreamgym/core';
import { type ExperienceSource, JsonlWriter } from '@dreamgym/core/mdp';

/** Options of {@link TrajectoryRecorder.open}. */
export interface TrajectoryRecorderOptions {
  /** The JSONL file episodes are appended to (created with its directory). */
  output: string;
  /** Append to an existing file (default) or start it anew. */
  append?: boolean;
  /** `Trajectory.source` of the records. Default `offline`. */
  source?: ExperienceSource;
  /** Keep each observation's candidate-action list (large; the adapters recompute it). Default false. */
  keepCandidateActions?: boolean;
  /** Extra `Trajectory.meta` on every record (who recorded, with which policy...). */
  meta?: Record<string, unknown>;
  /** Close the wrapped environment on `close()`. Default true. */
  closeEnvironment?: boolean;
  /** Called after each record is written (progress display). */
  onRecord?: (trajectory: Trajectory) => void;
}

interface PendingEpisode {
  task: Task;
  steps: Step[];
  observation: Observation;
  index: number;
}

/**
 * Wraps `environment` so that every episode played through it is written to
 * `options.output` as one `Trajectory` line: the task, each step's observation, action,
 * reward, `done`, `truncated` and info, the final observation, and `success` (the last
 * step's `info.success` when the environment reports it, else a positive final reward
 * without truncation). An episode left unfinished (a new `reset` or `close` before `done`)
 * is written too, with `meta.unfinished: true` and `success: false`.
 *
 * @example
 * const recorder = await TrajectoryRecorder.open(environment, { output: 'data/web.jsonl' });
 * await recorder.reset(task);
 * await recorder.step('click [12]');
 * await recorder.close(); // writes the episode, closes the environment
 */
export class TrajectoryRecorder implements Environment {
  private pending: PendingEpisode | undefined;
  private episodes = 0;
  private closed = false;

  private constructor(
    readonly environment: Environment,
    private readonly writer: JsonlWriter<typeof TrajectorySchema>,
    private readonly options: TrajectoryRecorderOptions,
  ) {}

  /** Opens the output file and wraps `environment`. */
  static async open(
    environment: Environment,
    options: TrajectoryRecorderOptions,
  ): Promise<TrajectoryRecorder> {
    const writer = await JsonlWriter.open(options.output, TrajectorySchema, {
      append: options.append ?? true,
    });
    return new TrajectoryRecorder(environment, writer, options);
  }

  /** Episodes written so far. */
  get written(): number {
    return this.writer.written;
  }

  private stored(observation: Observation): Observation {
    if (this.options.keepCandidateActions || observation.actions === undefined) return observation;
    const { actions: _actions, ...rest } = observation;
    return rest;
  }

  async reset(task: Task): Promise<Observation> {
    if (this.closed) throw new EnvironmentStateError('reset() was called after close().');
    await this.flush();
    const observation = await this.environment.reset(task);
    this.pending = { task, steps: [], observation, index: this.episodes };
    this.episodes += 1;
    return observation;
  }

  async step(action: string): Promise<StepResult> {
    if (this.closed) throw new EnvironmentStateError('step() was called after close().');
    const result = await this.environment.step(action);
    const episode = this.pending;
    if (episode) {
      episode.steps.push({
        observation: this.stored(episode.observation),
        action,
        reward: result.reward,
        done: result.done,
        ...(result.truncated ? { truncated: true } : {}),
        ...(Object.keys(result.info).length > 0 ? { info: result.info } : {}),
      });
      episode.observation = result.observation;
      if (result.done) await this.flush();
    }
    return result;
  }

  /** Writes the pending episode, if any. */
  private async flush(): Promise<void> {
    const episode = this.pending;
    this.pending = undefined;
    if (!episode) return;
    const last = episode.steps.at(-1);
    const finished = last?.done === true;
    const reported = last?.info?.success;
    const success =
      finished &&
      (typeof reported === 'boolean' ? reported : last.reward > 0 && last.truncated !== true);
    const trajectory: Trajectory = {
      id: `${episode.task.id}#${new Date().toISOString()}#${episode.index}`,
      task: episode.task,
      steps: episode.steps,
      finalObservation: this.stored(episode.observation),
      source: this.options.source ?? 'offline',
      success,
      meta: {
        ...this.options.meta,
        recordedAt: new Date().toISOString(),
        ...(finished ? {} : { unfinished: true }),
      },
    };
    await this.writer.write(trajectory);
    this.options.onRecord?.(trajectory);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.flush();
    } finally {
      await this.writer.close();
      if (this.options.closeEnvironment ?? true) await this.environment.close();
    }
  }
}
