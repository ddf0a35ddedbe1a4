/**
 * `serveDreamGym`: a domain's DreamGym environment (synthetic, or real with `mode: 'real'`)
 * served over OpenEnv, with the curriculum, the replay buffer and the run folder kept by a
 * {@link DreamGymService}. What `dreamgym serve` runs.
 */
import { ConfigError } from '@dreamgym/core';
import { DreamGymService, type DreamGymServiceOptions } from './dreamgym-service.js';
import { EnvironmentServer, type EnvironmentServerSettings } from './environment-server.js';
import { type Logger, silentLogger } from './logger.js';
import { SharedBuffer, type SharedBufferOptions } from './shared-buffer.js';
import type { LanceDbModule } from './shared-buffer-table.js';
import { WorkerPool } from './worker-pool.js';
import type { AppliedBatch } from './write-back-queue.js';

/** Options of {@link serveDreamGym}: the run's (see `DreamGymServiceOptions`) and the server's. */
export interface ServeDreamGymOptions extends Omit<DreamGymServiceOptions, 'sharedBuffer'> {
  /** Host, port, session cap, timeouts, payload limit. */
  server?: EnvironmentServerSettings;
  /** Version reported by `/metadata` and `/openapi.json`. */
  version?: string;
  logger?: Logger;
  /**
   * Play the sessions' environments in worker processes, each with a read replica of the
   * replay buffer (synthetic mode). The serving process keeps the sockets, the curriculum and
   * the writable buffer (`replayBuffer`, which no session searches then: a flat index does),
   * and publishes each write-back batch to the replicas.
   */
  workers?: {
    /** Worker processes (2 or more to spread the steps over cores; 1 is allowed). */
    count: number;
    /**
     * URL of an ES module exporting `createReplica(options): Promise<ReplicaParts>`, run in
     * each worker: the same adapter, offline transitions and experience model as the writer's.
     */
    replicaModule: string | URL;
    /** JSON-serialisable options for `createReplica`. */
    replicaOptions?: unknown;
    /** Restarts of one worker allowed per minute (default 5). */
    maxRestartsPerMinute?: number;
  };
  /**
   * Replicas of this run on other machines (behind any load balancer) share one replay
   * buffer's write-backs through a LanceDB table at `uri`: each appends the batches it writes
   * back and takes the others' into its own buffer, at start (catching up) and every
   * `pollMilliseconds`. Needs the optional peer `@lancedb/lancedb`.
   */
  sharedBuffer?: SharedBufferOptions & {
    /** The `@lancedb/lancedb` module, when you load it yourself (default: imported). */
    lancedb?: LanceDbModule;
    /** How the setting is named in error messages (default `sharedBuffer.uri`). */
    flag?: string;
  };
}

/** A running served DreamGym environment. */
export interface ServedDreamGym {
  /** Base URL for OpenEnv clients (`http://127.0.0.1:8000`; WebSocket at `ws://.../ws`). */
  url: string;
  port: number;
  service: DreamGymService;
  server: EnvironmentServer;
  /** The worker processes, with `workers`. */
  workers: WorkerPool | undefined;
  /** Graceful shutdown: steps in flight finish, then the run is checkpointed. */
  close(): Promise<void>;
}

/** Opens (or resumes) the run, then serves it. */
export async function serveDreamGym(options: ServeDreamGymOptions): Promise<ServedDreamGym> {
  const logger = options.logger ?? silentLogger;
  const { sharedBuffer: sharing, ...serviceOptions } = options;
  // Opened before the run: a URI LanceDB cannot open, or a foreign table, stops here.
  let sharedBuffer: SharedBuffer | undefined;
  if (sharing) {
    const { lancedb, flag, ...settings } = sharing;
    sharedBuffer = await SharedBuffer.open(settings, {
      logger,
      ...(lancedb ? { lancedb } : {}),
      ...(flag ? { flag } : {}),
    });
  }
  const service = await DreamGymService.open({
    ...serviceOptions,
    logger,
    ...(sharedBuffer ? { sharedBuffer } : {}),
  }).catch(async (error: unknown) => {
    await sharedBuffer?.close();
    throw error;
  });
  const domain = options.adapter.name;
  let workers: WorkerPool | undefined;
  if (options.workers) {
    if (service.mode !== 'synthetic') {
      await service.close();
      throw new ConfigError(
        'workers serve the synthetic environment; the real mode runs in one process.',
        {
          field: 'workers',
        },
      );
    }
    const { retrieval, history, maxSteps, invalidActionPenalty, retrievalCache } = service.config;
    // The workers take what the buffer holds when they are spawned (synchronously, in
    // start()); batches it takes after that (other replicas', with a shared buffer) wait
    // until the pool is up, then are published: none is missed, none sent twice.
    const waiting: AppliedBatch[] = [];
    let ready: WorkerPool | undefined;
    const starting = WorkerPool.start({
      ...options.workers,
      environment: { retrieval, history, maxSteps, invalidActionPenalty, retrievalCache },
      writtenBack: () =>
        [...options.replayBuffer.transitions()].filter((each) => each.source !== 'offline'),
      logger,
    });
    const unsubscribe = service.onWriteBack((batch) =>
      ready ? ready.publish(batch) : waiting.push(batch),
    );
    try {
      workers = await starting;
    } catch (error) {
      unsubscribe();
      await service.close();
      throw error;
    }
    ready = workers;
    for (const batch of waiting.splice(0)) workers.publish(batch);
  }
  const pool = workers;
  const server = new EnvironmentServer({
    // The step cap of synthetic episodes caps real ones too (the server enforces it there).
    ...(service.mode === 'real' ? { maxSteps: service.config.maxSteps } : {}),
    ...options.server,
    createEnvironment: () => (pool ? pool.createEnvironment() : service.createEnvironment()),
    tasks: service,
    actionGrammar: options.adapter.prompts.agentInstructions,
    metadata: {
      name: `dreamgym-${domain}`,
      description:
        service.mode === 'synthetic'
          ? `DreamGym synthetic ${domain} environment: the experience model predicts each transition, grounded by the replay buffer; tasks come from DreamGym's curriculum.`
          : `The real ${domain} environment, served by DreamGym; tasks come from its seed tasks.`,
      version: options.version ?? '0.0.0',
      readme_content: options.adapter.prompts.agentInstructions,
      author: 'DreamGym for TypeScript',
      documentation_url: null,
    },
    status: async () => ({
      ...(await service.status()),
      ...(pool ? { workers: await pool.stats() } : {}),
    }),
    metrics: () => service.metrics(),
    logger,
  });
  let started: { url: string; port: number };
  try {
    started = await server.start();
  } catch (error) {
    await service.close();
    await pool?.close();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    url: started.url,
    port: started.port,
    service,
    server,
    workers: pool,
    close() {
      closing ??= (async () => {
        await server.close();
        await service.close();
        await pool?.close();
      })();
      return closing;
    },
  };
}
