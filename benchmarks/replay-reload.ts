/**
 * Replay-buffer reload, side by side in one run: the same stored buffer (ALFWorld-like
 * transitions, HNSW tuned to recall 0.95, as `replay.ts` builds it) reopened read-only by the
 * core before the slot snapshot (`--ref`, taken from git) and by this one, in alternating
 * rounds, so that both see the same machine load. The old core ignores `slots.bin` and parses
 * every record of the log; this one reads the snapshot and parses only what follows it.
 *
 * Run: `npm run replay-reload -w dreamgym-benchmarks` after `npm run build`. Options:
 * `-- --size 1000000` (transitions), `--directory DIR` (keep the built buffer there and reuse
 * it on the next run; default a scratch directory, deleted), `--rounds 3`, `--ref REF`.
 * Writes benchmarks/results/replay-reload.json; progress goes to stderr.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { HashingEmbedder, ReplayBuffer } from '@dreamgym/core';
import { loadTemplates, makeTransitions } from './alfworld-like.js';
import { loadBaselineCore } from './baseline-core.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
/** The last commit before the slot snapshot (`slots.bin`). */
const BEFORE_SNAPSHOT = '7585590';
const SIZE = Number(option('size', '1000000'));
const ROUNDS = Number(option('rounds', '3'));
const REF = option('ref', BEFORE_SNAPSHOT);
const KEPT_DIRECTORY = option('directory', '');
const BATCH = 10_000;
const RESULTS_FILE = resolve('results', 'replay-reload.json');

function log(message: string): void {
  const load = loadavg()[0]!.toFixed(1);
  process.stderr.write(
    `[replay-reload] ${new Date().toISOString().slice(11, 19)} (load ${load}) ${message}\n`,
  );
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

async function build(directory: string, embedder: HashingEmbedder): Promise<void> {
  const transitions = makeTransitions(await loadTemplates(), SIZE, 1);
  const buffer = await ReplayBuffer.open(directory, {
    embedder,
    index: { type: 'hnsw', targetRecall: 0.95 },
  });
  const started = performance.now();
  for (let start = 0; start < transitions.length; start += BATCH) {
    await buffer.add(transitions.slice(start, start + BATCH));
    if ((start / BATCH) % 20 === 19) {
      const done = start + BATCH;
      const rate = done / ((performance.now() - started) / 1000);
      log(
        `built ${done}/${SIZE}, ${Math.round(rate)}/s, ETA ${Math.round((SIZE - done) / rate)} s`,
      );
    }
  }
  await buffer.close();
}

type Open = typeof ReplayBuffer.open;

/** Seconds to open `directory` read-only with `open`. */
async function timedReload(open: Open, directory: string, embedder: HashingEmbedder) {
  const started = performance.now();
  const buffer = await open(directory, { embedder, readOnly: true });
  const seconds = (performance.now() - started) / 1000;
  const size = buffer.size;
  await buffer.close();
  return { seconds, size };
}

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const embedder = new HashingEmbedder({ dimension: 256 });
  const directory = KEPT_DIRECTORY || (await mkdtemp(join(tmpdir(), 'dreamgym-replay-reload-')));
  const baseline = await loadBaselineCore(REF);
  try {
    if (existsSync(join(directory, 'manifest.json'))) log(`reusing the buffer in ${directory}`);
    else {
      log(`building ${SIZE} transitions into ${directory}`);
      await build(directory, embedder);
    }
    const files: Record<string, number> = {};
    for (const name of await readdir(directory))
      files[name] = (await stat(join(directory, name))).size;
    const before: number[] = [];
    const after: number[] = [];
    for (let index = 0; index < ROUNDS; index += 1) {
      // Alternating which goes first, so neither always meets a warm page cache.
      const order =
        index % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const);
      for (const which of order) {
        const open = which === 'before' ? baseline.core.ReplayBuffer.open : ReplayBuffer.open;
        const { seconds, size } = await timedReload(open as Open, directory, embedder);
        if (size !== SIZE && !KEPT_DIRECTORY)
          throw new Error(`reopened ${size} transitions, not ${SIZE}`);
        (which === 'before' ? before : after).push(round(seconds));
        log(
          `round ${index + 1}: ${which === 'before' ? baseline.commit : 'this core'} reopened ${size} transitions in ${seconds.toFixed(2)} s`,
        );
      }
    }
    const report = {
      benchmark: 'replay-reload',
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpu: cpus()[0]?.model,
        node: process.version,
        loadAverageAtStart: loadAtStart.map((value) => round(value)),
        loadAverageAtEnd: loadavg().map((value) => round(value)),
      },
      transitions: SIZE,
      index: 'hnsw, targetRecall 0.95',
      fileBytes: files,
      baselineCode: baseline.commit,
      beforeSeconds: before,
      afterSeconds: after,
      medianBeforeSeconds: median(before),
      medianAfterSeconds: median(after),
      speedUp: round(median(before) / median(after)),
      target: { reloadBelowSeconds: 10, met: median(after) < 10 },
    };
    await mkdir(resolve('results'), { recursive: true });
    await writeFile(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
    console.log(
      `reload of ${SIZE} transitions: ${report.medianBeforeSeconds} s (${baseline.commit}) -> ${report.medianAfterSeconds} s (this core), ${report.speedUp}x; wrote ${RESULTS_FILE}`,
    );
  } finally {
    await rm(baseline.directory, { recursive: true, force: true });
    if (!KEPT_DIRECTORY) await rm(directory, { recursive: true, force: true });
  }
}

await main();
