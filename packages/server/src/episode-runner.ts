/**
 * `EpisodeRunner`: one served `Environment` and the episode it is playing. It draws the
 * task of each `reset` from the {@link TaskSource}, records the steps, turns results into
 * OpenEnv replies, and hands every episode to the task source when it ends (finished or
 * abandoned). One runner serves one WebSocket session, or one HTTP episode.
 */
import { randomUUID } from 'node:crypto';
import {
  type Environment,
  EnvironmentStateError,
  type Observation,
  type Step,
  type StepResult,
  type Task,
} from '@dreamgym/core';
import type {
  Action,
  ObservationMetadata,
  ResetParameters,
  StepReply,
  WireState,
} from './protocol/openenv-messages.js';
import type { EpisodeRecord, TaskSource } from './task-source.js';

interface Episode {
  id: string;
  task: Task;
  state: Observation;
  steps: Step[];
  done: boolean;
  truncated: boolean;
  success: boolean;
  totalReward: number;
  startedAt: number;
}

/** Options of {@link EpisodeRunner}. */
export interface EpisodeRunnerOptions {
  environment: Environment;
  tasks: TaskSource;
  /**
   * Steps after which the server itself ends the episode as truncated, for environments
   * without a cap of their own. Default: none (the environment's own limit applies).
   */
  maxSteps?: number;
}

function isSuccess(result: StepResult): boolean {
  const success = result.info.success;
  if (typeof success === 'boolean') return success;
  return result.done && !result.truncated && result.reward > 0;
}

/** Plays episodes of one environment and reports them. */
export class EpisodeRunner {
  private readonly environment: Environment;
  private readonly tasks: TaskSource;
  private readonly maxSteps: number | undefined;
  private episode: Episode | undefined;
  private lastReply: StepReply | undefined;
  private closed = false;

  constructor(options: EpisodeRunnerOptions) {
    this.environment = options.environment;
    this.tasks = options.tasks;
    this.maxSteps = options.maxSteps;
  }

  /** The environment this runner plays. */
  get playing(): Environment {
    return this.environment;
  }

  /** True while an episode is running (reset, not yet done). */
  get running(): boolean {
    return this.episode !== undefined && !this.episode.done;
  }

  /** The reply of the episode's last `reset` or `step` (what the agent sees now); undefined before the first reset. */
  get current(): StepReply | undefined {
    return this.lastReply;
  }

  /** Id of the current (or last) episode. */
  get episodeId(): string | undefined {
    return this.episode?.id;
  }

  /** Starts an episode; a running one is abandoned first. */
  async reset(parameters: ResetParameters): Promise<StepReply> {
    this.ensureOpen('reset');
    await this.abandon();
    const task = await this.tasks.drawTask({
      ...(parameters.seed === undefined ? {} : { seed: parameters.seed }),
      ...(parameters.task_id === undefined ? {} : { taskId: parameters.task_id }),
    });
    const startedAt = performance.now();
    const state = await this.environment.reset(task);
    this.episode = {
      id: parameters.episode_id ?? randomUUID(),
      task,
      state,
      steps: [],
      done: false,
      truncated: false,
      success: false,
      totalReward: 0,
      startedAt,
    };
    this.lastReply = this.reply(this.episode, state, null, false);
    return this.lastReply;
  }

  /** Applies an action; the episode is reported to the task source when it ends. */
  async step(action: Action): Promise<StepReply> {
    this.ensureOpen('step');
    const episode = this.episode;
    if (!episode) {
      throw new EnvironmentStateError('step before reset: send a reset message first.');
    }
    if (episode.done) {
      throw new EnvironmentStateError(
        `episode ${episode.id} has ended (done); send reset to start another.`,
      );
    }
    const result = await this.environment.step(action.action);
    const capped =
      this.maxSteps !== undefined && !result.done && episode.steps.length + 1 >= this.maxSteps;
    const done = result.done || capped;
    const truncated = capped || (result.done && result.truncated);
    episode.steps.push({
      observation: episode.state,
      action: action.action,
      reward: result.reward,
      done,
      ...(truncated ? { truncated } : {}),
      ...(typeof result.info.reasoning === 'string' ? { reasoning: result.info.reasoning } : {}),
    });
    episode.state = result.observation;
    episode.totalReward += result.reward;
    episode.done = done;
    episode.truncated = truncated;
    episode.success = done && !truncated && isSuccess(result);
    const reply = this.reply(
      episode,
      result.observation,
      result.reward,
      result.info.invalidAction === true,
    );
    this.lastReply = reply;
    if (done) await this.tasks.episodeFinished?.(this.record(episode));
    return reply;
  }

  /** The episode state (OpenEnv's `State`). */
  state(): WireState {
    const episode = this.episode;
    return {
      episode_id: episode?.id ?? null,
      step_count: episode?.steps.length ?? 0,
      task_id: episode?.task.id ?? null,
      instruction: episode?.task.instruction ?? null,
      done: episode?.done ?? false,
      truncated: episode?.truncated ?? false,
      total_reward: episode?.totalReward ?? 0,
    };
  }

  /** Abandons a running episode and closes the environment. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.abandon();
    } finally {
      await this.environment.close();
    }
  }

  private async abandon(): Promise<void> {
    const episode = this.episode;
    this.episode = undefined;
    if (episode && !episode.done) await this.tasks.episodeAbandoned?.(this.record(episode));
  }

  private record(episode: Episode): EpisodeRecord {
    return {
      episodeId: episode.id,
      task: episode.task,
      steps: episode.steps,
      finalObservation: episode.steps.length > 0 ? episode.state : undefined,
      success: episode.success,
      truncated: episode.truncated,
      totalReward: episode.totalReward,
      startedAt: episode.startedAt,
      endedAt: performance.now(),
    };
  }

  private reply(
    episode: Episode,
    observation: Observation,
    reward: number | null,
    invalidAction: boolean,
  ): StepReply {
    const metadata: ObservationMetadata = {
      episode_id: episode.id,
      task_id: episode.task.id,
      task_origin: episode.task.origin,
      step: episode.steps.length,
      truncated: episode.truncated,
      success: episode.success,
      invalid_action: invalidAction,
    };
    return {
      observation: {
        text: observation.text,
        actions: observation.actions ?? [],
        instruction: episode.task.instruction,
        metadata,
      },
      reward,
      done: episode.done,
    };
  }

  private ensureOpen(method: string): void {
    if (this.closed) throw new EnvironmentStateError(`${method} on a closed session.`);
  }
}
