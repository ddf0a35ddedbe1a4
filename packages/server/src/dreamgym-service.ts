/**
 * `DreamGymService`: DreamGym's side of a served run. The Python trainer owns the policy;
 * the server keeps what the paper's loop keeps besides it:
 *
 * - the curriculum: `reset` draws tasks from `Curriculum.sampleBatch` (each drawn task served
 *   `rolloutsPerTask` times in a row, so consecutive episodes form GRPO groups); every
 *   `tasksPerIteration * rolloutsPerTask` finished episodes make an iteration, whose
 *   outcomes feed the per-task reward variance (`observe`) and grow the pool within
 *   `lambda` (`grow`);
 * - the replay buffer: each finished episode's transitions are written back (`synthetic`/`real`);
 * - the run folder, kept as every run's (`RunLedger`): `serve-config.json`, `experience.jsonl`
 *   (the transitions written back), `episodes.jsonl` (one line per finished episode) and
 *   `checkpoints/` (curriculum, draw queue, RNG and counters after each iteration and at
 *   shutdown). `resume` truncates what was logged after the last checkpoint, re-adds the run's
 *   experience to the buffer and continues from the checkpoint.
 */
import {
  ConfigError,
  Curriculum,
  type DomainAdapter,
  type Environment,
  type ExperienceModel,
  MutationTaskGenerator,
  type ReplayBuffer,
  SeededRandom,
  syntheticEnvironmentFromConfig,
  type Task,
  type TaskGenerator,
  type Transition,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { RewardGroups, TaskPool } from '@dreamgym/core/curriculum';
import { RunLedger } from '@dreamgym/core/internal';
import { CachingRetriever } from './caching-retriever.js';
import { type Logger, silentLogger } from './logger.js';
import {
  type Counters,
  DrawStateSchema,
  EPISODE_LOG,
  NEW_SERVED_COUNTERS,
  type ServedLedger,
  servedCountersSchema,
} from './run-folder.js';
import { SerialQueue } from './serial-queue.js';
import {
  type EpisodeLogLine,
  parseServeConfig,
  type ServeConfig,
  type ServeConfigInput,
} from './serve-config.js';
import type { ExtraMetric } from './server-metrics.js';
import type { SharedBuffer } from './shared-buffer.js';
import { type EpisodeRecord, findTask, type TaskRequest, type TaskSource } from './task-source.js';
import { type AppliedBatch, WriteBackQueue } from './write-back-queue.js';

/** Options of {@link DreamGymService.open}. */
export interface DreamGymServiceOptions {
  adapter: DomainAdapter;
  /** The replay buffer holding the offline transitions (the run's experience is re-added on resume). */
  replayBuffer: ReplayBuffer;
  /** Seed tasks of the curriculum. */
  seedTasks: readonly Task[];
  /** `synthetic` (default): episodes step the experience model. `real`: the real environment. */
  mode?: 'synthetic' | 'real';
  /** M_exp, for the synthetic mode. */
  experienceModel?: ExperienceModel;
  /** The real environment, for the real mode (each session gets its own). */
  realEnvironment?: () => Environment | Promise<Environment>;
  /** Writes new tasks; default `MutationTaskGenerator` over the adapter's `mutateTask`. */
  taskGenerator?: TaskGenerator;
  config?: ServeConfigInput;
  /** The run folder. */
  runDirectory: string;
  /** Continue the run in `runDirectory` from its last checkpoint. */
  resume?: boolean;
  logger?: Logger;
  /**
   * Share write-backs with other replicas of the run (on other machines, behind one load
   * balancer) through one LanceDB table, opened by the caller (`SharedBuffer.open`; the
   * service closes it): each replica appends the batches it writes back and adds the ones
   * the others appended to its own buffer, before serving and then as they come.
   */
  sharedBuffer?: SharedBuffer;
}

/**
 * Writes (finished episodes) the write queue holds before the step that finishes another waits
 * for it. Unbounded, a loaded server fell ever behind (~2,000 episodes, +80 MiB in 100k steps).
 */
const MAX_EPISODES_WAITING = 128;

/** The curriculum, replay buffer and run folder of a served DreamGym run. */
export class DreamGymService implements TaskSource {
  readonly config: ServeConfig;
  readonly mode: 'synthetic' | 'real';
  readonly runDirectory: string;
  private readonly options: DreamGymServiceOptions;
  private readonly logger: Logger;
  private readonly writes = new SerialQueue();
  private readonly writeBack: WriteBackQueue;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly retriever: CachingRetriever;
  private readonly batchListeners = new Set<(batch: AppliedBatch) => void>();
  /** Lines of `episodes.jsonl` waiting for the next flush. */
  private pendingEpisodeLines: string[] = [];
  private lastCheckpoint: string | undefined;
  private lastError: string | undefined;
  private closed = false;
  private shared: SharedBuffer | undefined;

  private constructor(
    options: DreamGymServiceOptions,
    config: ServeConfig,
    private readonly curriculum: Curriculum,
    private readonly ledger: ServedLedger,
    private queue: string[],
    /** The outcomes of the iteration in progress, per task. */
    private rewards: RewardGroups,
  ) {
    this.options = options;
    this.config = config;
    this.mode = options.mode ?? 'synthetic';
    this.runDirectory = options.runDirectory;
    this.logger = options.logger ?? silentLogger;
    // Without the cache, the wrapper still times the searches (for the status figures).
    this.retriever = new CachingRetriever(options.replayBuffer, {
      maxEntries: config.retrievalCache ? 8192 : 0,
    });
    this.writeBack = new WriteBackQueue(
      options.replayBuffer,
      (records) => ledger.appendExperience(records),
      {
        batchTransitions: config.writeBackBatch.transitions,
        flushMilliseconds: config.writeBackBatch.milliseconds,
      },
      (batch) => {
        this.counters.transitionsWritten += batch.length;
        this.shared?.push(batch);
        this.bufferChanged(batch);
      },
    );
  }

  private get counters(): Counters {
    return this.ledger.counters;
  }

  /** Opens a new run in `runDirectory`, or resumes the one there (`resume: true`). */
  static async open(options: DreamGymServiceOptions): Promise<DreamGymService> {
    const mode = options.mode ?? 'synthetic';
    if (mode === 'synthetic' && !options.experienceModel) {
      throw new ConfigError('The synthetic mode needs an experience model (experienceModel).', {
        field: 'experienceModel',
      });
    }
    if (mode === 'real' && !options.realEnvironment) {
      throw new ConfigError('The real mode needs a real environment (realEnvironment).', {
        field: 'realEnvironment',
      });
    }
    if (options.seedTasks.length === 0) {
      throw new ConfigError('Serving needs at least one seed task.', { field: 'seedTasks' });
    }
    const config = parseServeConfig(options.config);
    if (mode === 'real' && config.curriculum.enabled) {
      // Generated tasks exist only in the experience model's world: the real engine plays seed tasks.
      config.curriculum = { ...config.curriculum, enabled: false };
    }
    const generator =
      options.taskGenerator ?? new MutationTaskGenerator({ adapter: options.adapter });
    // Tuning settings change no outcome a resume must reproduce: left out of the hash.
    const { writeBackBatch: _batch, retrievalCache: _cache, ...semantics } = config;
    const { ledger, checkpoint } = await RunLedger.open(
      {
        runDirectory: options.runDirectory,
        holds: 'a served run',
        configFile: 'serve-config.json',
        counters: servedCountersSchema(mode),
        logs: { [EPISODE_LOG]: 'episodeLines' },
      },
      {
        resume: options.resume === true,
        settings: { config: semantics, mode, domain: options.adapter.name },
        config: { mode, domain: options.adapter.name, ...config },
        seed: config.seed,
        counters: NEW_SERVED_COUNTERS,
        replayBuffer: options.replayBuffer,
      },
    );
    let service: DreamGymService;
    if (checkpoint) {
      const curriculum = Curriculum.fromJSON(checkpoint.json('curriculum'), {
        generator,
        config: config.curriculum,
        source: `checkpoint ${checkpoint.name}`,
      });
      const draw = DrawStateSchema.parse(checkpoint.json('draw'));
      service = new DreamGymService(
        options,
        config,
        curriculum,
        ledger,
        draw.queue.filter((id) => curriculum.pool.has(id)),
        RewardGroups.fromJSON(draw.groups),
      );
      service.lastCheckpoint = checkpoint.name;
      service.logger.log('info', 'run.resumed', {
        runDirectory: options.runDirectory,
        checkpoint: checkpoint.name,
        iteration: ledger.counters.iteration,
        episodes: ledger.counters.episodesFinished,
        bufferSize: options.replayBuffer.size,
      });
    } else {
      service = new DreamGymService(
        options,
        config,
        new Curriculum({
          pool: new TaskPool(options.seedTasks),
          generator,
          config: config.curriculum,
        }),
        ledger,
        [],
        new RewardGroups(),
      );
      await service.checkpoint();
    }
    const shared = options.sharedBuffer;
    if (shared) {
      service.shared = shared;
      // Catches up with every batch in the table before the first session (a replica that
      // restarts takes what the others wrote meanwhile, and what it wrote after its checkpoint).
      await shared.start((transitions) => service.applyShared(transitions));
    }
    return service;
  }

  /** Adds transitions other replicas wrote back to the buffer: the write-back path, without the log. */
  private applyShared(transitions: readonly Transition[]): Promise<void> {
    if (transitions.length === 0) return Promise.resolve();
    return this.writes.run(async () => {
      await this.options.replayBuffer.add(transitions);
      this.bufferChanged(transitions);
    });
  }

  /** After the buffer took a batch: stale retrieval answers go, copies of the buffer follow. */
  private bufferChanged(batch: AppliedBatch): void {
    this.retriever.invalidate();
    for (const listener of this.batchListeners) listener(batch);
  }

  /** A fresh environment for one session: synthetic (experience model + buffer) or real. */
  async createEnvironment(): Promise<Environment> {
    if (this.mode === 'real') return this.options.realEnvironment!();
    const { config, options } = this;
    // The loop's mapping: a setting means the same in a served run as in `dreamgym train`.
    const { retrieval, history, maxSteps, invalidActionPenalty } = config;
    return syntheticEnvironmentFromConfig(
      { retrieval, history, maxSteps, invalidActionPenalty },
      {
        experienceModel: options.experienceModel!,
        retriever: this.retriever,
        adapter: options.adapter,
      },
    );
  }

  /** The task of a new episode: the one asked for, one chosen by seed, or the curriculum's next. */
  drawTask(request: TaskRequest): Task {
    if (this.closed) throw new ConfigError('The server is shutting down.', { field: 'reset' });
    const pool = this.curriculum.pool;
    let task: Task;
    if (request.taskId !== undefined) {
      task = findTask(new Map(pool.tasks().map((each) => [each.id, each])), request.taskId);
    } else if (request.seed !== undefined) {
      const seeds = pool.seedTasks();
      task = seeds[new SeededRandom(request.seed).int(seeds.length)]!;
    } else {
      if (this.queue.length === 0) {
        const batch = this.curriculum.sampleBatch(
          this.config.tasksPerIteration,
          this.ledger.random,
        );
        this.queue = batch.flatMap((each) =>
          Array.from({ length: this.config.rolloutsPerTask }, () => each.id),
        );
      }
      task = pool.get(this.queue.shift()!)!;
    }
    this.counters.episodesStarted += 1;
    return task;
  }

  episodeFinished(episode: EpisodeRecord): Promise<void> | undefined {
    if (this.closed) return undefined;
    // All bookkeeping runs in the write queue, in finishing order, so that a checkpoint
    // covers exactly the episodes whose lines and transitions it counts (they wait for the
    // next flush; a checkpoint flushes first). The step that ended the episode is answered at
    // once, or, with the queue full, once the episode is recorded (backpressure).
    const recorded = this.queueWrite(() => this.recordEpisode(episode));
    return this.writes.pending > MAX_EPISODES_WAITING ? recorded : undefined;
  }

  /** Runs `task` in the write queue; a failure is logged and shown in the status. */
  private queueWrite(task: () => Promise<unknown>): Promise<void> {
    return this.writes.run(task).then(
      () => undefined,
      (error: unknown) => {
        this.lastError = error instanceof Error ? error.message : String(error);
        this.logger.log('error', 'run.write_failed', { error });
      },
    );
  }

  episodeAbandoned(): void {
    this.counters.episodesAbandoned += 1;
  }

  private async recordEpisode(episode: EpisodeRecord): Promise<void> {
    const counters = this.counters;
    const number = counters.episodesFinished;
    const iteration = counters.iteration;
    counters.episodesFinished += 1;
    counters.iterationEpisodes += 1;
    counters[`${this.mode}Transitions`] += episode.steps.length;
    if (episode.success) counters.successes += 1;
    if (episode.truncated) counters.truncated += 1;
    if (this.curriculum.pool.has(episode.task.id)) {
      this.rewards.add(episode.task.id, episode.success ? 1 : 0);
    }
    const line: EpisodeLogLine = {
      iteration,
      episode: number,
      episodeId: episode.episodeId,
      taskId: episode.task.id,
      taskOrigin: episode.task.origin,
      steps: episode.steps.length,
      totalReward: episode.totalReward,
      success: episode.success,
      truncated: episode.truncated,
      seconds: Math.max(0, (episode.endedAt - episode.startedAt) / 1000),
    };
    this.pendingEpisodeLines.push(JSON.stringify(line));
    if (this.config.replayWriteBack && episode.steps.length > 0) {
      const transitions = trajectoryToTransitions(
        {
          task: episode.task,
          steps: episode.steps,
          ...(episode.finalObservation ? { finalObservation: episode.finalObservation } : {}),
          source: this.mode,
          success: episode.success,
        },
        {
          // Shared with other replicas: their episode numbers are their own, the writer tells them apart.
          trajectoryId: this.ledger.trajectoryId(
            this.mode,
            this.shared ? `${this.shared.writer}/${number}` : number,
          ),
        },
      ).map((transition) => ({ ...transition, policyVersion: iteration }));
      this.writeBack.push(iteration, transitions);
    }
    if (counters.iterationEpisodes >= this.config.tasksPerIteration * this.config.rolloutsPerTask) {
      await this.finishIteration();
    } else if (this.writeBack.full) {
      await this.flushLogs();
    } else {
      this.scheduleFlush();
    }
  }

  /** Writes the waiting episode lines (one write), then the waiting transitions (one batch). */
  private async flushLogs(): Promise<void> {
    const lines = this.pendingEpisodeLines;
    if (lines.length > 0) {
      this.pendingEpisodeLines = [];
      await this.ledger.appendLines(EPISODE_LOG, lines);
    }
    await this.writeBack.flush();
  }

  /** Writes the waiting transitions back within `writeBackBatch.milliseconds`. */
  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.queueWrite(() => this.flushLogs());
    }, this.config.writeBackBatch.milliseconds);
    // A pending write-back does not keep the process alive: close() flushes it.
    this.flushTimer.unref();
  }

  /**
   * Calls `listener` with every batch of transitions written back to the buffer, after it
   * has reached the buffer (for keeping copies of the buffer in step). Returns the unsubscribe.
   */
  onWriteBack(listener: (batch: AppliedBatch) => void): () => void {
    this.batchListeners.add(listener);
    return () => this.batchListeners.delete(listener);
  }

  /** Writes the episode lines and transitions waiting for their batch now (after the writes queued so far). */
  flushWriteBack(): Promise<void> {
    return this.writes.run(() => this.flushLogs());
  }

  /** Observes the iteration's outcomes, grows the curriculum and checkpoints when due. */
  private async finishIteration(): Promise<void> {
    const counters = this.counters;
    const groups = this.rewards.toJSON();
    this.rewards = new RewardGroups();
    counters.iterationEpisodes = 0;
    const values = groups.length > 0 ? this.curriculum.observe(groups, counters.iteration) : [];
    const growth = await this.curriculum.grow(counters.iteration, this.ledger.random);
    const successRate =
      values.length === 0
        ? 0
        : values.reduce((sum, value) => sum + value.meanReward * value.rollouts, 0) /
          values.reduce((sum, value) => sum + value.rollouts, 0);
    this.logger.log('info', 'run.iteration', {
      iteration: counters.iteration,
      episodes: values.reduce((sum, value) => sum + value.rollouts, 0),
      successRate: Math.round(successRate * 1000) / 1000,
      tasksAdded: growth.added.length,
      ...(growth.skipped ? { growthSkipped: growth.skipped } : {}),
      poolSize: this.curriculum.pool.size,
      bufferSize: this.options.replayBuffer.size,
    });
    // Every variant rejected: the run serves its seed tasks only, which nothing else shows.
    if (growth.warning) {
      this.logger.log('warn', 'curriculum.no_task_added', {
        iteration: counters.iteration,
        warning: growth.warning,
      });
    }
    counters.iteration += 1;
    if (counters.iteration % this.config.checkpointEvery === 0) await this.checkpointNow();
  }

  /** Writes a checkpoint after the writes queued so far. */
  checkpoint(): Promise<void> {
    return this.writes.run(() => this.checkpointNow());
  }

  private async checkpointNow(): Promise<void> {
    // A checkpoint covers every finished episode: its lines and transitions are written first.
    await this.flushLogs();
    this.lastCheckpoint = await this.ledger.save(
      {
        curriculum: this.curriculum.toJSON(),
        draw: { queue: this.queue, groups: this.rewards.toJSON() },
      },
      {},
      `iteration-${String(this.counters.iteration).padStart(6, '0')}-episode-${String(this.counters.episodesFinished).padStart(8, '0')}`,
    );
  }

  /** The run's figures for `GET /dreamgym/status`, after the writes queued so far. */
  async status(): Promise<Record<string, unknown>> {
    await this.flushWriteBack();
    const pool = this.curriculum.pool;
    const stats = this.options.replayBuffer.stats();
    const observed = pool.tasks().filter((task) => (pool.stats(task.id)?.timesObserved ?? 0) > 0);
    return {
      domain: this.options.adapter.name,
      mode: this.mode,
      ...(this.mode === 'synthetic' ? { experienceModel: this.options.experienceModel!.id } : {}),
      runDirectory: this.runDirectory,
      iteration: this.counters.iteration,
      episodes: {
        started: this.counters.episodesStarted,
        finished: this.counters.episodesFinished,
        abandoned: this.counters.episodesAbandoned,
        successes: this.counters.successes,
        truncated: this.counters.truncated,
        inCurrentIteration: this.counters.iterationEpisodes,
        perIteration: this.config.tasksPerIteration * this.config.rolloutsPerTask,
      },
      steps: this.counters[`${this.mode}Transitions`],
      curriculum: {
        enabled: this.config.curriculum.enabled,
        lambda: this.config.curriculum.lambda,
        poolSize: pool.size,
        seedTasks: pool.seedTasks().length,
        generatedTasks: pool.generatedTasks().length,
        observedTasks: observed.length,
        highestVariance: observed.reduce(
          (best, task) => Math.max(best, pool.stats(task.id)?.lastVariance ?? 0),
          0,
        ),
      },
      buffer: {
        size: stats.size,
        bySource: stats.bySource,
        index: stats.index,
        written: this.counters.transitionsWritten,
        writeBack: this.writeBack.stats(),
        retrieval: this.retriever.stats(),
      },
      ...(this.shared ? { sharedBuffer: this.shared.stats() } : {}),
      lastCheckpoint: this.lastCheckpoint ?? null,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** The run's gauges and counters for `GET /metrics`. */
  metrics(): ExtraMetric[] {
    const buffer = this.options.replayBuffer;
    return [
      {
        name: 'replay_buffer_transitions',
        type: 'gauge',
        help: 'Transitions in the replay buffer.',
        value: buffer.size,
      },
      {
        name: 'replay_buffer_capacity',
        type: 'gauge',
        help: 'Replay buffer capacity (0: unbounded; offline seeds are never evicted).',
        value: buffer.stats().capacity ?? 0,
      },
      {
        name: 'transitions_written_total',
        type: 'counter',
        help: 'Transitions written back to the replay buffer.',
        value: this.counters.transitionsWritten,
      },
      {
        name: 'episodes_finished_total',
        type: 'counter',
        help: 'Episodes finished.',
        value: this.counters.episodesFinished,
      },
      {
        name: 'curriculum_tasks',
        type: 'gauge',
        help: 'Tasks in the curriculum pool.',
        value: this.curriculum.pool.size,
      },
      ...(this.shared?.metrics() ?? []),
    ];
  }

  /** Finishes queued writes, checkpoints and closes the logs. Call after the server has closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.flushTimer);
    await this.checkpoint();
    // After the checkpoint's write-back: its batch is appended too.
    await this.shared?.close();
    this.logger.log('info', 'run.closed', {
      runDirectory: this.runDirectory,
      checkpoint: this.lastCheckpoint,
      episodes: this.counters.episodesFinished,
    });
  }
}
