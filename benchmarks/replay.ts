/**
 * Replay-buffer benchmark: insert throughput, top-8 search latency (median, p99) with faiss
 * flat, faiss HNSW and a brute-force typed-array scan side by side, HNSW recall, bytes per
 * transition and reload time, at 10k, 100k and 1M transitions.
 *
 * Transitions are ALFWorld-like: real expert steps from
 * $DREAMGYM_DATA_DIR/alfworld/expert_trajectories.jsonl (train games) with their object and
 * receptacle numbers re-drawn, so texts stay realistic while the buffer grows past the data.
 *
 * Run: `npm run replay -w dreamgym-benchmarks` after building `@dreamgym/core` (tsx runs it
 * against the built package). Sizes: `-- --sizes 10000,100000` or `REPLAY_SIZES=...`; index
 * types: `-- --indexes flat` or `REPLAY_INDEXES=flat` (default `flat,hnsw`); HNSW only at some
 * sizes: `-- --hnsw-sizes 10000,100000` or `REPLAY_HNSW_SIZES=...`. Writes
 * benchmarks/results/replay.json; figures of an index type left out are kept from the
 * previous results file for the same size, marked with the date of that earlier run.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  DatasetFormatError,
  embedPhi,
  HashingEmbedder,
  ReplayBuffer,
  type ReplayIndexOptions,
  readJsonlLines,
  SeededRandom,
  type Transition,
} from '@dreamgym/core';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const SIZES = option('sizes', process.env.REPLAY_SIZES ?? '10000,100000,1000000')
  .split(',')
  .map(Number);
const INDEXES = new Set(option('indexes', process.env.REPLAY_INDEXES ?? 'flat,hnsw').split(','));
if (!INDEXES.has('flat') || [...INDEXES].some((type) => type !== 'flat' && type !== 'hnsw')) {
  // The flat buffer gives the exact top-k that HNSW recall is measured against.
  throw new Error(`--indexes: expected \`flat\` or \`flat,hnsw\`, got \`${[...INDEXES]}\`.`);
}
/** Sizes at which HNSW is measured (default: all, when `hnsw` is among the index types). */
const HNSW_SIZES = new Set(
  option('hnsw-sizes', process.env.REPLAY_HNSW_SIZES ?? SIZES.join(','))
    .split(',')
    .map(Number),
);
const DIMENSION = Number(option('dimension', '256'));
const HNSW: ReplayIndexOptions = {
  type: 'hnsw',
  m: Number(option('m', '16')),
  efConstruction: Number(option('ef-construction', '40')),
  efSearch: Number(option('ef-search', '128')),
};
const QUERIES = 200;
const BRUTE_QUERIES = 40;
const K = 8;
const BATCH = 10_000;

interface ExpertTrajectory {
  game: string;
  conversations: { from: 'human' | 'gpt'; value: string }[];
}

interface Template {
  state: string;
  action: string;
  next: string;
  instruction: string;
  game: string;
}

async function loadTemplates(): Promise<Template[]> {
  const root = process.env.DREAMGYM_DATA_DIR ?? resolve('../../shared/data');
  const file = join(root, 'alfworld', 'expert_trajectories.jsonl');
  if (!existsSync(file)) {
    throw new Error(`${file} does not exist: set DREAMGYM_DATA_DIR to the shared data directory.`);
  }
  const templates: Template[] = [];
  for await (const { line, value } of readJsonlLines(file)) {
    const trajectory = value as ExpertTrajectory;
    if (typeof trajectory?.game !== 'string' || !Array.isArray(trajectory.conversations)) {
      throw new DatasetFormatError('expected {game, conversations}', { file, line });
    }
    const turns = trajectory.conversations;
    const instruction = /Your task is to: (.*)/.exec(turns[0]?.value ?? '')?.[1] ?? '';
    for (let index = 1; index + 1 < turns.length; index += 2) {
      templates.push({
        state: turns[index - 1]!.value,
        action: turns[index]!.value,
        next: turns[index + 1]!.value,
        instruction,
        game: trajectory.game,
      });
    }
  }
  return templates;
}

/** A template with its numbers re-drawn (the same number maps to the same new one). */
function vary(template: Template, random: SeededRandom): Omit<Template, 'game'> {
  const mapping = new Map<string, string>();
  const renumber = (text: string) =>
    text.replace(/\b\d+\b/g, (number) => {
      let replacement = mapping.get(number);
      if (!replacement) {
        replacement = String(1 + random.int(20));
        mapping.set(number, replacement);
      }
      return replacement;
    });
  return {
    state: renumber(template.state),
    action: renumber(template.action),
    next: renumber(template.next),
    instruction: renumber(template.instruction),
  };
}

function makeTransitions(templates: Template[], count: number, seed: number): Transition[] {
  const random = new SeededRandom(seed);
  const transitions: Transition[] = [];
  for (let index = 0; index < count; index += 1) {
    const template = templates[random.int(templates.length)]!;
    const text = vary(template, random);
    transitions.push({
      id: `bench-${seed}-${index}`,
      domain: 'alfworld',
      taskId: template.game,
      instruction: text.instruction,
      trajectoryId: `${template.game}#${index}`,
      stepIndex: 0,
      state: { text: text.state },
      action: text.action,
      // Keeps every transition distinct for duplicate suppression; not part of phi.
      nextState: { text: `${text.next} [${index}]` },
      reward: 0,
      done: false,
      source: index % 10 === 0 ? 'offline' : 'synthetic',
    });
  }
  return transitions;
}

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

async function buildBuffer(
  directory: string,
  embedder: HashingEmbedder,
  index: ReplayIndexOptions,
  transitions: Transition[],
): Promise<{ insertPerSecond: number; flushSeconds: number; bytes: Record<string, number> }> {
  const buffer = await ReplayBuffer.open(directory, { embedder, index });
  const started = performance.now();
  for (let start = 0; start < transitions.length; start += BATCH) {
    await buffer.add(transitions.slice(start, start + BATCH));
  }
  const insertSeconds = (performance.now() - started) / 1000;
  const flushStarted = performance.now();
  await buffer.close();
  const flushSeconds = (performance.now() - flushStarted) / 1000;
  return {
    insertPerSecond: Math.round(transitions.length / insertSeconds),
    flushSeconds: round(flushSeconds, 2),
    bytes: await directoryBytes(directory),
  };
}

interface SizeResult {
  transitions: number;
  insertPerSecond: { flat: number; hnsw: number };
  flushSeconds: { flat: number; hnsw: number };
  reloadSeconds: { flat: number; hnsw: number };
  search: {
    flat: { medianMs: number; p99Ms: number };
    hnsw: { medianMs: number; p99Ms: number };
    bruteForce: { medianMs: number; p99Ms: number };
  };
  hnswRecallAt8: number;
  hnswSpeedupOverBruteForce: number;
  bytesPerTransition: { records: number; vectors: number; flatIndex: number; hnswIndex: number };
  heapMiBAfterReload: number;
  /** Set when the HNSW figures were not measured in this run: the date of the run they are from. */
  hnswFromEarlierRun?: string;
}

const RESULTS_FILE = resolve('results', 'replay.json');

/** Results of the previous run (for HNSW figures of a run that leaves HNSW out). */
async function previousResults(): Promise<{ date: string; results: SizeResult[] } | undefined> {
  if (!existsSync(RESULTS_FILE)) return undefined;
  return JSON.parse(await readFile(RESULTS_FILE, 'utf8'));
}

async function measure(
  size: number,
  templates: Template[],
  scratch: string,
  previous: { date: string; results: SizeResult[] } | undefined,
): Promise<SizeResult> {
  const embedder = new HashingEmbedder({ dimension: DIMENSION });
  const transitions = makeTransitions(templates, size, 1);
  const queries = makeTransitions(templates, QUERIES, 2);
  const flatDirectory = join(scratch, `flat-${size}`);
  const hnswDirectory = join(scratch, `hnsw-${size}`);

  log(`${size}: inserting into a flat buffer`);
  const flatBuild = await buildBuffer(flatDirectory, embedder, { type: 'flat' }, transitions);

  const queryVectors = queries.map((query) => {
    const vector = new Float32Array(DIMENSION);
    return { query, vector };
  });
  for (const entry of queryVectors) {
    await embedPhi(
      embedder,
      [{ stateText: entry.query.state.text, action: entry.query.action }],
      { state: 1, action: 1, instruction: 0 },
      entry.vector,
    );
  }

  log(`${size}: reloading the flat buffer`);
  let started = performance.now();
  const flat = await ReplayBuffer.open(flatDirectory, { embedder, readOnly: true });
  const flatReload = (performance.now() - started) / 1000;
  const heapMiB = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
  const flatTimes: number[] = [];
  // The k-th best exact score per query: HNSW hits at or above it count as recalled (ties
  // between equal phi vectors make ids an unfair test).
  const kthScore: number[] = [];
  for (const { query } of queryVectors) {
    const begin = performance.now();
    const hits = await flat.search({ state: query.state, action: query.action }, K);
    flatTimes.push(performance.now() - begin);
    kthScore.push(hits.at(-1)?.score ?? Number.NEGATIVE_INFINITY);
  }
  // The brute-force baseline scans the buffer's own typed-array vectors.
  const bruteTimes: number[] = [];
  for (const { vector } of queryVectors.slice(0, BRUTE_QUERIES)) {
    const begin = performance.now();
    flat.searchExactVector(vector, K);
    bruteTimes.push(performance.now() - begin);
  }
  await flat.close();
  await rm(flatDirectory, { recursive: true, force: true });

  if (!INDEXES.has('hnsw') || !HNSW_SIZES.has(size)) {
    const earlier = previous?.results.find((result) => result.transitions === size);
    if (!earlier) {
      throw new Error(
        `no earlier HNSW figures for ${size} transitions in ${RESULTS_FILE}: run with --indexes flat,hnsw.`,
      );
    }
    const bruteForce = latency(bruteTimes);
    return {
      ...earlier,
      transitions: size,
      insertPerSecond: { ...earlier.insertPerSecond, flat: flatBuild.insertPerSecond },
      flushSeconds: { ...earlier.flushSeconds, flat: flatBuild.flushSeconds },
      reloadSeconds: { ...earlier.reloadSeconds, flat: round(flatReload, 2) },
      search: { ...earlier.search, flat: latency(flatTimes), bruteForce },
      hnswSpeedupOverBruteForce: round(bruteForce.medianMs / earlier.search.hnsw.medianMs, 1),
      bytesPerTransition: {
        ...earlier.bytesPerTransition,
        records: Math.round(flatBuild.bytes['records.jsonl']! / size),
        vectors: Math.round(flatBuild.bytes['vectors.f32']! / size),
        flatIndex: Math.round(flatBuild.bytes['index.faiss']! / size),
      },
      heapMiBAfterReload: heapMiB,
      hnswFromEarlierRun: earlier.hnswFromEarlierRun ?? previous!.date,
    };
  }

  log(`${size}: inserting into an HNSW buffer`);
  const hnswBuild = await buildBuffer(hnswDirectory, embedder, HNSW, transitions);
  transitions.length = 0;
  log(`${size}: reloading the HNSW buffer`);
  started = performance.now();
  const hnsw = await ReplayBuffer.open(hnswDirectory, { embedder, readOnly: true });
  const hnswReload = (performance.now() - started) / 1000;
  const hnswTimes: number[] = [];
  let recalled = 0;
  for (const [position, { query }] of queryVectors.entries()) {
    const begin = performance.now();
    const hits = await hnsw.search({ state: query.state, action: query.action }, K);
    hnswTimes.push(performance.now() - begin);
    recalled += hits.filter((hit) => hit.score >= kthScore[position]! - 1e-5).length;
  }
  await hnsw.close();

  const search = {
    flat: latency(flatTimes),
    hnsw: latency(hnswTimes),
    bruteForce: latency(bruteTimes),
  };
  const result: SizeResult = {
    transitions: size,
    insertPerSecond: { flat: flatBuild.insertPerSecond, hnsw: hnswBuild.insertPerSecond },
    flushSeconds: { flat: flatBuild.flushSeconds, hnsw: hnswBuild.flushSeconds },
    reloadSeconds: { flat: round(flatReload, 2), hnsw: round(hnswReload, 2) },
    search,
    hnswRecallAt8: round(recalled / (QUERIES * K), 3),
    hnswSpeedupOverBruteForce: round(search.bruteForce.medianMs / search.hnsw.medianMs, 1),
    bytesPerTransition: {
      records: Math.round(flatBuild.bytes['records.jsonl']! / size),
      vectors: Math.round(flatBuild.bytes['vectors.f32']! / size),
      flatIndex: Math.round(flatBuild.bytes['index.faiss']! / size),
      hnswIndex: Math.round(hnswBuild.bytes['index.faiss']! / size),
    },
    heapMiBAfterReload: heapMiB,
  };
  await rm(flatDirectory, { recursive: true, force: true });
  await rm(hnswDirectory, { recursive: true, force: true });
  return result;
}

function log(message: string): void {
  process.stderr.write(`[replay] ${new Date().toISOString().slice(11, 19)} ${message}\n`);
}

function printTable(results: SizeResult[]): void {
  const rows = [
    ['transitions', ...results.map((r) => r.transitions.toLocaleString('en'))],
    ['insert/s flat', ...results.map((r) => String(r.insertPerSecond.flat))],
    ['insert/s hnsw', ...results.map((r) => String(r.insertPerSecond.hnsw))],
    [
      'top-8 flat median / p99 ms',
      ...results.map((r) => `${r.search.flat.medianMs} / ${r.search.flat.p99Ms}`),
    ],
    [
      'top-8 hnsw median / p99 ms',
      ...results.map((r) => `${r.search.hnsw.medianMs} / ${r.search.hnsw.p99Ms}`),
    ],
    [
      'top-8 brute force median / p99 ms',
      ...results.map((r) => `${r.search.bruteForce.medianMs} / ${r.search.bruteForce.p99Ms}`),
    ],
    ['hnsw speed-up over brute force', ...results.map((r) => `${r.hnswSpeedupOverBruteForce}x`)],
    ['hnsw recall@8', ...results.map((r) => String(r.hnswRecallAt8))],
    [
      'reload s flat / hnsw',
      ...results.map((r) => `${r.reloadSeconds.flat} / ${r.reloadSeconds.hnsw}`),
    ],
    [
      'bytes/transition records+vectors+index (flat | hnsw)',
      ...results.map((r) => {
        const b = r.bytesPerTransition;
        return `${b.records}+${b.vectors}+${b.flatIndex} | +${b.hnswIndex}`;
      }),
    ],
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
}

async function main(): Promise<void> {
  const templates = await loadTemplates();
  log(
    `${templates.length} expert steps as templates; dimension ${DIMENSION}; HNSW ${JSON.stringify(HNSW)}`,
  );
  const scratch = await mkdtemp(
    join(process.env.REPLAY_BENCH_DIR ?? tmpdir(), 'dreamgym-replay-bench-'),
  );
  const results: SizeResult[] = [];
  const previous = await previousResults();
  try {
    for (const size of SIZES) {
      results.push(await measure(size, templates, scratch, previous));
      printTable(results);
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const largest = results.at(-1)!;
  const targets = {
    size: largest.transitions,
    hnswMedianBelow5ms: largest.search.hnsw.medianMs < 5,
    hnswAtLeast20xFasterThanBruteForce: largest.hnswSpeedupOverBruteForce >= 20,
    reloadBelow10s: Math.max(largest.reloadSeconds.flat, largest.reloadSeconds.hnsw) < 10,
  };
  const report = {
    benchmark: 'replay',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    faiss:
      'faiss-node 0.5.1 on Debian libfaiss-dev 1.7.3, OMP_NUM_THREADS=' +
      (process.env.OMP_NUM_THREADS ?? '1'),
    config: {
      dimension: DIMENSION,
      embedder: new HashingEmbedder({ dimension: DIMENSION }).id,
      hnsw: HNSW,
      k: K,
      queries: QUERIES,
      bruteForceQueries: BRUTE_QUERIES,
      insertBatch: BATCH,
    },
    results,
    targets,
  };
  // npm runs the script in the benchmarks folder (the bundle itself lives in node_modules/.cache).
  const out = RESULTS_FILE;
  await mkdir(resolve('results'), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(JSON.stringify(targets));
  log(`wrote ${out}`);
}

await main();
