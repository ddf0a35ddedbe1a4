/**
 * `SharedBuffer`: one replay buffer's write-backs shared by replicas of a served run on
 * several machines (`serve --shared-buffer URI`), through one LanceDB table (see
 * `shared-buffer-table.ts`).
 *
 * - Each batch this replica writes back is appended to the table once it is in the local
 *   buffer, tagged with this process's writer id and the next sequence number. Appends run
 *   one after another, off the write path; a failed append is retried at the next poll.
 * - Every `pollMilliseconds` the replica looks at the table's version; when it changed, it
 *   reads the rows other writers appended since the last sequence it took from each, and
 *   hands their transitions to the owner, which adds them to the local buffer the way
 *   write-backs are added (index, capacity eviction, retrieval cache, worker replicas).
 * - At its start a replica catches up before it serves: one writer at a time, in pages of
 *   256 batches, each page added before the next is read (a replica joining a long run holds
 *   a page of the table in memory, not the table).
 * - A writer id is new with each start (`<replicaId>.<pid>.<start>`), so a replica that
 *   restarts takes every row again, its own earlier ones included: what its run folder
 *   replays already is the same transitions again (same ids, same content: no-ops), and
 *   what it wrote after its last checkpoint comes back from the table instead of being lost.
 */
import { hostname } from 'node:os';
import { ConfigError, type Transition } from '@dreamgym/core';
import { z } from 'zod';
import type { Logger } from './logger.js';
import type { ExtraMetric } from './server-metrics.js';
import {
  type LanceDbModule,
  loadLanceDb,
  SAFE_NAME,
  type SharedBatchRow,
  SharedBufferTable,
} from './shared-buffer-table.js';

/** Options of a shared buffer (`serveDreamGym({ sharedBuffer })`, `serve --shared-buffer`). */
export const SharedBufferOptionsSchema = z.object({
  /** Where the table lives: a folder, or any URI LanceDB accepts (`s3://bucket/path` ...). */
  uri: z.string().min(1),
  /** The table's name in it. */
  table: z.string().regex(SAFE_NAME).default('dreamgym_write_backs'),
  /** How often other replicas' rows are looked for, in milliseconds. */
  pollMilliseconds: z.number().int().positive().default(500),
  /**
   * Compact the table after this many batches appended by this replica (0: never). Every
   * append adds a fragment that each read visits (2,000 of them: 0.3 s a read); compaction
   * merges them. Replicas compact in turn; one that finds another compacting tries later.
   */
  compactEvery: z.number().int().nonnegative().default(256),
  /** This replica's name in the table (default: the host name). */
  replicaId: z.string().regex(SAFE_NAME).optional(),
  /** Object-store settings handed to LanceDB (`aws_region`, credentials ...). */
  storageOptions: z.record(z.string(), z.string()).optional(),
});
export type SharedBufferOptions = z.input<typeof SharedBufferOptionsSchema>;

/** The shared buffer's figures, for `/dreamgym/status`. */
export interface SharedBufferStats {
  uri: string;
  table: string;
  /** This process's writer id in the table. */
  writer: string;
  pollMilliseconds: number;
  /** Batches and transitions this replica appended. */
  pushed: { batches: number; transitions: number };
  /** Batches waiting to be appended (after a failed append, until it succeeds). */
  pushPending: number;
  /** Batches and transitions taken from other writers. */
  pulled: { batches: number; transitions: number; writers: number };
  /** Milliseconds from a batch reaching its writer's buffer to reaching this one's, recent batches. */
  lagMilliseconds: { last: number; p50: number; p99: number; samples: number };
  /** Compactions this replica ran, and those that failed (another replica compacting). */
  compactions: { done: number; failed: number };
  /** Failed appends and reads so far, and the last failure. */
  errors: number;
  lastError?: string;
}

/** Versions of the table younger than this are kept by a compaction (readers may hold them). */
const COMPACTION_KEEPS_MILLISECONDS = 10 * 60_000;

/** Batches of one writer read at once when a replica catches up at its start. */
const CATCH_UP_PAGE = 256;

/** Recent lags kept for the percentiles. */
const LAG_WINDOW = 1024;

/** Adds pulled transitions to the local buffer (the owner's write-back path). */
export type ApplyPulled = (transitions: readonly Transition[]) => Promise<void>;

/** A replica's link to the shared table. */
export class SharedBuffer {
  readonly writer: string;
  private readonly settings: z.output<typeof SharedBufferOptionsSchema>;
  private sequence = 0;
  private waiting: SharedBatchRow[] = [];
  private appending: Promise<void> = Promise.resolve();
  private readonly seen = new Map<string, number>();
  private seenVersion = -1;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly lags: number[] = [];
  private readonly figures = {
    pushedBatches: 0,
    pushedTransitions: 0,
    pulledBatches: 0,
    pulledTransitions: 0,
    errors: 0,
    lastLag: 0,
    compactions: 0,
    compactionsFailed: 0,
    appendedSinceCompaction: 0,
  };
  private lastError: string | undefined;

  private constructor(
    private readonly table: SharedBufferTable,
    settings: z.output<typeof SharedBufferOptionsSchema>,
    private readonly logger: Logger,
    startedAt: number,
  ) {
    this.settings = settings;
    const replica =
      settings.replicaId ??
      hostname()
        .replace(/[^A-Za-z0-9_.-]/g, '-')
        .slice(0, 64);
    this.writer = `${replica}.${process.pid}.${startedAt.toString(36)}`;
  }

  /**
   * Loads LanceDB, opens (or creates) the table and checks it. `flag` names the setting in
   * messages (`--shared-buffer` for the CLI).
   * @throws ConfigError: invalid options, LanceDB missing, a URI it cannot open, a table of
   * another schema.
   */
  static async open(
    input: SharedBufferOptions,
    context: { logger: Logger; cwd?: string; flag?: string; lancedb?: LanceDbModule },
  ): Promise<SharedBuffer> {
    const flag = context.flag ?? 'sharedBuffer.uri';
    const parsed = SharedBufferOptionsSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = ['sharedBuffer', ...issue.path.map(String)].join('.');
      throw new ConfigError(`${field}: ${issue.message}.`, { field });
    }
    const settings = parsed.data;
    const lancedb =
      context.lancedb ??
      (await loadLanceDb(context.cwd ?? process.cwd(), `${flag} ${settings.uri}`));
    const table = await SharedBufferTable.open(lancedb, {
      uri: settings.uri,
      table: settings.table,
      ...(settings.storageOptions ? { storageOptions: settings.storageOptions } : {}),
      flag,
    });
    return new SharedBuffer(table, settings, context.logger, Date.now());
  }

  /** Queues a batch written back here for the table (appended in order, off the caller's path). */
  push(transitions: readonly Transition[]): void {
    if (transitions.length === 0 || this.closed) return;
    this.sequence += 1;
    this.waiting.push({
      writer: this.writer,
      sequence: this.sequence,
      count: transitions.length,
      writtenAt: Date.now(),
      transitions: JSON.stringify(transitions),
    });
    void this.appendWaiting();
  }

  /** Appends what waits, after the appends already under way; resolves when they are done. */
  private appendWaiting(): Promise<void> {
    this.appending = this.appending.then(async () => {
      const rows = this.waiting;
      if (rows.length === 0) return;
      this.waiting = [];
      try {
        await this.table.append(rows);
        this.figures.pushedBatches += rows.length;
        this.figures.pushedTransitions += rows.reduce((sum, row) => sum + row.count, 0);
      } catch (error) {
        // Kept, in order, for the next try (the next poll or close).
        this.waiting = [...rows, ...this.waiting];
        this.failed('shared_buffer.append_failed', error);
        return;
      }
      this.figures.appendedSinceCompaction += rows.length;
      const every = this.settings.compactEvery;
      if (every > 0 && this.figures.appendedSinceCompaction >= every) {
        this.figures.appendedSinceCompaction = 0;
        try {
          await this.table.compact(COMPACTION_KEEPS_MILLISECONDS);
          this.figures.compactions += 1;
        } catch (error) {
          this.figures.compactionsFailed += 1;
          this.logger.log('warn', 'shared_buffer.compaction_failed', {
            table: this.table.where,
            error,
          });
        }
      }
    });
    return this.appending;
  }

  /**
   * Takes every row other writers appended so far (before serving: a replica that starts
   * or restarts catches up), then polls every `pollMilliseconds`.
   */
  async start(apply: ApplyPulled): Promise<void> {
    await this.catchUp(apply);
    this.logger.log('info', 'shared_buffer.ready', { ...this.stats() });
    const tick = () => {
      this.timer = setTimeout(() => {
        this.polling = (async () => {
          if (this.waiting.length > 0) await this.appendWaiting();
          await this.pull(apply);
        })().finally(() => {
          if (!this.closed) tick();
        });
      }, this.settings.pollMilliseconds);
      // Polling does not keep the process alive: the server does.
      this.timer.unref();
    };
    tick();
  }

  /** Reads the rows other writers appended since the last look and applies them. */
  /**
   * Takes what other writers appended before this start, one writer at a time in pages of
   * {@link CATCH_UP_PAGE} batches, each added before the next is read: a replica joining a
   * long run holds one page of the table in memory, not the whole table.
   */
  private async catchUp(apply: ApplyPulled): Promise<void> {
    const reading = async <T>(read: () => Promise<T>): Promise<T> => {
      try {
        return await read();
      } catch (error) {
        throw new ConfigError(
          `${this.table.where}: reading the table failed: ${error instanceof Error ? error.message : String(error)}`,
          { field: 'sharedBuffer.uri', cause: error },
        );
      }
    };
    const version = await reading(() => this.table.latestVersion());
    const heads = await reading(() => this.table.writerHeads());
    heads.delete(this.writer);
    const behind = [...heads].reduce(
      (sum, [writer, head]) => sum + Math.max(0, head - (this.seen.get(writer) ?? 0)),
      0,
    );
    if (behind > 0) {
      this.logger.log('info', 'shared_buffer.catching_up', {
        writers: heads.size,
        batches: behind,
      });
    }
    for (const [writer, head] of [...heads].sort(([a], [b]) => (a < b ? -1 : 1))) {
      for (let after = this.seen.get(writer) ?? 0; after < head; ) {
        const upTo = Math.min(head, after + CATCH_UP_PAGE);
        const rows = await reading(() => this.table.rowsOf(writer, after, upTo));
        await this.applyRows(rows, apply);
        after = upTo;
      }
    }
    this.seenVersion = version;
    // Rows appended while this ran: the version has moved on, so the first poll takes them.
  }

  private async pull(apply: ApplyPulled): Promise<void> {
    let rows: SharedBatchRow[];
    try {
      const version = await this.table.latestVersion();
      if (version === this.seenVersion) return;
      rows = await this.table.rowsAfter(this.writer, this.seen);
      this.seenVersion = version;
    } catch (error) {
      this.failed('shared_buffer.read_failed', error);
      return;
    }
    await this.applyRows(rows, apply);
  }

  /** Adds `rows` (each writer's in order) to the local buffer and marks them taken. */
  private async applyRows(rows: readonly SharedBatchRow[], apply: ApplyPulled): Promise<void> {
    if (rows.length === 0) return;
    const batches = rows.flatMap((row) => {
      try {
        return [{ row, transitions: JSON.parse(row.transitions) as Transition[] }];
      } catch (error) {
        this.failed('shared_buffer.row_invalid', error, {
          writer: row.writer,
          sequence: row.sequence,
        });
        this.markSeen(row);
        return [];
      }
    });
    try {
      // One add for everything new (one embedding call, one index insert), as a write-back.
      await apply(batches.flatMap((each) => each.transitions));
    } catch {
      // A row the buffer refuses (invalid, or an id it holds with other content): the rows
      // one by one, so that only the bad ones are skipped (and logged).
      for (const { row, transitions } of batches) {
        try {
          await apply(transitions);
        } catch (error) {
          this.failed('shared_buffer.row_refused', error, {
            writer: row.writer,
            sequence: row.sequence,
          });
        }
      }
    }
    const now = Date.now();
    for (const { row } of batches) {
      this.markSeen(row);
      this.figures.pulledBatches += 1;
      this.figures.pulledTransitions += row.count;
      const lag = Math.max(0, now - row.writtenAt);
      this.figures.lastLag = lag;
      this.lags.push(lag);
    }
    if (this.lags.length > LAG_WINDOW) this.lags.splice(0, this.lags.length - LAG_WINDOW);
  }

  private markSeen(row: SharedBatchRow): void {
    this.seen.set(row.writer, Math.max(this.seen.get(row.writer) ?? 0, row.sequence));
  }

  private failed(event: string, error: unknown, detail: Record<string, unknown> = {}): void {
    this.figures.errors += 1;
    this.lastError = error instanceof Error ? error.message : String(error);
    this.logger.log('error', event, { table: this.table.where, ...detail, error });
  }

  /** The figures for `/dreamgym/status`. */
  stats(): SharedBufferStats {
    const sorted = [...this.lags].sort((a, b) => a - b);
    const at = (share: number) =>
      sorted.length === 0
        ? 0
        : sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;
    return {
      uri: this.settings.uri,
      table: this.settings.table,
      writer: this.writer,
      pollMilliseconds: this.settings.pollMilliseconds,
      pushed: { batches: this.figures.pushedBatches, transitions: this.figures.pushedTransitions },
      pushPending: this.waiting.length,
      pulled: {
        batches: this.figures.pulledBatches,
        transitions: this.figures.pulledTransitions,
        writers: this.seen.size,
      },
      lagMilliseconds: {
        last: this.figures.lastLag,
        p50: at(0.5),
        p99: at(0.99),
        samples: sorted.length,
      },
      compactions: { done: this.figures.compactions, failed: this.figures.compactionsFailed },
      errors: this.figures.errors,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** The figures for `GET /metrics`. */
  metrics(): ExtraMetric[] {
    const figures = this.figures;
    return [
      {
        name: 'shared_buffer_batches_pushed_total',
        type: 'counter',
        help: 'Write-back batches this replica appended to the shared table.',
        value: figures.pushedBatches,
      },
      {
        name: 'shared_buffer_transitions_pushed_total',
        type: 'counter',
        help: 'Transitions this replica appended to the shared table.',
        value: figures.pushedTransitions,
      },
      {
        name: 'shared_buffer_push_pending',
        type: 'gauge',
        help: 'Batches waiting to be appended to the shared table.',
        value: this.waiting.length,
      },
      {
        name: 'shared_buffer_batches_pulled_total',
        type: 'counter',
        help: 'Batches other replicas appended, taken into this replica buffer.',
        value: figures.pulledBatches,
      },
      {
        name: 'shared_buffer_transitions_pulled_total',
        type: 'counter',
        help: 'Transitions other replicas wrote back, taken into this replica buffer.',
        value: figures.pulledTransitions,
      },
      {
        name: 'shared_buffer_lag_seconds',
        type: 'gauge',
        help: 'Last pulled batch: seconds from its writer buffer to this one (clocks of both machines).',
        value: figures.lastLag / 1000,
      },
      {
        name: 'shared_buffer_errors_total',
        type: 'counter',
        help: 'Failed appends to and reads of the shared table.',
        value: figures.errors,
      },
    ];
  }

  /** Stops polling and appends what waits (one last try). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    await this.polling;
    await this.appendWaiting();
    this.table.close();
  }
}
