/**
 * `RunLedger`: how a run keeps its folder, the same for the DreamGym loop, the served run
 * (`@dreamgym/server`'s `DreamGymService`) and the agent trainer (`@dreamgym/agents`):
 *
 * - the run's configuration file, written when the run starts; its hash is in every
 *   checkpoint's counters, and a resume with other settings is refused, naming the file,
 *   instead of one run mixing two configurations;
 * - the counters (iterations, real and synthetic transitions, how many lines of each log a
 *   checkpoint covers, the RNG state), saved in every checkpoint beside what the owner adds;
 * - `experience.jsonl` (every transition the run added to its replay buffer, with its
 *   iteration) and the owner's other append-only logs (`metrics.jsonl`, `episodes.jsonl`);
 * - the ids of the run's trajectories.
 *
 * A checkpoint is written after the log lines it covers are on disk. On resume the logs are
 * cut back to those lines (a crash after the checkpoint may have written more) and the
 * experience is re-added to a fresh buffer, so the run continues as an uninterrupted one would.
 */
import { appendFile, mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { CheckpointError, ConfigError } from '../errors.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import { type RandomState, SeededRandom } from '../random/seeded-random.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import {
  type CheckpointFolders,
  type CheckpointParts,
  CheckpointStore,
  type LoadedCheckpoint,
} from './checkpoint-store.js';
import {
  EXPERIENCE_LOG,
  type ExperienceRecord,
  experienceText,
  replayExperience,
  truncateLines,
} from './experience-log.js';

/** The counters of every run's checkpoints; an owner extends the schema with its own. */
export const LedgerCountersSchema = z.object({
  /** Iterations finished. */
  iteration: z.number().int().nonnegative(),
  /** Transitions played in the real environment, and in the synthetic one. */
  realTransitions: z.number().int().nonnegative(),
  syntheticTransitions: z.number().int().nonnegative(),
  /** Lines of `experience.jsonl` that belong to this checkpoint. */
  experienceLines: z.number().int().nonnegative(),
  random: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  /** {@link stableHash} of the settings a resume must repeat. */
  configHash: z.string(),
});
export type LedgerCounters = z.infer<typeof LedgerCountersSchema>;

/** The numeric counters of `C`: those that can count a log's lines. */
type LineCounter<C> = { [K in keyof C]: C[K] extends number ? K : never }[keyof C] & string;

/** What a run folder holds besides the ledger's own files. */
export interface RunLedgerSpec<C extends LedgerCounters> {
  runDirectory: string;
  /** What the folder holds, in errors: "a run", "a served run". */
  holds: string;
  /** The configuration's file in the run folder (`config.json`). */
  configFile: string;
  /** The checkpoints' counters: {@link LedgerCountersSchema}, or it extended with the owner's. */
  counters: z.ZodType<C>;
  /** Logs besides `experience.jsonl`, by file name, with the counter of their lines. */
  logs?: Readonly<Record<string, LineCounter<C>>>;
}

/** How {@link RunLedger.open} starts a new run, or checks and continues one. */
export interface RunLedgerOpenOptions<C extends LedgerCounters> {
  /** Continue the run in the folder; without it, a folder with a checkpoint is refused. */
  resume?: boolean;
  /** The settings a resume must repeat; their {@link stableHash} is the counters' `configHash`. */
  settings: unknown;
  /** A new run's configuration, written to the configuration file. */
  config: unknown;
  /** A new run's seed. */
  seed: number;
  /** A new run's values of the owner's counters (the ledger's start at 0). */
  counters: Omit<C, keyof LedgerCounters>;
  /** Takes the run's experience back on resume. */
  replayBuffer?: ReplayBuffer;
  /**
   * Called instead of refusing a checkpoint whose configuration hash differs: it may accept
   * the change (setting `counters.configHash`) or throw its own error.
   */
  onConfigChange?: (counters: C, checkpoint: LoadedCheckpoint) => Promise<void> | void;
}

/** A short hash of a JSON value: a resumed run must have the configuration it started with. */
export function stableHash(value: unknown): string {
  let hash = 0x811c9dc5;
  const text = JSON.stringify(value);
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/**
 * The id of a trajectory the run played: `<source>:<iteration>:<episode>`, unique in the run
 * when `episode` is unique among the iteration's episodes of that source.
 */
export function trajectoryId(source: string, iteration: number, episode: string | number): string {
  return `${source}:${iteration}:${episode}`;
}

/** A run folder's configuration, counters, logs and checkpoints; see the file's comment. */
export class RunLedger<C extends LedgerCounters = LedgerCounters> {
  /** The run's checkpoints (`checkpoints/` in the run folder). */
  readonly checkpoints: CheckpointStore;

  private constructor(
    private readonly spec: RunLedgerSpec<C>,
    /** The counters; the owner advances its own, the ledger the log lengths. */
    readonly counters: C,
    /** The run's random stream, saved with every checkpoint. */
    readonly random: SeededRandom,
  ) {
    this.checkpoints = RunLedger.store(spec.runDirectory);
  }

  /** The checkpoints of a run folder. */
  static store(runDirectory: string): CheckpointStore {
    return new CheckpointStore(join(runDirectory, 'checkpoints'));
  }

  /**
   * Starts a new run in `spec.runDirectory` (its configuration file and empty logs), or, with
   * `resume` and a checkpoint there, continues it: the counters are read and the configuration
   * hash checked, the logs cut back to what the checkpoint covers, and the experience re-added
   * to `replayBuffer`. Resolves to the ledger and the checkpoint resumed from.
   */
  static async open<C extends LedgerCounters>(
    spec: RunLedgerSpec<C>,
    options: RunLedgerOpenOptions<C>,
  ): Promise<{ ledger: RunLedger<C>; checkpoint: LoadedCheckpoint | undefined }> {
    const { runDirectory } = spec;
    const checkpoint = await RunLedger.store(runDirectory).load();
    if (checkpoint && !options.resume) {
      throw new ConfigError(
        `${runDirectory} already holds ${spec.holds} (checkpoint ${checkpoint.name}). Pass --resume to continue it, or choose another --run-dir.`,
        { field: 'runDirectory' },
      );
    }
    await mkdir(runDirectory, { recursive: true });
    const ledger = checkpoint
      ? await RunLedger.resume(spec, checkpoint, options)
      : await RunLedger.create(spec, options);
    return { ledger, checkpoint };
  }

  private static async create<C extends LedgerCounters>(
    spec: RunLedgerSpec<C>,
    options: RunLedgerOpenOptions<C>,
  ): Promise<RunLedger<C>> {
    const random = new SeededRandom(options.seed);
    const { runDirectory, configFile, logs = {} } = spec;
    await writeFileAtomic(
      join(runDirectory, configFile),
      `${JSON.stringify(options.config, null, 2)}\n`,
    );
    const lines: Record<string, number> = { experienceLines: 0 };
    for (const [file, counter] of Object.entries(logs)) {
      await writeFileAtomic(join(runDirectory, file), '');
      lines[counter] = 0;
    }
    await writeFileAtomic(join(runDirectory, EXPERIENCE_LOG), '');
    const counters = spec.counters.parse({
      iteration: 0,
      realTransitions: 0,
      syntheticTransitions: 0,
      ...lines,
      random: random.getState(),
      configHash: stableHash(options.settings),
      ...options.counters,
    });
    return new RunLedger(spec, counters, random);
  }

  private static async resume<C extends LedgerCounters>(
    spec: RunLedgerSpec<C>,
    checkpoint: LoadedCheckpoint,
    options: RunLedgerOpenOptions<C>,
  ): Promise<RunLedger<C>> {
    const { runDirectory, configFile, logs = {} } = spec;
    const file = join(runDirectory, 'checkpoints', checkpoint.name, 'counters.json');
    const parsed = spec.counters.safeParse(checkpoint.json('counters'));
    if (!parsed.success) {
      throw new CheckpointError(
        `${file} holds counters this version cannot read (${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'counters'}: ${issue.message}`).join('; ')}); the run was written by another version. Start a new --run-dir.`,
        { path: file },
      );
    }
    const counters = parsed.data;
    if (counters.configHash !== stableHash(options.settings)) {
      if (!options.onConfigChange) {
        throw new CheckpointError(
          `The checkpoint in ${runDirectory} was written with another configuration (see ${join(runDirectory, configFile)}). Resume with the same settings, or start a new --run-dir.`,
          { path: runDirectory },
        );
      }
      await options.onConfigChange(counters, checkpoint);
    }
    const covered = counters as Record<string, unknown>;
    for (const [log, counter] of Object.entries(logs)) {
      await truncateLines(join(runDirectory, log), covered[counter] as number);
    }
    const experience = join(runDirectory, EXPERIENCE_LOG);
    await truncateLines(experience, counters.experienceLines);
    if (options.replayBuffer && counters.experienceLines > 0) {
      await replayExperience(experience, options.replayBuffer, counters.experienceLines);
    }
    return new RunLedger(spec, counters, SeededRandom.fromState(counters.random as RandomState));
  }

  /** The path of a file in the run folder. */
  path(file: string): string {
    return join(this.spec.runDirectory, file);
  }

  /** The id of a trajectory of the iteration in progress ({@link trajectoryId}). */
  trajectoryId(source: string, episode: string | number): string {
    return trajectoryId(source, this.counters.iteration, episode);
  }

  /** Appends transitions (with the iteration each was played in) to `experience.jsonl`. */
  async appendExperience(records: readonly ExperienceRecord[]): Promise<void> {
    if (records.length === 0) return;
    await appendFile(this.path(EXPERIENCE_LOG), experienceText(records));
    this.counters.experienceLines += records.length;
  }

  /** Appends lines (JSON text) to one of the owner's logs (`spec.logs`). */
  async appendLines(log: string, lines: readonly string[]): Promise<void> {
    const counter = this.spec.logs?.[log];
    if (counter === undefined) {
      throw new ConfigError(`${log} is not a log of this run folder.`, { field: 'log' });
    }
    if (lines.length === 0) return;
    await appendFile(this.path(log), `${lines.join('\n')}\n`);
    (this.counters as Record<string, unknown>)[counter] =
      (this.counters[counter] as number) + lines.length;
  }

  /**
   * Saves a checkpoint (by default `iteration-000012`, the iterations done) with the counters,
   * the RNG's state and `parts`, after the log lines it covers are on disk. Resolves to its name.
   */
  async save(
    parts: CheckpointParts,
    folders: CheckpointFolders = {},
    name = `iteration-${String(this.counters.iteration).padStart(6, '0')}`,
  ): Promise<string> {
    for (const log of [EXPERIENCE_LOG, ...Object.keys(this.spec.logs ?? {})]) {
      const handle = await open(this.path(log), 'r');
      await handle.sync().finally(() => handle.close());
    }
    this.counters.random = this.random.getState();
    await this.checkpoints.save(name, { counters: this.counters, ...parts }, folders);
    return name;
  }
}
