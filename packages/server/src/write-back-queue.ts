/**
 * `WriteBackQueue`: finished episodes' transitions, gathered and written back to the replay
 * buffer in batches instead of one `add` per episode.
 *
 * An `add` embeds the batch and inserts its new vectors into the index synchronously, on
 * the event loop that also answers steps: one episode at a time, that is a pause of a few
 * milliseconds every few steps, and a fixed cost (duplicate check, embedding call, faiss
 * call, log write) paid per episode. Gathered, the same work runs once per batch, at most
 * `flushMilliseconds` after the first transition waited, and a batch of at least 256 new
 * vectors is inserted on faiss' OpenMP threads. The experience log gets one write per batch.
 *
 * The queue itself schedules nothing: its owner calls {@link WriteBackQueue.flush} (from a
 * timer, and before each checkpoint, so a checkpoint covers exactly what was written).
 */
import type { ReplayBuffer, Transition } from '@dreamgym/core';

/** When gathered transitions are written back. */
export interface WriteBackSettings {
  /** Write back as soon as this many transitions wait (1: every episode at once, as before). */
  batchTransitions: number;
  /** Write back at most this long after the first transition started waiting. */
  flushMilliseconds: number;
}

/** Figures of the write-backs so far. */
export interface WriteBackStats {
  /** Batches written. */
  batches: number;
  /** Transitions written back. */
  transitions: number;
  /** Transitions waiting for the next batch. */
  pending: number;
  /** Milliseconds spent writing batches (log write, embedding, index insert). */
  milliseconds: number;
  /** Of them, in the buffer `add` (embedding, index insert: CPU on the event loop). */
  addMilliseconds: number;
}

/** One written batch: its transitions, for whoever keeps copies of the buffer. */
export type AppliedBatch = readonly Transition[];

/** Writes transitions, with the iteration each was played in, to the experience log (`RunLedger.appendExperience`). */
export type ExperienceLogWriter = (
  records: readonly { iteration: number; transition: Transition }[],
) => Promise<void>;

/** Transitions waiting for their batch, and how they are written. */
export class WriteBackQueue {
  private pending: Transition[] = [];
  private pendingIterations: number[] = [];
  private readonly figures = { batches: 0, transitions: 0, milliseconds: 0, addMilliseconds: 0 };

  constructor(
    private readonly buffer: ReplayBuffer,
    private readonly log: ExperienceLogWriter,
    readonly settings: WriteBackSettings,
    /** Called after each batch has reached the buffer. */
    private readonly applied?: (batch: AppliedBatch) => void,
  ) {}

  /** Transitions waiting. */
  get size(): number {
    return this.pending.length;
  }

  /** True when the waiting transitions fill a batch. */
  get full(): boolean {
    return this.pending.length >= this.settings.batchTransitions;
  }

  /** Queues an episode's transitions (written back by a later {@link flush}). */
  push(iteration: number, transitions: readonly Transition[]): void {
    for (const transition of transitions) {
      this.pending.push(transition);
      this.pendingIterations.push(iteration);
    }
  }

  /**
   * Writes the waiting transitions: one log write, then one buffer `add`. Resolves with how
   * many were written (0 when none waited). A failure drops the batch from the queue and is
   * raised; lines that reached the log stay counted by it, so the checkpoint's line count
   * stays the log's.
   */
  async flush(): Promise<number> {
    const batch = this.pending;
    if (batch.length === 0) return 0;
    const iterations = this.pendingIterations;
    this.pending = [];
    this.pendingIterations = [];
    const started = performance.now();
    try {
      await this.log(
        batch.map((transition, index) => ({ iteration: iterations[index]!, transition })),
      );
      const adding = performance.now();
      try {
        await this.buffer.add(batch);
      } finally {
        this.figures.addMilliseconds += performance.now() - adding;
      }
    } finally {
      this.figures.milliseconds += performance.now() - started;
    }
    this.figures.batches += 1;
    this.figures.transitions += batch.length;
    this.applied?.(batch);
    return batch.length;
  }

  /** Batches, transitions, waiting transitions and time so far. */
  stats(): WriteBackStats {
    return { ...this.figures, pending: this.pending.length };
  }
}
