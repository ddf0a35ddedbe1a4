/**
 * Replay-buffer benchmark, side by side in one run at 10k, 100k and 1M transitions: the
 * exact flat index, HNSW tuned to a recall target (`targetRecall`, default 0.95), and a
 * brute-force typed-array scan. Per size: insert rate, recall@8 of HNSW against exact
 * search (tie-aware), median and p99 top-8 latency, reload time, memory and bytes per
 * transition.
 *
 * Transitions are ALFWorld-like: real expert steps from
 * $DREAMGYM_DATA_DIR/alfworld/expert_trajectories.jsonl (train games) with their object and
 * receptacle numbers re-drawn, so texts stay realistic while the buffer grows past the data;
 * like real experience, many share their state and action (56% at 1M), and the buffer
 * keeps one vector row for those. Queries are 200 fresh transitions of the same kind; 1,000
 * more are served first, as a buffer in use has served searches (the tuned index measures
 * its recall on those).
 *
 * Before/after: the same transitions also go into fixed-parameter HNSW buffers built by the
 * core before issue 19 and by this one (`--baseline-ref`, `none` to skip).
 *
 * Run: `npm run replay -w dreamgym-benchmarks` after `npm run build`. Sizes:
 * `-- --sizes 10000,100000` or `REPLAY_SIZES=...`; target: `-- --target-recall 0.95`;
 * faiss threads for inserts: `-- --threads 2` (searches run on one); `-- --sizes 1000000
 * --add-sizes` measures one size and keeps the other sizes of the results file. Writes
 * benchmarks/results/replay.json; progress goes to stderr.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { HashingEmbedder, ReplayBuffer, type Transition } from '@dreamgym/core';
import type { ReplayBufferStats, ReplayIndexOptions } from '@dreamgym/core/replay';
import { loadTemplates, makeTransitions, type Template } from './alfworld-like.js';
import { ISSUE_19_BASELINE, loadBaselineCore } from './baseline-core.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const SIZES = option('sizes', process.env.REPLAY_SIZES ?? '10000,100000,1000000')
  .split(',')
  .map(Number);
const DIMENSION = Number(option('dimension', '256'));
const TARGET_RECALL = Number(option('target-recall', '0.95'));
const THREADS = Number(option('threads', String(availableParallelism())));
/**
 * `--add-sizes`: keep the sizes of the results file that this run does not measure (a large
 * size measured on its own, when one run of every size does not fit the machine's time);
 * each kept entry names the run it comes from.
 */
const ADD_SIZES = args.includes('--add-sizes');
/**
 * `--baseline-ref REF` (default: the code before issue 19; `none` skips it): the same
 * transitions also go into an HNSW buffer with the fixed parameters both codes share
 * (`m` 16, `efConstruction` 40), built by the core at REF and by this core, side by side;
 * their insert rates and reload times are in `beforeAfter`.
 */
const BASELINE_REF = option('baseline-ref', ISSUE_19_BASELINE);
const QUERIES = 200;
/**
 * Served before measuring on served searches: enough for a full sample of distinct queries
 * (`recallQueries`, default 400; many generated transitions share their state and action).
 */
const WARM_UP_QUERIES = 1000;
const BRUTE_QUERIES = 40;
const K = 8;
const BATCH = 10_000;

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

function latency(samples: number[]): { medianMs: number; p99Ms: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { medianMs: round(percentile(sorted, 0.5), 3), p99Ms: round(percentile(sorted, 0.99), 3) };
}

function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

async function directoryBytes(directory: string): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const name of await readdir(directory))
    sizes[name] = (await stat(join(directory, name))).size;
  return sizes;
}

function log(message: string): void {
  process.stderr.write(
    `[replay] ${new Date().toISOString().slice(11, 19)} (load ${loadavg()[0]!.toFixed(1)}) ${message}\n`,
  );
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

/** The part of a core the builds use: this one, or the baseline's from git. */
interface Core {
  ReplayBuffer: typeof ReplayBuffer;
}
const baseline = BASELINE_REF === 'none' ? undefined : await loadBaselineCore(BASELINE_REF);

/** Insert rate and reload time of one fixed-parameter HNSW build. */
async function fixedBuild(
  core: Core,
  directory: string,
  transitions: Transition[],
  label: string,
): Promise<{ insertPerSecond: number; reloadSeconds: number }> {
  const embedder = new HashingEmbedder({ dimension: DIMENSION });
  const build = await buildBuffer(directory, embedder, FIXED_HNSW, transitions, label, [], core);
  const reloaded = await reload(directory, embedder, core);
  await reloaded.buffer.close();
  await rm(directory, { recursive: true, force: true });
  return { insertPerSecond: build.insertPerSecond, reloadSeconds: reloaded.reloadSeconds };
}
const FIXED_HNSW = { type: 'hnsw', m: 16, efConstruction: 40 } as const;

/** Builds a buffer in batches, printing progress; returns its insert rate and flush time. */
async function buildBuffer(
  directory: string,
  embedder: HashingEmbedder,
  index: ReplayIndexOptions,
  transitions: Transition[],
  label: string,
  warmUp: Transition[] = [],
  core: Core = { ReplayBuffer },
) {
  const buffer = await core.ReplayBuffer.open(directory, { embedder, index, threads: THREADS });
  const started = performance.now();
  let nextReport = started + 30_000;
  for (let start = 0; start < transitions.length; start += BATCH) {
    await buffer.add(transitions.slice(start, start + BATCH));
    if (performance.now() >= nextReport) {
      const done = Math.min(transitions.length, start + BATCH);
      const rate = done / ((performance.now() - started) / 1000);
      log(
        `${label}: ${done}/${transitions.length} inserted, ${Math.round(rate)}/s, ETA ${Math.round((transitions.length - done) / rate)} s, ${buffer.stats().indexedRows} rows`,
      );
      nextReport = performance.now() + 30_000;
    }
  }
  const insertSeconds = (performance.now() - started) / 1000;
  const built = buffer.stats();
  // Searches a buffer in use has served: a tuned index measures its recall on them (at its
  // next add, or now).
  for (const query of warmUp) await buffer.search({ state: query.state, action: query.action }, K);
  if (warmUp.length > 0) await buffer.measureRecall();
  const afterWarmUp = buffer.stats();
  const flushStarted = performance.now();
  await buffer.close();
  return {
    insertPerSecond: Math.round(transitions.length / insertSeconds),
    insertSeconds: round(insertSeconds, 1),
    flushSeconds: round((performance.now() - flushStarted) / 1000, 2),
    built,
    afterWarmUp,
    bytes: await directoryBytes(directory),
  };
}

/** Reopens read-only, timing it, and reports memory right after. */
async function reload(directory: string, embedder: HashingEmbedder, core: Core = { ReplayBuffer }) {
  const started = performance.now();
  const buffer = await core.ReplayBuffer.open(directory, { embedder, readOnly: true });
  const seconds = (performance.now() - started) / 1000;
  const memory = process.memoryUsage();
  return {
    buffer,
    reloadSeconds: round(seconds, 2),
    memory: {
      rssMiB: mib(memory.rss),
      heapMiB: mib(memory.heapUsed),
      externalMiB: mib(memory.external + memory.arrayBuffers),
    },
  };
}

interface Measured {
  transitions: number;
  /** Vector rows: one per distinct (state, action). */
  rows: number;
  targetRecall: number;
  /** Recall@8 of the tuned HNSW index on the fresh queries, against exact search (tie-aware). */
  recallAt8: number;
  /** Median and p99 top-8 latency of the tuned HNSW index, in milliseconds. */
  medianMs: number;
  p99Ms: number;
  /** Transitions inserted per second into the tuned HNSW buffer (embedding, log, index, tuning). */
  insertPerSecond: number;
  reloadSeconds: number;
  hnsw: {
    index: ReplayBufferStats['index'];
    measuredAtBuild: ReplayBufferStats['recall'];
    measuredOnServedSearches: ReplayBufferStats['recall'];
    insertSeconds: number;
    flushSeconds: number;
    memoryAfterReload: { rssMiB: number; heapMiB: number; externalMiB: number };
  };
  flat: {
    insertPerSecond: number;
    reloadSeconds: number;
    medianMs: number;
    p99Ms: number;
    memoryAfterReload: { rssMiB: number; heapMiB: number; externalMiB: number };
  };
  bruteForce: { medianMs: number; p99Ms: number };
  hnswSpeedupOverBruteForce: number;
  /** Fixed-parameter HNSW builds by the baseline core and by this one, side by side. */
  beforeAfter?: {
    baselineCode: string;
    index: typeof FIXED_HNSW;
    before: { insertPerSecond: number; reloadSeconds: number };
    after: { insertPerSecond: number; reloadSeconds: number };
    insertPerSecondRatio: number;
    reloadSecondsRatio: number;
  };
  bytesPerTransition: {
    records: number;
    rows: number;
    vectors: number;
    flatIndex: number;
    hnswIndex: number;
  };
}

async function measure(size: number, templates: Template[], scratch: string): Promise<Measured> {
  const embedder = new HashingEmbedder({ dimension: DIMENSION });
  const transitions = makeTransitions(templates, size, 1);
  const queries = makeTransitions(templates, QUERIES, 2);
  const warmUp = makeTransitions(templates, WARM_UP_QUERIES, 3);
  const flatDirectory = join(scratch, `flat-${size}`);
  const hnswDirectory = join(scratch, `hnsw-${size}`);

  log(`${size}: inserting into a flat buffer`);
  const flatBuild = await buildBuffer(
    flatDirectory,
    embedder,
    { type: 'flat' },
    transitions,
    `${size} flat`,
  );
  log(`${size}: flat ${flatBuild.insertPerSecond}/s; reloading it`);
  const flat = await reload(flatDirectory, embedder);
  const queryVectors: Float32Array[] = [];
  for (const query of queries)
    queryVectors.push(await flat.buffer.embedQuery({ state: query.state, action: query.action }));
  const flatTimes: number[] = [];
  // The k-th best exact score per query: HNSW hits at or above it count as recalled (ties
  // between equal phi vectors make ids an unfair test).
  const kthScore: number[] = [];
  for (const vector of queryVectors) {
    const begin = performance.now();
    const hits = flat.buffer.searchVector(vector, K);
    flatTimes.push(performance.now() - begin);
    kthScore.push(hits.at(-1)?.score ?? Number.NEGATIVE_INFINITY);
  }
  // The brute-force baseline scans the buffer's own typed-array vectors.
  const bruteTimes: number[] = [];
  for (const vector of queryVectors.slice(0, BRUTE_QUERIES)) {
    const begin = performance.now();
    flat.buffer.searchExactVector(vector, K);
    bruteTimes.push(performance.now() - begin);
  }
  await flat.buffer.close();
  await rm(flatDirectory, { recursive: true, force: true });

  log(
    `${size}: inserting into an HNSW buffer (target recall ${TARGET_RECALL}, ${THREADS} threads)`,
  );
  const hnswBuild = await buildBuffer(
    hnswDirectory,
    embedder,
    { type: 'hnsw', targetRecall: TARGET_RECALL },
    transitions,
    `${size} hnsw`,
    warmUp,
  );
  let beforeAfter: Measured['beforeAfter'];
  if (baseline) {
    log(`${size}: fixed HNSW ${JSON.stringify(FIXED_HNSW)}, baseline core ${baseline.commit}`);
    const before = await fixedBuild(
      baseline.core,
      join(scratch, `before-${size}`),
      transitions,
      `${size} hnsw fixed, ${baseline.commit}`,
    );
    log(`${size}: fixed HNSW, this core`);
    const after = await fixedBuild(
      { ReplayBuffer },
      join(scratch, `after-${size}`),
      transitions,
      `${size} hnsw fixed, this core`,
    );
    beforeAfter = {
      baselineCode: baseline.commit,
      index: FIXED_HNSW,
      before,
      after,
      insertPerSecondRatio: round(after.insertPerSecond / before.insertPerSecond, 2),
      reloadSecondsRatio: round(after.reloadSeconds / before.reloadSeconds, 2),
    };
    log(`${size}: before/after ${JSON.stringify(beforeAfter)}`);
  }
  transitions.length = 0;
  log(
    `${size}: HNSW ${hnswBuild.insertPerSecond}/s, ${JSON.stringify(hnswBuild.afterWarmUp.index)}; reloading it`,
  );
  const hnsw = await reload(hnswDirectory, embedder);
  const hnswTimes: number[] = [];
  let recalled = 0;
  for (const [position, vector] of queryVectors.entries()) {
    const begin = performance.now();
    const hits = hnsw.buffer.searchVector(vector, K);
    hnswTimes.push(performance.now() - begin);
    recalled += hits.filter((hit) => hit.score >= kthScore[position]! - 1e-5).length;
  }
  await hnsw.buffer.close();
  await rm(hnswDirectory, { recursive: true, force: true });

  const search = latency(hnswTimes);
  const bruteForce = latency(bruteTimes);
  const flatSearch = latency(flatTimes);
  const bytes = hnswBuild.bytes;
  return {
    transitions: size,
    rows: hnswBuild.built.indexedRows,
    targetRecall: TARGET_RECALL,
    recallAt8: round(recalled / (QUERIES * K), 3),
    medianMs: search.medianMs,
    p99Ms: search.p99Ms,
    insertPerSecond: hnswBuild.insertPerSecond,
    reloadSeconds: hnsw.reloadSeconds,
    hnsw: {
      index: hnswBuild.afterWarmUp.index,
      measuredAtBuild: hnswBuild.built.recall,
      measuredOnServedSearches: hnswBuild.afterWarmUp.recall,
      insertSeconds: hnswBuild.insertSeconds,
      flushSeconds: hnswBuild.flushSeconds,
      memoryAfterReload: hnsw.memory,
    },
    flat: {
      insertPerSecond: flatBuild.insertPerSecond,
      reloadSeconds: flat.reloadSeconds,
      ...flatSearch,
      memoryAfterReload: flat.memory,
    },
    bruteForce,
    hnswSpeedupOverBruteForce: round(bruteForce.medianMs / search.medianMs, 1),
    ...(beforeAfter ? { beforeAfter } : {}),
    bytesPerTransition: {
      records: Math.round(bytes['records.jsonl']! / size),
      rows: Math.round((bytes['rows.i32'] ?? 0) / size),
      vectors: Math.round(bytes['vectors.f32']! / size),
      flatIndex: Math.round(flatBuild.bytes['index.faiss']! / size),
      hnswIndex: Math.round(bytes['index.faiss']! / size),
    },
  };
}

function printTable(results: Measured[]): void {
  const rows = [
    ['transitions', ...results.map((r) => r.transitions.toLocaleString('en'))],
    ['vector rows (distinct state+action)', ...results.map((r) => r.rows.toLocaleString('en'))],
    [
      'insert/s flat | hnsw tuned',
      ...results.map((r) => `${r.flat.insertPerSecond} | ${r.insertPerSecond}`),
    ],
    [
      'hnsw index (tuned)',
      ...results.map(
        (r) =>
          `m ${'m' in r.hnsw.index ? r.hnsw.index.m : '-'} ef ${'efSearch' in r.hnsw.index ? r.hnsw.index.efSearch : '-'}`,
      ),
    ],
    ['hnsw recall@8 (fresh queries)', ...results.map((r) => String(r.recallAt8))],
    ['top-8 hnsw median / p99 ms', ...results.map((r) => `${r.medianMs} / ${r.p99Ms}`)],
    ['top-8 flat median / p99 ms', ...results.map((r) => `${r.flat.medianMs} / ${r.flat.p99Ms}`)],
    [
      'top-8 brute force median / p99 ms',
      ...results.map((r) => `${r.bruteForce.medianMs} / ${r.bruteForce.p99Ms}`),
    ],
    ['hnsw speed-up over brute force', ...results.map((r) => `${r.hnswSpeedupOverBruteForce}x`)],
    ['reload s flat | hnsw', ...results.map((r) => `${r.flat.reloadSeconds} | ${r.reloadSeconds}`)],
    ['RSS MiB after hnsw reload', ...results.map((r) => String(r.hnsw.memoryAfterReload.rssMiB))],
    [
      'bytes/transition records+rows+vectors+index (flat | hnsw)',
      ...results.map((r) => {
        const b = r.bytesPerTransition;
        return `${b.records}+${b.rows}+${b.vectors}+${b.flatIndex} | ${b.hnswIndex}`;
      }),
    ],
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
}

const RESULTS_FILE = resolve(import.meta.dirname, 'results', 'replay.json');

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const templates = await loadTemplates();
  log(
    `${templates.length} expert steps as templates; dimension ${DIMENSION}; target recall ${TARGET_RECALL}; ${THREADS} faiss threads for inserts`,
  );
  // The previous run's figures, kept for reference (another code version, other machine load).
  const stored = existsSync(RESULTS_FILE)
    ? (JSON.parse(await readFile(RESULTS_FILE, 'utf8')) as {
        date?: string;
        results?: (Measured & { run?: string })[];
        previousRun?: { date?: string; results?: unknown[] };
      })
    : undefined;
  const kept = ADD_SIZES
    ? (stored?.results ?? [])
        .filter((result) => !SIZES.includes(result.transitions))
        .map((result) => ({ ...result, run: result.run ?? stored?.date }))
    : [];
  // With --add-sizes the stored run is part of this one; its own previous run stays the reference.
  const previous = ADD_SIZES ? stored?.previousRun : stored;
  const scratch = await mkdtemp(
    join(process.env.REPLAY_BENCH_DIR ?? tmpdir(), 'dreamgym-replay-bench-'),
  );
  const results: Measured[] = [];
  // Written after every size, so that a run stopped at a size too large for the machine
  // keeps the sizes it finished.
  const write = async () => {
    const largest = results.at(-1)!;
    const targets = {
      size: largest.transitions,
      recallAt8AtLeast: TARGET_RECALL,
      medianBelowMs: 2,
      reloadBelowSeconds: 10,
      met: {
        recall: largest.recallAt8 >= TARGET_RECALL,
        median: largest.medianMs < 2,
        reload: largest.reloadSeconds < 10,
      },
    };
    const report = {
      benchmark: 'replay',
      date: new Date().toISOString(),
      sizesAsked: SIZES,
      machine: {
        cpus: cpus().length,
        cpu: cpus()[0]?.model,
        node: process.version,
        loadAverageAtStart: loadAtStart.map((value) => round(value, 2)),
        loadAverageAtEnd: loadavg().map((value) => round(value, 2)),
      },
      faiss: `faiss-node 0.5.1 with the set-up's additions on Debian libfaiss-dev 1.7.3; ${THREADS} OpenMP threads for inserts, 1 for searches`,
      config: {
        dimension: DIMENSION,
        embedder: new HashingEmbedder({ dimension: DIMENSION }).id,
        k: K,
        queries: QUERIES,
        warmUpQueries: WARM_UP_QUERIES,
        bruteForceQueries: BRUTE_QUERIES,
        insertBatch: BATCH,
      },
      results: [...kept, ...results].sort((a, b) => a.transitions - b.transitions),
      targets,
      previousRun: previous ? { date: previous.date, results: previous.results } : undefined,
    };
    await mkdir(resolve('results'), { recursive: true });
    await writeFile(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${RESULTS_FILE} (${results.map((result) => result.transitions).join(', ')})`);
    return targets;
  };
  try {
    for (const size of SIZES) {
      results.push(await measure(size, templates, scratch));
      printTable(results);
      await write();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
    if (baseline) await rm(baseline.directory, { recursive: true, force: true });
  }
  console.log(JSON.stringify(await write()));
}

await main();
