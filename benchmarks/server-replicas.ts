/**
 * Replicas sharing one buffer: two `dreamgym serve --domain alfworld --shared-buffer DIR`
 * processes on this machine over one LanceDB folder, as two machines behind a load balancer
 * would run. N WebSocket sessions on each play episodes back to back (random admissible
 * actions, one request in flight per session) for a while; then the write-backs are left to
 * settle and each replica's own figures are read (`GET /dreamgym/status`, `sharedBuffer`).
 *
 * Measures: the time from a write-back batch reaching one replica's buffer to reaching the
 * other's (p50 / p99 / max over every batch; the replicas' clocks are this machine's one),
 * with the default poll (500 ms) unless `--poll-ms`; that every transition one wrote back was
 * taken by the other once (pulled = written, buffers the same size); steps/s.
 * A finished episode waits up to `writeBackBatch.milliseconds` (250) for its batch on top.
 *
 * Run: `DREAMGYM_DATA_DIR=../shared/data npm run server-replicas -w dreamgym-benchmarks`
 * (`-- --sessions 8 --seconds 60 --poll-ms 500 --offline-limit 5000`). LanceDB comes from
 * packages/server/test/lancedb (`bash scripts/setup.sh lancedb`): the replicas run in that
 * folder, as in a project that installed it. Writes benchmarks/results/server-replicas.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SeededRandom } from '@dreamgym/core';
import WebSocket from 'ws';
import type { SharedBufferStats } from '../packages/server/src/index.js';
import { listeningUrl } from './server-measurement.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const SESSIONS = Number(option('sessions', '8'));
const SECONDS = Number(option('seconds', '60'));
const POLL_MS = option('poll-ms', '');
const OFFLINE_LIMIT = option('offline-limit', '5000');
const repository = resolve(import.meta.dirname, '..');
const project = join(repository, 'packages', 'server', 'test', 'lancedb');
const dataDirectory = join(
  process.env.DREAMGYM_DATA_DIR ?? resolve(repository, '../shared/data'),
  'alfworld',
);

interface Status {
  steps: number;
  episodes: { finished: number };
  buffer: { size: number; written: number };
  sharedBuffer: SharedBufferStats;
}

async function startReplica(name: string, directory: string) {
  const tsx = pathToFileURL(join(repository, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      tsx,
      join(repository, 'packages', 'cli', 'src', 'bin.ts'),
      'serve',
      '--domain',
      'alfworld',
      '--data',
      dataDirectory,
      '--offline-limit',
      OFFLINE_LIMIT,
      '--port',
      '0',
      '--run-dir',
      join(directory, `run-${name}`),
      '--max-sessions',
      String(SESSIONS + 8),
      '--log-level',
      'warn',
      '--shared-buffer',
      join(directory, 'shared'),
      '--replica-id',
      name,
      ...(POLL_MS ? ['--shared-poll-ms', POLL_MS] : []),
    ],
    {
      cwd: project,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, OMP_NUM_THREADS: '1' },
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const url = await listeningUrl(child, `replica ${name}`, () => stderr);
  return { child, url, stderr: () => stderr };
}

async function status(url: string): Promise<Status> {
  return (await (await fetch(`${url}/dreamgym/status`)).json()) as Status;
}

/** One session playing random episodes until `until` (performance.now()); its step count. */
async function playUntil(url: string, until: number, seed: number): Promise<number> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`);
  await new Promise((opened, failed) => {
    socket.once('open', opened);
    socket.once('error', failed);
  });
  const random = new SeededRandom(seed);
  type Reply = { type: string; data: { done: boolean; observation: { actions: string[] } } };
  const request = (message: unknown) =>
    new Promise<Reply>((replied) => {
      socket.once('message', (data) => replied(JSON.parse(String(data)) as Reply));
      socket.send(JSON.stringify(message));
    });
  let steps = 0;
  while (performance.now() < until) {
    let reply = await request({ type: 'reset', data: {} });
    while (reply.type === 'observation' && !reply.data.done) {
      const actions = reply.data.observation.actions;
      reply = await request({
        type: 'step',
        data: { action: actions.length > 0 ? random.choice(actions) : 'look' },
      });
      steps += 1;
    }
  }
  socket.close();
  return steps;
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((stopped) => {
    child.once('exit', () => stopped());
    child.kill('SIGTERM');
  });
}

const directory = await mkdtemp(join(tmpdir(), 'dreamgym-replicas-'));
const startedAt = new Date().toISOString();
console.log(
  `two replicas, ${SESSIONS} sessions each, ${SECONDS} s, poll ${POLL_MS || 'default (500)'} ms, offline ${OFFLINE_LIMIT}`,
);
const replicas = await Promise.all([startReplica('a', directory), startReplica('b', directory)]);
try {
  const [a, b] = replicas;
  const until = performance.now() + SECONDS * 1000;
  const load0 = loadavg()[0]!;
  const began = performance.now();
  const steps = await Promise.all(
    [a!, b!].flatMap((replica, side) =>
      Array.from({ length: SESSIONS }, (_, index) =>
        playUntil(replica.url, until, 1000 * side + index),
      ),
    ),
  );
  const seconds = (performance.now() - began) / 1000;
  // Settled: nothing waits to be appended, and each has taken everything the other wrote.
  let settled: [Status, Status] | undefined;
  for (let tries = 0; tries < 100 && !settled; tries += 1) {
    const pair = (await Promise.all([status(a!.url), status(b!.url)])) as [Status, Status];
    const [sa, sb] = pair;
    if (
      sa.sharedBuffer.pushPending + sb.sharedBuffer.pushPending === 0 &&
      sa.sharedBuffer.pulled.transitions === sb.buffer.written &&
      sb.sharedBuffer.pulled.transitions === sa.buffer.written
    ) {
      settled = pair;
    } else {
      await new Promise((wait) => setTimeout(wait, 200));
    }
  }
  const [sa, sb] = settled ?? [await status(a!.url), await status(b!.url)];
  const totalSteps = steps.reduce((sum, each) => sum + each, 0);
  const figures = (mine: Status, other: Status) => ({
    episodes: mine.episodes.finished,
    written: mine.buffer.written,
    pushedBatches: mine.sharedBuffer.pushed.batches,
    pulledTransitions: mine.sharedBuffer.pulled.transitions,
    othersWritten: other.buffer.written,
    bufferSize: mine.buffer.size,
    lagMilliseconds: mine.sharedBuffer.lagMilliseconds,
    compactions: mine.sharedBuffer.compactions,
    errors: mine.sharedBuffer.errors,
  });
  const result = {
    startedAt,
    machine: { cores: cpus().length, loadAverageAtStart: load0, loadAverageAtEnd: loadavg()[0] },
    settings: {
      sessionsPerReplica: SESSIONS,
      seconds: SECONDS,
      pollMilliseconds: POLL_MS ? Number(POLL_MS) : 500,
      offlineLimit: Number(OFFLINE_LIMIT),
    },
    stepsPerSecond: Math.round(totalSteps / seconds),
    settled: settled !== undefined,
    sameBuffers: sa.buffer.size === sb.buffer.size,
    a: figures(sa, sb),
    b: figures(sb, sa),
  };
  console.log(JSON.stringify(result, null, 2));
  await writeFile(
    join(import.meta.dirname, 'results', 'server-replicas.json'),
    `${JSON.stringify(result, null, 2)}\n`,
  );
} finally {
  await Promise.all(replicas.map((replica) => stop(replica.child)));
  await rm(directory, { recursive: true, force: true });
}
