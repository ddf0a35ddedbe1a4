/**
 * `WorkerPool`: the environment workers of `serve --workers N`. Each worker process holds a
 * read replica of the replay buffer (built by a replica module, since adapters, buffers and
 * models cannot cross processes) and plays the environments of the sessions given to it; the
 * serving process keeps the sockets, the curriculum and the one writable buffer.
 * Processes, not threads: the faiss addon keeps process-wide state that one thread's exit
 * tears down under the others (a segmentation fault at the next index the writer creates).
 *
 * - Sessions go to the live worker with the fewest open environments.
 * - Write-backs: the writer publishes each batch once it is in its buffer; every worker
 *   applies the batches in publishing order. A worker that starts (or restarts) first takes
 *   every transition written back so far, then the batches published after.
 * - A worker that dies fails its calls in flight and marks its environments lost (their
 *   sessions are closed with 1012, service restart); a new worker takes its place, at most
 *   `maxRestartsPerMinute` times a minute per slot.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  type DomainAdapter,
  EnvironmentError,
  type ExperienceModel,
  type ReplayBuffer,
  type Transition,
} from '@dreamgym/core';
import type { RetrievalStats } from './caching-retriever.js';
import type { Logger } from './logger.js';
import {
  type EnvironmentLoss,
  RemoteEnvironment,
  type WorkerChannel,
  WorkerLostError,
} from './remote-environment.js';
import type { WorkerFigures, WorkerReply, WorkerRequest, WorkerSetup } from './worker-protocol.js';

/** What a replica module's `createReplica(options)` returns, inside a worker. */
export interface ReplicaParts {
  adapter: DomainAdapter;
  /** The replica: the same offline transitions and settings as the writer's buffer. */
  replayBuffer: ReplayBuffer;
  experienceModel: ExperienceModel;
}

/** The export a replica module must have. */
export type ReplicaFactory = (options: unknown) => Promise<ReplicaParts>;

/** Options of {@link WorkerPool.start}. */
export interface WorkerPoolOptions {
  /** Worker threads (at least 1). */
  count: number;
  /** URL (or absolute file URL string) of the module exporting `createReplica`. */
  replicaModule: string | URL;
  /** JSON-serialisable options for `createReplica`. */
  replicaOptions?: unknown;
  /** The synthetic environment's settings. */
  environment: WorkerSetup['environment'];
  /** Every transition written back so far, oldest first (what a new worker catches up with). */
  writtenBack: () => readonly Transition[];
  logger: Logger;
  /** Restarts of one worker slot allowed per minute before it is left down (default 5). */
  maxRestartsPerMinute?: number;
}

/** The pool's figures, for `/dreamgym/status`. */
export interface WorkerPoolStats {
  count: number;
  alive: number;
  restarts: number;
  /** Milliseconds the workers' event loops were busy (live workers). */
  busyMilliseconds: number;
  /** CPU milliseconds the live workers have used. */
  cpuMilliseconds: number;
  /** Milliseconds the live workers spent adding write-backs to their replicas. */
  applyMilliseconds: number;
  /** The live workers' retrieval figures, summed. */
  retrieval: RetrievalStats;
  workers: (WorkerFigures & { index: number; alive: boolean })[];
}

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** One worker thread and its calls. */
class WorkerHandle implements WorkerChannel {
  readonly lost: Promise<EnvironmentLoss>;
  readonly ready: Promise<void>;
  environments = 0;
  alive = true;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private markLost!: (loss: EnvironmentLoss) => void;

  constructor(
    readonly worker: ChildProcess,
    readonly index: number,
  ) {
    this.lost = new Promise((resolve) => {
      this.markLost = resolve;
    });
    this.ready = new Promise((resolve, reject) => {
      const onStartup = (reply: WorkerReply) => {
        if (reply.id !== 0) return;
        worker.off('message', onStartup);
        if (reply.ok) resolve();
        else
          reject(
            new ConfigError(`Worker ${index} could not build its replica: ${reply.error.message}`, {
              field: 'workers',
            }),
          );
      };
      worker.on('message', onStartup);
      void this.lost.then((loss) =>
        reject(new EnvironmentError(`Worker ${index} died while starting: ${loss.reason}`)),
      );
    });
    // A worker that fails to start rejects `ready`; whoever awaits it reports that.
    this.ready.catch(() => {});
    worker.on('message', (reply: WorkerReply) => {
      if (reply.id === 0) return;
      const call = this.pending.get(reply.id);
      if (!call) return;
      this.pending.delete(reply.id);
      if (reply.ok) call.resolve(reply.value);
      else call.reject(remoteError(reply.error));
    });
  }

  call(request: Record<string, unknown> & { op: string }): Promise<unknown> {
    if (!this.alive) {
      return Promise.reject(
        new WorkerLostError(`Worker ${this.index} is gone; open a new session.`),
      );
    }
    const id = this.nextId;
    this.nextId += 1;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.send({ ...request, id } as WorkerRequest, (error) => {
        // The channel closed before the message left: the exit handler fails the call.
        if (error) this.worker.kill('SIGKILL');
      });
    });
  }

  /** Sends without waiting for the answer (a failure is logged by the caller's catch). */
  post(request: Record<string, unknown> & { op: string }): Promise<unknown> {
    return this.call(request);
  }

  die(reason: string): void {
    if (!this.alive) return;
    this.alive = false;
    for (const call of this.pending.values()) {
      call.reject(
        new WorkerLostError(`Worker ${this.index} died (${reason}); open a new session.`),
      );
    }
    this.pending.clear();
    this.markLost({ reason });
  }
}

function remoteError(failure: { name: string; message: string; code?: string }): Error {
  if (failure.code === 'CONFIG') return new ConfigError(failure.message, { field: 'reset' });
  return new EnvironmentError(failure.message);
}

/**
 * The worker entry beside this module, and the node options to run it with: the serving
 * process's, plus tsx's loader where the entry or the replica module is TypeScript (the
 * package's own sources in development and tests).
 */
function workerEntry(replicaModule: string): { file: string; execArgv: string[] } {
  const fromSources = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(
    new URL(fromSources ? './serve-worker.ts' : './serve-worker.js', import.meta.url),
  );
  const execArgv = [...process.execArgv];
  const loaded = execArgv.some((argument) => /\btsx\b/.test(argument));
  if ((fromSources || replicaModule.endsWith('.ts')) && !loaded) execArgv.push('--import', 'tsx');
  return { file, execArgv };
}

/** The worker threads of a served run. */
export class WorkerPool {
  private readonly slots: WorkerHandle[] = [];
  private readonly restartTimes: number[][] = [];
  private restarts = 0;
  private sequence = 0;
  private nextEnvironment = 1;
  private closing = false;

  private constructor(private readonly options: WorkerPoolOptions) {}

  /**
   * Starts `count` workers and waits until each has built its replica. Every worker is
   * spawned, and reads `writtenBack()`, before this first awaits (`serveDreamGym` relies on
   * it to publish each later batch exactly once).
   */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    if (!Number.isInteger(options.count) || options.count < 1) {
      throw new ConfigError(`workers must be a positive integer, got ${options.count}.`, {
        field: 'workers',
      });
    }
    const pool = new WorkerPool(options);
    for (let index = 0; index < options.count; index += 1) {
      pool.restartTimes.push([]);
      pool.slots.push(pool.spawn(index));
    }
    try {
      await Promise.all(pool.slots.map((slot) => slot.ready));
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  /** An environment on the live worker with the fewest open ones. */
  async createEnvironment(): Promise<RemoteEnvironment> {
    const live = this.slots.filter((slot) => slot.alive);
    if (live.length === 0)
      throw new EnvironmentError('No environment worker is running; see the server log.');
    const slot = live.reduce((best, each) => (each.environments < best.environments ? each : best));
    await slot.ready;
    const id = this.nextEnvironment;
    this.nextEnvironment += 1;
    slot.environments += 1;
    try {
      await slot.call({ op: 'create', environment: id });
    } catch (error) {
      slot.environments -= 1;
      throw error;
    }
    return new RemoteEnvironment(slot, id, () => {
      slot.environments -= 1;
    });
  }

  /** Hands a batch the writer has written back to every worker, in order. */
  publish(transitions: readonly Transition[]): void {
    if (transitions.length === 0) return;
    this.sequence += 1;
    for (const slot of this.slots) this.apply(slot, this.sequence, transitions);
  }

  /** Waits until every live worker has applied every batch published so far; their figures. */
  async stats(): Promise<WorkerPoolStats> {
    const workers = await Promise.all(
      this.slots.map(async (slot) => {
        const empty: WorkerFigures = {
          pid: slot.worker.pid ?? 0,
          cpuMilliseconds: 0,
          rssBytes: 0,
          retrieval: { lookups: 0, hits: 0, searchMilliseconds: 0 },
          bufferSize: 0,
          appliedSequence: 0,
          applyMilliseconds: 0,
          environments: 0,
          busyMilliseconds: 0,
        };
        if (!slot.alive) return { index: slot.index, alive: false, ...empty };
        try {
          await slot.ready;
          const figures = (await slot.call({ op: 'stats' })) as WorkerFigures;
          return { index: slot.index, alive: true, ...figures };
        } catch {
          return { index: slot.index, alive: false, ...empty };
        }
      }),
    );
    return {
      count: this.slots.length,
      alive: workers.filter((each) => each.alive).length,
      restarts: this.restarts,
      busyMilliseconds: workers.reduce((sum, each) => sum + each.busyMilliseconds, 0),
      cpuMilliseconds: workers.reduce((sum, each) => sum + each.cpuMilliseconds, 0),
      applyMilliseconds: workers.reduce((sum, each) => sum + each.applyMilliseconds, 0),
      retrieval: {
        lookups: workers.reduce((sum, each) => sum + each.retrieval.lookups, 0),
        hits: workers.reduce((sum, each) => sum + each.retrieval.hits, 0),
        searchMilliseconds: workers.reduce(
          (sum, each) => sum + each.retrieval.searchMilliseconds,
          0,
        ),
      },
      workers,
    };
  }

  /** Process ids of the live workers (for measurements and diagnostics). */
  pids(): number[] {
    return this.slots.flatMap((slot) => (slot.alive && slot.worker.pid ? [slot.worker.pid] : []));
  }

  /** Stops every worker: closes its channel, then kills it if it has not exited in 5 s. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        if (worker.exitCode !== null || worker.signalCode !== null) return;
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        if (worker.connected) worker.disconnect();
        const timer = setTimeout(() => worker.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  private apply(slot: WorkerHandle, sequence: number, transitions: readonly Transition[]): void {
    if (!slot.alive) return;
    slot.post({ op: 'apply', sequence, transitions }).catch((error: unknown) => {
      // A dead worker's replacement catches up from the writer; anything else is logged.
      if (!WorkerLostError.isLoss(error)) {
        this.options.logger.log('error', 'workers.apply_failed', { worker: slot.index, error });
      }
    });
  }

  private spawn(index: number): WorkerHandle {
    const setup: WorkerSetup = {
      replicaModule: String(this.options.replicaModule),
      replicaOptions: this.options.replicaOptions ?? {},
      environment: this.options.environment,
    };
    const { file, execArgv } = workerEntry(setup.replicaModule);
    const worker = fork(file, [], {
      execArgv,
      // Steps and transitions are plain JSON; 'advanced' (structured clone) measured no faster.
      serialization: 'json',
      env: { ...process.env, DREAMGYM_WORKER_SETUP: JSON.stringify(setup) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const slot = new WorkerHandle(worker, index);
    // The replica catches up with what was written back before it existed; later batches
    // reach it through publish(), queued behind this one.
    const written = this.options.writtenBack();
    if (written.length > 0) this.apply(slot, this.sequence, written);
    worker.on('error', (error) => {
      this.options.logger.log('error', 'workers.crashed', { worker: index, error });
      slot.die(`uncaught ${error.name}: ${error.message}`);
    });
    worker.on('exit', (code, signal) => {
      slot.die(signal ? `killed by ${signal}` : `exited with code ${code}`);
      if (!this.closing) this.restart(index, slot);
    });
    return slot;
  }

  private restart(index: number, dead: WorkerHandle): void {
    if (this.slots[index] !== dead) return;
    const now = Date.now();
    const recent = this.restartTimes[index]!.filter((at) => at > now - 60_000);
    const limit = this.options.maxRestartsPerMinute ?? 5;
    if (recent.length >= limit) {
      this.options.logger.log('error', 'workers.given_up', {
        worker: index,
        restartsInLastMinute: recent.length,
      });
      return;
    }
    recent.push(now);
    this.restartTimes[index] = recent;
    this.restarts += 1;
    const slot = this.spawn(index);
    this.slots[index] = slot;
    slot.ready.then(
      () =>
        this.options.logger.log('warn', 'workers.restarted', {
          worker: index,
          restarts: this.restarts,
        }),
      (error: unknown) =>
        this.options.logger.log('error', 'workers.restart_failed', { worker: index, error }),
    );
  }
}
