/**
 * `dreamgym buffer`: persistent replay buffers.
 * - `buffer build` embeds a domain's offline trajectories (its dataset, plus JSONL files of
 *   trajectories such as `dreamgym data explore` writes) into a buffer directory in one pass,
 *   with a progress bar, and reports the index it chose and the recall it measured.
 * - `buffer info` reports what a buffer directory holds: records, rows, index and recall.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  HashingEmbedder,
  IndexError,
  ReplayBuffer,
  readJsonl,
  type Trajectory,
  TrajectorySchema,
  trajectoryToTransitions,
} from '@dreamgym/core';
import type { HashingEmbedderOptions } from '@dreamgym/core/models';
import type {
  RecallMeasurement,
  ReplayBufferStats,
  ReplayIndexOptions,
} from '@dreamgym/core/replay';
import { loadDomainAdapter, ProgressReporter } from '@dreamgym/run';
import {
  type Command,
  type CommandIo,
  fail,
  integer,
  parseFlags,
  recallTarget,
} from '../command-arguments.js';
import { defaultDataDirectory } from '../run-flags.js';

const BUILD_USAGE = `Usage: dreamgym buffer build --domain NAME --out DIR [options]

Embeds the domain's offline trajectories into the replay buffer in DIR (created, or added to).

  --data DIR              the domain's dataset (default $DREAMGYM_DATA_DIR/<domain>)
  --offline FILE          also these JSONL trajectory files (repeatable; e.g. from data explore)
  --offline-limit N       only the first N trajectories of the dataset
  --no-dataset            only the --offline files
  --index auto|flat|hnsw  vector index of a new buffer (default auto: flat below 20,000
                          transitions, else HNSW tuned to --target-recall)
  --target-recall X       recall@8 the HNSW search depth is tuned to (default 0.95)
  --m N  --ef-search N    fixed HNSW graph degree / search depth instead of tuning them
  --dimension N           hashing-embedder dimension (default 256)
  --threads N             faiss threads for inserts (default: all cores)
  --batch N               transitions per insert (default 10000)
  --json                  print the summary as JSON`;

const INFO_USAGE = `Usage: dreamgym buffer info DIR [--measure] [--json]

  --measure   measure the recall of an HNSW index with a recall target now (on its own rows)
  --json      print the summary as JSON`;

const USAGE = `Usage: dreamgym buffer <build|info> [options]\n\n${BUILD_USAGE}\n\n${INFO_USAGE}`;

/** The hashing embedder a buffer was built with, from the id its manifest records. */
export function embedderFromId(id: string, directory: string): HashingEmbedder {
  const match =
    /^hashing-v1:dim=(\d+):word=([\d.]+):bigram=([\d.]+):trigram=([\d.]+):seed=(\d+)$/.exec(id);
  if (!match) {
    throw new IndexError(
      `The replay buffer in ${directory} was embedded with \`${id}\`; the CLI opens buffers of the hashing embedder only. Open it from code with the embedder it was built with.`,
      { path: directory },
    );
  }
  const options: HashingEmbedderOptions = {
    dimension: Number(match[1]),
    wordWeight: Number(match[2]),
    bigramWeight: Number(match[3]),
    trigramWeight: Number(match[4]),
    seed: Number(match[5]),
  };
  return new HashingEmbedder(options);
}

function describeRecall(recall: RecallMeasurement | undefined): string {
  if (!recall) return 'not measured (exact index, or fewer than 1,000 rows)';
  const source = {
    rows: 'its own rows, each left out',
    'new-rows': 'new rows before they joined the index',
    searches: 'searches it served',
  }[recall.queriesFrom];
  return `${recall.recall.toFixed(3)} recall@${recall.k} (target ${recall.targetRecall}${recall.reached ? ', reached' : ', NOT reached'}) at efSearch ${recall.efSearch}, m ${recall.m}; ${recall.queries} queries from ${source}, at ${recall.rows.toLocaleString('en')} rows; median ${recall.medianMs.toFixed(3)} ms`;
}

function summaryLines(stats: ReplayBufferStats): string[] {
  const index =
    stats.index.type === 'flat'
      ? 'flat (exact inner product)'
      : `HNSW m ${stats.index.m}, efConstruction ${stats.index.efConstruction}, efSearch ${stats.index.efSearch}${stats.index.targetRecall === undefined ? '' : `, target recall ${stats.index.targetRecall}`}`;
  return [
    `records      ${stats.size.toLocaleString('en')} transitions (${stats.occurrences.toLocaleString('en')} occurrences; ${Object.entries(
      stats.bySource,
    )
      .filter(([, count]) => count > 0)
      .map(([source, count]) => `${source} ${count.toLocaleString('en')}`)
      .join(', ')})`,
    `rows         ${stats.indexedRows.toLocaleString('en')} vectors, one per distinct state and action (${stats.liveRows.toLocaleString('en')} in use)`,
    `embedder     ${stats.embedderId}`,
    `index        ${index}`,
    `recall       ${describeRecall(stats.recall)}`,
  ];
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const result: T[] = [];
  for await (const item of items) result.push(item);
  return result;
}

function indexOptions(values: Record<string, unknown>, transitions: number): ReplayIndexOptions {
  const type = (values.index as string | undefined) ?? 'auto';
  if (!['auto', 'flat', 'hnsw'].includes(type))
    fail(`--index must be auto, flat or hnsw, got "${type}".`, '--index');
  const m = integer(values.m as string | undefined, '--m');
  const efSearch = integer(values['ef-search'] as string | undefined, '--ef-search');
  const target = recallTarget(values['target-recall'] as string | undefined);
  if (type === 'flat' || (type === 'auto' && transitions <= 20_000 && m === undefined))
    return { type: 'flat' };
  return {
    type: 'hnsw',
    ...(m === undefined ? {} : { m }),
    ...(efSearch === undefined ? {} : { efSearch }),
    ...(efSearch === undefined ? { targetRecall: target ?? 0.95 } : {}),
  };
}

async function build(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      domain: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      offline: { type: 'string', multiple: true },
      'offline-limit': { type: 'string' },
      'no-dataset': { type: 'boolean' },
      index: { type: 'string' },
      'target-recall': { type: 'string' },
      m: { type: 'string' },
      'ef-search': { type: 'string' },
      dimension: { type: 'string' },
      threads: { type: 'string' },
      batch: { type: 'string' },
      json: { type: 'boolean' },
    },
    BUILD_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${BUILD_USAGE}\n`);
    return 0;
  }
  const domain = values.domain as string | undefined;
  if (!domain) fail(`--domain is required.\n\n${BUILD_USAGE}`, '--domain');
  if (!values.out) fail(`--out DIR is required.\n\n${BUILD_USAGE}`, '--out');
  const out = resolve(io.cwd, values.out as string);
  const offlineFiles = ((values.offline as string[] | undefined) ?? []).map((file) =>
    resolve(io.cwd, file),
  );
  const useDataset = values['no-dataset'] !== true;
  const data = (values.data as string | undefined) ?? defaultDataDirectory(domain, io);
  if (useDataset && !data) fail('--data DIR is required, or set DREAMGYM_DATA_DIR.', '--data');
  const dimension = integer(values.dimension as string | undefined, '--dimension') ?? 256;
  const threads = integer(values.threads as string | undefined, '--threads');
  const batch = integer(values.batch as string | undefined, '--batch') ?? 10_000;
  if (batch < 1) fail(`--batch must be positive, got ${batch}.`, '--batch');
  const limit = integer(values['offline-limit'] as string | undefined, '--offline-limit');

  const started = performance.now();
  const trajectories: Trajectory[] = [];
  if (useDataset) {
    const adapter = await loadDomainAdapter(domain, { dataDir: resolve(io.cwd, data!) });
    trajectories.push(
      ...(await collect(
        adapter.datasets.trajectories.load(resolve(io.cwd, data!), {
          ...(limit === undefined ? {} : { limit }),
        }),
      )),
    );
  }
  for (const file of offlineFiles)
    trajectories.push(...(await collect(readJsonl(file, TrajectorySchema))));
  if (trajectories.length === 0)
    fail('No trajectories to add: the dataset and --offline files hold none.', '--offline');
  const transitions = trajectories.flatMap((trajectory, position) =>
    trajectoryToTransitions(trajectory, {
      trajectoryId: trajectory.id ?? `${trajectory.task.id}#${position}`,
    }),
  );

  const embedder = new HashingEmbedder({ dimension });
  // An existing buffer keeps its index unless one is asked for (a different one is an error).
  const existing = existsSync(join(out, 'manifest.json'));
  const asked = ['index', 'm', 'ef-search', 'target-recall'].some(
    (flag) => values[flag] !== undefined,
  );
  const index = existing && !asked ? undefined : indexOptions(values, transitions.length);
  const buffer = await ReplayBuffer.open(out, {
    embedder,
    ...(index ? { index } : {}),
    ...(threads === undefined ? {} : { threads }),
  });
  const progress = new ProgressReporter('dreamgym buffer build', transitions.length, io.stderr);
  let added = 0;
  let counted = 0;
  const insertStarted = performance.now();
  try {
    for (let from = 0; from < transitions.length; from += batch) {
      const result = await buffer.add(transitions.slice(from, from + batch));
      added += result.added.length;
      counted += result.counted;
      const done = Math.min(transitions.length, from + batch);
      progress.update(done, {
        fields: {
          rows: buffer.stats().indexedRows,
          '/s': Math.round(done / ((performance.now() - insertStarted) / 1000)),
        },
      });
    }
  } finally {
    progress.finish();
    await buffer.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  const reopened = await ReplayBuffer.open(out, { embedder, readOnly: true });
  const stats = reopened.stats();
  await reopened.close();
  const summary = {
    directory: out,
    trajectories: trajectories.length,
    transitions: transitions.length,
    added,
    counted,
    insertPerSecond: Math.round(transitions.length / insertSeconds),
    seconds: Number(seconds.toFixed(1)),
    stats,
  };
  if (values.json) {
    io.stdout.write(`${JSON.stringify(summary)}\n`);
    return 0;
  }
  io.stdout.write(
    [
      `built ${out} from ${trajectories.length.toLocaleString('en')} trajectories: ${added.toLocaleString('en')} transitions added, ${counted.toLocaleString('en')} duplicates counted, ${summary.insertPerSecond.toLocaleString('en')} transitions/s, ${summary.seconds} s`,
      ...summaryLines(stats),
    ].join('\n') + '\n',
  );
  return 0;
}

async function info(args: string[], io: CommandIo): Promise<number> {
  const [first, ...rest] = args;
  const positional = first !== undefined && !first.startsWith('-') ? first : undefined;
  const values = parseFlags(
    positional ? rest : args,
    { measure: { type: 'boolean' }, json: { type: 'boolean' } },
    INFO_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${INFO_USAGE}\n`);
    return 0;
  }
  if (!positional) fail(`The buffer directory is required.\n\n${INFO_USAGE}`, 'DIR');
  const directory = resolve(io.cwd, positional);
  let manifest: { embedderId?: unknown };
  try {
    manifest = JSON.parse(await readFile(join(directory, 'manifest.json'), 'utf8'));
  } catch {
    throw new IndexError(
      `${join(directory, 'manifest.json')} does not exist or is not JSON: no replay buffer in ${directory}.`,
      {
        path: directory,
      },
    );
  }
  const embedder = embedderFromId(String(manifest.embedderId), directory);
  const buffer = await ReplayBuffer.open(directory, { embedder, readOnly: true });
  try {
    if (values.measure) await buffer.measureRecall();
    const stats = buffer.stats();
    if (values.json) io.stdout.write(`${JSON.stringify(stats)}\n`);
    else io.stdout.write(`${directory}\n${summaryLines(stats).join('\n')}\n`);
  } finally {
    await buffer.close();
  }
  return 0;
}

async function run(args: string[], io: CommandIo): Promise<number> {
  const [verb, ...rest] = args;
  if (verb === 'build') return build(rest, io);
  if (verb === 'info') return info(rest, io);
  if (verb === undefined || verb === '--help' || verb === '-h') {
    io.stdout.write(`${USAGE}\n`);
    return verb === undefined ? 1 : 0;
  }
  fail(`Unknown buffer command "${verb}". Available: build, info.\n\n${USAGE}`);
}

/** `dreamgym buffer build` and `dreamgym buffer info`. */
export const bufferCommand: Command = {
  name: ['buffer'],
  summary: 'build a replay buffer from offline trajectories in one pass; show its index and recall',
  run,
};
