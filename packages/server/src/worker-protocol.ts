/**
 * Messages between the serving process and its environment workers (`serve --workers N`).
 * Both ends are this package: plain JSON objects over the IPC channel, no schemas.
 */
import type { Observation, StepResult, Task, Transition } from '@dreamgym/core';
import type { VectorIndexConfig } from '@dreamgym/core/replay';
import type { RetrievalStats } from './caching-retriever.js';

/** What a worker needs to build its read replica; passed in `DREAMGYM_WORKER_SETUP`. */
export interface WorkerSetup {
  /** URL of an ES module exporting `createReplica(options)` (see {@link ReplicaFactory}). */
  replicaModule: string;
  /** JSON-serialisable options handed to `createReplica`. */
  replicaOptions: unknown;
  /** The synthetic environment's settings (the serve config's). */
  environment: {
    retrieval: { enabled: boolean; k: number };
    history: { enabled: boolean };
    maxSteps: number;
    invalidActionPenalty: number;
    retrievalCache: boolean;
  };
}

/** Requests from the serving process, each answered by one {@link WorkerReply} with its `id`. */
export type WorkerRequest = { id: number } & (
  | { op: 'create'; environment: number }
  | { op: 'reset'; environment: number; task: Task }
  | { op: 'step'; environment: number; action: string }
  | { op: 'close'; environment: number }
  /** Transitions written back by the writer, to apply to the replica in publishing order. */
  | { op: 'apply'; sequence: number; transitions: readonly Transition[] }
  | { op: 'stats' }
);

/** A worker's figures. */
export interface WorkerFigures {
  /** The worker's process id. */
  pid: number;
  /** CPU milliseconds (user + system) the worker process has used. */
  cpuMilliseconds: number;
  /** Its resident set size, in bytes. */
  rssBytes: number;
  /** Its retrieval cache: lookups, hits, milliseconds searching. */
  retrieval: RetrievalStats;
  /** Transitions in the replica buffer. */
  bufferSize: number;
  /**
   * The replica's vector index: with an HNSW `targetRecall`, the depth and degree it tuned
   * (absent for a worker that is down).
   */
  searchIndex?: VectorIndexConfig;
  /** Last write-back batch applied. */
  appliedSequence: number;
  /** Milliseconds spent adding write-back batches to the replica. */
  applyMilliseconds: number;
  /** Environments open. */
  environments: number;
  /** Milliseconds spent handling requests. */
  busyMilliseconds: number;
}

/** A failure raised in a worker, carried back. */
export interface WorkerFailure {
  name: string;
  message: string;
  code?: string;
}

/** What a request resolves with. */
export type WorkerValue = Observation | StepResult | WorkerFigures | undefined;

/** The answer to a request, or the worker's `ready` signal (id 0). */
export type WorkerReply =
  | { id: number; ok: true; value?: WorkerValue }
  | { id: number; ok: false; error: WorkerFailure };
