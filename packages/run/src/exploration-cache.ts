/**
 * Exploration data made once and kept: the offline exploration episodes of a domain's real
 * environment (its adapter's `explore`, as `dreamgym data explore` plays them) are
 * written to a cache folder under a name that hashes their settings and the data folder's
 * expert file, and later calls with the same settings reuse the file instead of playing again.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, readFile, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  ConfigError,
  type DomainAdapter,
  parseOptions,
  readJsonl,
  TrajectorySchema,
} from '@dreamgym/core';
import { writeFileAtomic } from '@dreamgym/core/internal';
import { z } from 'zod';
import { loadDomainAdapter } from './domains.js';
import { formatProgressLine } from './progress.js';

/**
 * Version of what a cached file holds. Raise it when the episodes an adapter plays for the
 * same settings change (a new policy mix, new defaults), so that old files are not reused.
 */
export const EXPLORATION_CACHE_FORMAT = 2;

/**
 * The expert demonstrations of a data folder. The SHA-256 of its content is part of the cache
 * key: replayed-expert episodes are made from it, and new data means new episodes. Its content,
 * not its modification time: a data folder copied or mounted again plays the same episodes.
 */
const EXPERT_FILE = 'expert_trajectories.jsonl';

/** Settings of {@link ensureExplorationData}: all but `cacheDir` and `concurrency` name the file. */
export const ExplorationDataOptionsSchema = z.object({
  /** Domain whose adapter plays the episodes (its `explore`). */
  domain: z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be a domain name such as `alfworld`'),
  /** The domain's data folder (e.g. `$DREAMGYM_DATA_DIR/alfworld`), passed as `dataDir`. */
  dataDir: z.string().min(1),
  /** Episodes to play. */
  episodes: z.number().int().positive(),
  /** Seed of the exploration policies and of the game order. */
  seed: z.number().int(),
  /** Step limit per episode. */
  maxSteps: z.number().int().positive(),
  /** Share of random episodes; the adapter's default expert-based policy plays the others. */
  randomShare: z.number().min(0).max(1),
  /**
   * Folder of the cached files. Default `$DREAMGYM_CACHE_DIR/exploration`, else
   * `$XDG_CACHE_HOME/dreamgym/exploration`, else `~/.cache/dreamgym/exploration`.
   */
  cacheDir: z.string().min(1).optional(),
  /** Episodes played at once (the adapter's `concurrency`); not part of the key. */
  concurrency: z.number().int().positive().optional(),
});

/** Settings of {@link ensureExplorationData} as a caller writes them. */
export type ExplorationDataOptions = z.input<typeof ExplorationDataOptionsSchema> & {
  /** Receives progress lines: the start, a line per tenth of the episodes, the end. */
  log?: (line: string) => void;
  /** Environment to read the cache-folder variables from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
};

/** What {@link ensureExplorationData} found or made. */
export interface ExplorationData {
  /** The exploration JSONL file (core `Trajectory` records). */
  path: string;
  /** True when the file was already in the cache and no episode was played. */
  reused: boolean;
  /** The adapter's summary of the run that made the file (episodes, successes, steps ...). */
  summary: Record<string, unknown>;
}

const SummarySchema = z.record(z.string(), z.unknown());

function defaultCacheDirectory(env: NodeJS.ProcessEnv): string {
  if (env.DREAMGYM_CACHE_DIR?.trim()) return join(env.DREAMGYM_CACHE_DIR, 'exploration');
  const cache = env.XDG_CACHE_HOME?.trim() ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(cache, 'dreamgym', 'exploration');
}

async function expertFileDigest(dataDir: string): Promise<string | null> {
  let content: Buffer;
  try {
    content = await readFile(join(dataDir, EXPERT_FILE));
  } catch {
    return null;
  }
  return createHash('sha256').update(content).digest('hex');
}

/**
 * Where {@link ensureExplorationData} keeps the file for these settings:
 * `<cacheDir>/<domain>-<hash>.jsonl`, the hash (16 hex digits of SHA-256) taken over the
 * settings, the resolved data folder and the SHA-256 of its `expert_trajectories.jsonl`.
 */
export async function explorationCachePath(input: ExplorationDataOptions): Promise<string> {
  const options = parseOptions(ExplorationDataOptionsSchema, input, 'exploration-data');
  const dataDir = resolve(options.dataDir);
  const key = JSON.stringify({
    format: EXPLORATION_CACHE_FORMAT,
    domain: options.domain,
    dataDir,
    episodes: options.episodes,
    seed: options.seed,
    maxSteps: options.maxSteps,
    randomShare: options.randomShare,
    expertFile: await expertFileDigest(dataDir),
  });
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 16);
  const folder = resolve(options.cacheDir ?? defaultCacheDirectory(input.env ?? process.env));
  return join(folder, `${options.domain}-${hash}.jsonl`);
}

/** The exploration of `domain`'s adapter over `dataDir` (`DomainAdapter.explore`). */
async function loadExplore(
  domain: string,
  dataDir: string,
): Promise<NonNullable<DomainAdapter['explore']>> {
  const adapter = await loadDomainAdapter(domain, { dataDir });
  if (adapter.explore === undefined) {
    throw new ConfigError(
      `The ${domain} adapter has no exploration (DomainAdapter.explore): it cannot make exploration data.`,
      { field: 'domain' },
    );
  }
  return (options) => adapter.explore!(options);
}

const summaryPathOf = (path: string) => path.replace(/\.jsonl$/, '.summary.json');

/** The summary written beside `path`; counted from the file when it is missing or unreadable. */
async function readSummary(path: string): Promise<Record<string, unknown>> {
  try {
    const parsed = SummarySchema.safeParse(JSON.parse(await readFile(summaryPathOf(path), 'utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // Counted below.
  }
  const summary = { output: path, episodes: 0, successes: 0, steps: 0 };
  for await (const trajectory of readJsonl(path, TrajectorySchema)) {
    summary.episodes += 1;
    summary.steps += trajectory.steps.length;
    if (trajectory.success) summary.successes += 1;
  }
  return summary;
}

/**
 * The exploration data for these settings: the cached file when there is one (`reused: true`,
 * nothing played), else the episodes played now with the domain adapter's `explore`
 * (its default policy mix for `randomShare`) and kept in the cache. The file is written under
 * a temporary name and renamed when complete, so a run that crashes or fails leaves no file
 * that a later call would take for finished data.
 *
 * @example
 * const { path } = await ensureExplorationData({
 *   domain: 'alfworld', dataDir: 'data/alfworld', episodes: 200, seed: 0, maxSteps: 50,
 *   randomShare: 0.5, log: (line) => process.stderr.write(`${line}\n`),
 * });
 */
export async function ensureExplorationData(
  input: ExplorationDataOptions,
): Promise<ExplorationData> {
  const options = parseOptions(ExplorationDataOptionsSchema, input, 'exploration-data');
  const log = input.log ?? (() => undefined);
  const path = await explorationCachePath(input);
  const exists = await stat(path).then(
    (found) => found.isFile(),
    () => false,
  );
  if (exists) {
    const summary = await readSummary(path);
    log(`exploration: reusing ${path} (${summary.episodes ?? '?'} episodes)`);
    return { path, reused: true, summary };
  }
  const explore = await loadExplore(options.domain, resolve(options.dataDir));
  // A name of its own per run: two processes that fill the same entry do not write into one file.
  const temporary = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  log(
    `exploration: playing ${options.episodes} episodes on the real ${options.domain} environment for ${path}`,
  );
  const started = Date.now();
  const every = Math.max(1, Math.ceil(options.episodes / 10));
  let successes = 0;
  try {
    const summary = await explore({
      output: temporary,
      episodes: options.episodes,
      seed: options.seed,
      maxSteps: options.maxSteps,
      randomShare: options.randomShare,
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      onEpisode: (progress) => {
        if (progress.success) successes += 1;
        if (progress.completed % every !== 0 && progress.completed !== progress.total) return;
        log(
          formatProgressLine('exploration', {
            done: progress.completed,
            total: progress.total,
            elapsedMs: Date.now() - started,
            successRate: successes / progress.completed,
          }),
        );
      },
    });
    // On disk before it gets its final name: a crash after the rename must not leave a
    // complete-looking name over data still in the page cache.
    const handle = await open(temporary, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    const kept: Record<string, unknown> = { ...summary, output: path };
    await writeFileAtomic(summaryPathOf(path), `${JSON.stringify(kept, null, 2)}\n`);
    await rename(temporary, path);
    log(
      `exploration: wrote ${path} (${kept.episodes ?? '?'} episodes, ${kept.successes ?? '?'} successes) in ${Math.round((Date.now() - started) / 1000)} s`,
    );
    return { path, reused: false, summary: kept };
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
