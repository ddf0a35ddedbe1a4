/**
 * OpenEnv server benchmark: `dreamgym serve` on ALFWorld with the embedded experience model
 * (all offline expert transitions, HNSW index) and replay write-back on, driven by N
 * concurrent WebSocket sessions until a number of steps have been taken. Each session plays
 * episodes back to back (`reset`, then random admissible actions until `done`), one request
 * in flight per session, as openenv-core's `EnvClient` does.
 *
 * Measures, client side: steps/s, p50/p99 step latency (send to reply), protocol errors;
 * server side: RSS at the start (sessions connected, first episodes played) and at the end,
 * each just after a full GC in every server process (through their inspectors), so that RSS
 * growth is memory kept, not the phase of V8's collection cycle;
 * the CPU time of the server process (all its threads) per step, and, from the server's own
 * counters (`GET /dreamgym/status`), where a step's time goes: the environment step (of which
 * the replay-buffer search) and the write-backs; the rest is the protocol (WebSocket frames,
 * JSON) and the runtime. The machine is shared: the load generator runs on it too, and the
 * load average and the CPU left to other processes are recorded.
 *
 * Runs, side by side (the default plan):
 *   1. the cost of a step before and after batching: variants baseline (every finished
 *      episode written back at once, every step searching the buffer: the server before
 *      issue 33, `--write-back-batch 1 --no-retrieval-cache`) and batched (the defaults), one
 *      process, 64 and 256 sessions, buffer unbounded;
 *   2. workers: batched, `--workers 1` and `2`, 64 and 256 sessions, with `--buffer-cap`
 *      (offline transitions + 1,000, reached before the measurement starts, so RSS should
 *      stay flat).
 * Or one matrix of your own: --variants baseline,batched --workers 1,2 --sessions 64,256
 * --buffer-cap N (0: unbounded) [--profile] [--heap-snapshots DIR]. --steps 20000 measured steps per run. A change
 * in the CLI side by side: --variants before,batched --before-ref REF. --out FILE writes the
 * results there instead.
 * 3. (default plan) the CPU split by part from V8 CPU profiles of all the server's processes:
 *    baseline and batched in one process, and batched with 2 workers, 64 sessions.
 *
 * Run: `npm run server -w dreamgym-benchmarks` (`-- --sessions 256 --steps 100000`). The
 * server runs from the CLI's sources (node with tsx's loader) against the built core, server and ALFWorld
 * packages, with OMP_NUM_THREADS=1. Writes benchmarks/results/server.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SeededRandom } from '@dreamgym/core';
import WebSocket from 'ws';
import { sourcesAt } from './baseline-core.js';
import {
  collectGarbage,
  cpuSeconds,
  heapUsedMiB,
  listeningUrl,
  machineJiffies,
  profileShares,
  round,
  rssMiB,
  writeHeapSnapshot,
} from './server-measurement.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const list = (name: string, fallback: string) => option(name, fallback).split(',');
/** The default plan unless a matrix flag is given. */
const CUSTOM = ['variants', 'workers', 'sessions', 'buffer-cap'].some((name) =>
  args.includes(`--${name}`),
);
const SESSION_COUNTS = list('sessions', '64,256').map(Number);
/** ALFWorld's offline transitions (30,795) + 1,000 written back. */
const DEFAULT_CAP = 31_795;
const BUFFER_CAP = Number(option('buffer-cap', '0'));
const STEPS = Number(option('steps', '20000'));
const WARMUP_STEPS = Number(option('warmup', String(Math.min(5000, Math.floor(STEPS / 10)))));
const VARIANTS = list('variants', 'baseline,batched');
/** Where to write heap snapshots of the serving process at the start and the end of each run. */
const HEAP_SNAPSHOTS = option('heap-snapshots', '');
if (HEAP_SNAPSHOTS) await mkdir(HEAP_SNAPSHOTS, { recursive: true });
/** `--profile`: the custom matrix's runs write V8 CPU profiles, and their CPU is split by part. */
const PROFILE = args.includes('--profile');
const WORKER_COUNTS = list('workers', '1,2').map(Number);
/**
 * `--before-ref REF`: the variant `before` is the batched server run from the CLI's sources at
 * that commit (the packages it imports are this checkout's builds), for a change in the CLI
 * measured side by side.
 */
const BEFORE_REF = option('before-ref', '');
/**
 * `--cli FILE`: run the server from this built CLI entry (the bundle benchmarks/gpu/server-cores.sh
 * makes, for a machine with more cores and no node_modules) instead of the CLI's sources through
 * tsx.
 */
const CLI = option('cli', '');
/** `--out FILE`: where the results go (default benchmarks/results/server.json). */
const OUT = option('out', '');
for (const variant of VARIANTS) {
  if (!['baseline', 'batched', 'before'].includes(variant))
    throw new Error(`--variants: "${variant}" is not baseline, batched or before.`);
  if (variant === 'before' && !BEFORE_REF)
    throw new Error('--variants before needs --before-ref REF (the commit to run the CLI from).');
}
const repository = resolve(import.meta.dirname, '..');
const beforeCli = BEFORE_REF
  ? (await sourcesAt(BEFORE_REF, 'packages/cli', '--before-ref')).directory
  : undefined;

const dataDirectory = join(
  process.env.DREAMGYM_DATA_DIR ?? resolve(repository, '../shared/data'),
  'alfworld',
);

function percentile(sorted: Float64Array, share: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;
}

interface RunPlan {
  variant: string;
  workers: number;
  sessions: number;
  /** Replay buffer capacity (0: unbounded). */
  bufferCap: number;
  /** Write V8 CPU profiles of the server's processes and split its CPU by part. */
  profile?: boolean;
}

async function startServer(runDirectory: string, plan: RunPlan, profiles: string | undefined) {
  // One process (node with tsx's loader): its pid is the server's, and SIGTERM reaches it.
  const child: ChildProcess = spawn(
    process.execPath,
    [
      // Worker processes inherit the options: each writes its own profile there too, and
      // opens its own inspector (a free port), through which memory is measured after a GC.
      ...(profiles ? ['--cpu-prof', '--cpu-prof-dir', profiles] : []),
      '--inspect=127.0.0.1:0',
      ...(CLI && plan.variant !== 'before'
        ? [resolve(CLI)]
        : [
            '--import',
            'tsx',
            join(
              plan.variant === 'before' ? beforeCli! : repository,
              'packages',
              'cli',
              'src',
              'bin.ts',
            ),
          ]),
      'serve',
      '--domain',
      'alfworld',
      '--data',
      dataDirectory,
      '--port',
      '0',
      '--run-dir',
      runDirectory,
      '--max-sessions',
      String(plan.sessions + 16),
      '--index',
      'hnsw',
      '--log-level',
      'warn',
      ...(plan.variant === 'baseline' ? ['--write-back-batch', '1', '--no-retrieval-cache'] : []),
      ...(plan.workers > 1 ? ['--workers', String(plan.workers)] : []),
      ...(plan.bufferCap > 0 ? ['--buffer-cap', String(plan.bufferCap)] : []),
    ],
    {
      cwd: repository,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, OMP_NUM_THREADS: '1' },
    },
  );
  let stderr = '';
  /** The inspectors of the serving process and its workers (their stderr is the server's). */
  const inspectors: string[] = [];
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
    for (const line of String(chunk).split('\n')) {
      if (line.startsWith('alfworld:')) console.log(`  ${line}`);
      const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(line);
      if (inspector) inspectors.push(inspector[1]!);
    }
  });
  const url = await listeningUrl(child, 'dreamgym serve', () => stderr);
  return { child, url, serverPid: child.pid!, stderr: () => stderr, inspectors };
}

interface Load {
  steps: number;
  episodes: number;
  errors: number;
  latencies: Float64Array;
}

/** Drives `sessionCount` sessions until `STEPS` steps (after `WARMUP_STEPS` unmeasured ones). */
async function drive(
  url: string,
  sessionCount: number,
  onWarm: () => void,
  onProgress: (steps: number) => void,
): Promise<Load & { seconds: number }> {
  const latencies = new Float64Array(STEPS);
  const load = { steps: 0, warm: 0, episodes: 0, errors: 0 };
  let started = 0;
  let warmed = false;
  let finished: () => void;
  const done = new Promise<void>((resolveDone) => {
    finished = resolveDone;
  });
  const sockets: WebSocket[] = [];
  await Promise.all(
    Array.from({ length: sessionCount }, async (_, index) => {
      const random = new SeededRandom(index + 1);
      const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`);
      sockets.push(socket);
      await new Promise((resolveOpen, reject) => {
        socket.once('open', resolveOpen);
        socket.once('error', reject);
      });
      let sentAt = 0;
      let stepping = false;
      const send = (message: unknown, isStep: boolean) => {
        stepping = isStep;
        sentAt = performance.now();
        socket.send(JSON.stringify(message));
      };
      socket.on('message', (data) => {
        const elapsed = performance.now() - sentAt;
        const reply = JSON.parse(data.toString()) as {
          type: string;
          data: { done?: boolean; observation?: { actions: string[] } };
        };
        if (reply.type === 'error') load.errors += 1;
        if (stepping && reply.type === 'observation') {
          if (!warmed) {
            load.warm += 1;
            if (load.warm >= WARMUP_STEPS) {
              warmed = true;
              started = performance.now();
              onWarm();
            }
          } else if (load.steps < STEPS) {
            latencies[load.steps] = elapsed;
            load.steps += 1;
            if (load.steps % 10_000 === 0) onProgress(load.steps);
            if (load.steps === STEPS) finished();
          }
        }
        if (load.steps >= STEPS) return;
        if (reply.type !== 'observation' || reply.data.done) {
          if (reply.data.done) load.episodes += 1;
          send({ type: 'reset', data: {} }, false);
        } else {
          const actions = reply.data.observation!.actions;
          send(
            {
              type: 'step',
              data: { action: actions.length > 0 ? random.choice(actions) : 'look' },
            },
            true,
          );
        }
      });
      send({ type: 'reset', data: {} }, false);
    }),
  );
  await done;
  const seconds = (performance.now() - started) / 1000;
  for (const socket of sockets) socket.close();
  return { steps: load.steps, episodes: load.episodes, errors: load.errors, latencies, seconds };
}

/** A buffer's vector index as the status reports it. */
type IndexSettings = { type: string; m?: number; efSearch?: number };

/** The server's own counters (`GET /dreamgym/status`) that split a step's time. */
interface ServerStatus {
  episodes: { finished: number };
  iteration: number;
  curriculum: { poolSize: number; generatedTasks: number };
  buffer: {
    size: number;
    bySource: Record<string, number>;
    written: number;
    writeBack: {
      batches: number;
      transitions: number;
      milliseconds: number;
      addMilliseconds: number;
    };
    retrieval: { lookups: number; hits: number; searchMilliseconds: number };
    index?: IndexSettings;
  };
  server: { errors: Record<string, number>; steps: number; stepMilliseconds: number };
  workers?: {
    restarts: number;
    cpuMilliseconds: number;
    applyMilliseconds: number;
    retrieval: { lookups: number; hits: number; searchMilliseconds: number };
    workers: {
      index: number;
      rssBytes: number;
      cpuMilliseconds: number;
      searchIndex?: IndexSettings;
    }[];
  };
}

/**
 * How unevenly the work fell on the workers over the window: the largest distance of one
 * worker's CPU milliseconds from their mean, as a share of the mean (null without workers).
 */
function workerSpread(before: ServerStatus, after: ServerStatus): number | null {
  const start = new Map(
    (before.workers?.workers ?? []).map((worker) => [worker.index, worker.cpuMilliseconds]),
  );
  const used = (after.workers?.workers ?? []).map(
    (worker) => worker.cpuMilliseconds - (start.get(worker.index) ?? 0),
  );
  if (used.length < 2) return null;
  const mean = used.reduce((sum, each) => sum + each, 0) / used.length;
  return round(Math.max(...used.map((each) => Math.abs(each - mean))) / mean);
}

async function serverStatus(url: string): Promise<ServerStatus> {
  return (await (await fetch(`${url}/dreamgym/status`)).json()) as ServerStatus;
}

async function run(plan: RunPlan) {
  const runDirectory = await mkdtemp(join(tmpdir(), 'dreamgym-server-bench-'));
  console.log(
    `\n${plan.variant}, ${plan.workers} worker(s), ${plan.sessions} sessions, buffer cap ${plan.bufferCap || 'none'}: starting dreamgym serve (all ALFWorld offline transitions, HNSW, write-back)...`,
  );
  const profiles = plan.profile ? join(runDirectory, 'profiles') : undefined;
  const server = await startServer(runDirectory, plan, profiles);
  let figures: Awaited<ReturnType<typeof measure>> | undefined;
  try {
    figures = await measure(plan, server);
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((resolveExit) => server.child.once('exit', resolveExit));
  }
  try {
    if (!profiles) return figures;
    // Profiles are written when the processes exit. The CPU per step, split by the shares.
    const shares = await profileShares(profiles);
    const split = Object.fromEntries(
      Object.entries(shares).map(([part, share]) => [part, round(share * figures.coreMsPerStep)]),
    );
    console.log(`  profile, core-ms per step by part: ${JSON.stringify(split)}`);
    return { ...figures, profile: { shares, coreMsPerStep: split } };
  } finally {
    await rm(runDirectory, { recursive: true, force: true });
  }
}

async function measure(plan: RunPlan, server: Awaited<ReturnType<typeof startServer>>) {
  const sessionCount = plan.sessions;
  const snapshotFile = (when: string) =>
    join(
      HEAP_SNAPSHOTS,
      `${plan.variant}-${plan.workers}w-${sessionCount}s-${plan.bufferCap}-${when}.heapsnapshot`,
    );
  {
    let rssStart = 0;
    let heapStart = 0;
    let cpuStart = {
      server: 0,
      client: process.cpuUsage(),
      machine: machineJiffies(),
      load: loadavg(),
    };
    const progressStarted = performance.now();
    let statusStart: Promise<ServerStatus> | undefined;
    const result = await drive(
      server.url,
      sessionCount,
      () => {
        // After a full GC: the memory in use when the measurement starts.
        statusStart = collectGarbage(server.inspectors).then(async () => {
          rssStart = rssMiB(server.serverPid);
          heapStart = await heapUsedMiB(server.url);
          if (HEAP_SNAPSHOTS) await writeHeapSnapshot(server.inspectors[0]!, snapshotFile('start'));
          return serverStatus(server.url);
        });
        cpuStart = {
          server: cpuSeconds(server.serverPid),
          client: process.cpuUsage(),
          machine: machineJiffies(),
          load: loadavg(),
        };
        console.log(`  warm (${WARMUP_STEPS} steps): measuring ${STEPS} steps...`);
      },
      (steps) => {
        const elapsed = (performance.now() - progressStarted) / 1000;
        const rss = rssMiB(server.serverPid);
        // The V8 heap beside RSS: which of the two a growth comes from.
        void heapUsedMiB(server.url).then((heap) =>
          console.log(
            `  ${steps}/${STEPS} steps  (${elapsed.toFixed(0)} s)  server RSS ${rss.toFixed(0)} MiB, V8 heap ${heap.toFixed(0)} MiB`,
          ),
        );
      },
    );
    const machine = machineJiffies();
    const client = process.cpuUsage(cpuStart.client);
    const serverCpu = cpuSeconds(server.serverPid) - cpuStart.server;
    const rssEndBeforeGc = rssMiB(server.serverPid);
    await collectGarbage(server.inspectors);
    const serverRssEnd = rssMiB(server.serverPid);
    const heapEnd = await heapUsedMiB(server.url);
    if (HEAP_SNAPSHOTS) await writeHeapSnapshot(server.inspectors[0]!, snapshotFile('end'));
    const clientCpu = (client.user + client.system) / 1e6;
    const machineBusy =
      (machine.busy - cpuStart.machine.busy) / (machine.total - cpuStart.machine.total);
    const cores = cpus().length;
    const sorted = result.latencies.slice(0, result.steps).sort();
    const status = await serverStatus(server.url);
    const before = await statusStart!;
    // The server's counters over the measured window (steps there include HTTP ones: none here).
    const served = status.server.steps - before.server.steps;
    const perStep = (milliseconds: number) => round(milliseconds / served);
    // With workers, sessions search the workers' replicas: their retrieval figures count.
    const retrieval = (figures: ServerStatus) =>
      figures.workers?.retrieval ?? figures.buffer.retrieval;
    const lookups = retrieval(status).lookups - retrieval(before).lookups;
    const workerCpuMs =
      (status.workers?.cpuMilliseconds ?? 0) - (before.workers?.cpuMilliseconds ?? 0);
    const workersRss = (figures: ServerStatus) =>
      (figures.workers?.workers ?? []).reduce((sum, each) => sum + each.rssBytes, 0) / 2 ** 20;
    const rssStartAll = rssStart + workersRss(before);
    const rssEnd = serverRssEnd + workersRss(status);
    // All the server's processes: the serving process and its workers.
    const coreMsPerStep = round((serverCpu * 1000 + workerCpuMs) / result.steps);
    const parts = {
      servingProcessCpuMs: round((serverCpu * 1000) / result.steps),
      ...(status.workers ? { workerProcessesCpuMs: round(workerCpuMs / result.steps) } : {}),
      environmentStepMs: perStep(status.server.stepMilliseconds - before.server.stepMilliseconds),
      retrievalSearchMs: perStep(
        retrieval(status).searchMilliseconds - retrieval(before).searchMilliseconds,
      ),
      writeBackMs: perStep(
        status.buffer.writeBack.milliseconds - before.buffer.writeBack.milliseconds,
      ),
      writeBackAddMs: perStep(
        status.buffer.writeBack.addMilliseconds - before.buffer.writeBack.addMilliseconds,
      ),
      ...(status.workers
        ? {
            replicaApplyMs: perStep(
              status.workers.applyMilliseconds - (before.workers?.applyMilliseconds ?? 0),
            ),
          }
        : {}),
    };
    const figures = {
      variant: plan.variant,
      workers: plan.workers,
      bufferCap: plan.bufferCap || null,
      writeBack: true,
      sessions: sessionCount,
      steps: result.steps,
      seconds: Math.round(result.seconds * 10) / 10,
      stepsPerSecond: Math.round(result.steps / result.seconds),
      p50Ms: Math.round(percentile(sorted, 0.5) * 100) / 100,
      p99Ms: Math.round(percentile(sorted, 0.99) * 100) / 100,
      maxMs: Math.round(sorted[sorted.length - 1]! * 100) / 100,
      rssStartMiB: Math.round(rssStartAll),
      rssEndMiB: Math.round(rssEnd),
      rssGrowth: Math.round(((rssEnd - rssStartAll) / rssStartAll) * 1000) / 1000,
      /** The serving process' RSS at the end before the GC: where V8's heap cycle had it. */
      servingRssEndBeforeGcMiB: Math.round(rssEndBeforeGc),
      /** The serving process' V8 heap in use after the GCs, at the start and at the end. */
      servingHeapStartMiB: Math.round(heapStart),
      servingHeapEndMiB: Math.round(heapEnd),
      errors:
        result.errors + Object.values(status.server.errors).reduce((sum, count) => sum + count, 0),
      coreMsPerStep,
      /** The workers' CPU over the window: the largest distance from their mean, a share of it. */
      workerSpread: workerSpread(before, status),
      /** The index each buffer that sessions searched ended with (each replica's, with workers). */
      searchIndexes: status.workers
        ? status.workers.workers.map((worker) => worker.searchIndex)
        : [status.buffer.index],
      /**
       * Per step: CPU of the serving process and of the workers (from the kernel and the
       * workers' process.cpuUsage), and milliseconds timed by the server around each part.
       * Those are wall time on an event loop that serves many sessions: where a part awaits
       * (the environment step with workers: the round trip; the write-back: its log write),
       * other sessions' work runs meanwhile and is counted too. The buffer search and the
       * buffer add (the embedding and index insert of write-backs, in the serving process and
       * in each replica) run synchronously: their figures are CPU.
       */
      parts: {
        ...parts,
        retrievalLookups: lookups,
        retrievalCacheHitShare: round(
          (retrieval(status).hits - retrieval(before).hits) / Math.max(1, lookups),
        ),
        writeBackBatches: status.buffer.writeBack.batches - before.buffer.writeBack.batches,
      },
      episodes: result.episodes,
      server: {
        episodesFinished: status.episodes.finished,
        iteration: status.iteration,
        poolSize: status.curriculum.poolSize,
        generatedTasks: status.curriculum.generatedTasks,
        bufferSize: status.buffer.size,
        bufferBySource: status.buffer.bySource,
        transitionsWritten: status.buffer.written,
        ...(status.workers ? { workerRestarts: status.workers.restarts } : {}),
      },
      cpu: {
        serverCoreSeconds: Math.round((serverCpu + workerCpuMs / 1000) * 10) / 10,
        loadGeneratorCoreSeconds: Math.round(clientCpu * 10) / 10,
        machineBusyShare: Math.round(machineBusy * 1000) / 1000,
        /** Share of the machine's cores busy with processes other than this benchmark. */
        othersBusyShare:
          Math.round(
            Math.max(
              0,
              machineBusy - (serverCpu + workerCpuMs / 1000 + clientCpu) / (result.seconds * cores),
            ) * 1000,
          ) / 1000,
        loadAverage1mStart: Math.round(cpuStart.load[0]! * 100) / 100,
        loadAverage1mEnd: Math.round(loadavg()[0]! * 100) / 100,
      },
    };
    console.log(
      `  ${coreMsPerStep} core-ms/step (serving process ${parts.servingProcessCpuMs}${'workerProcessesCpuMs' in parts ? `, workers ${parts.workerProcessesCpuMs}` : ''}); per step, wall: environment step ${parts.environmentStepMs}, buffer search ${parts.retrievalSearchMs}, write-back ${parts.writeBackMs} (buffer add ${parts.writeBackAddMs}${'replicaApplyMs' in parts ? `, replicas ${parts.replicaApplyMs}` : ''}); cache hits ${(figures.parts.retrievalCacheHitShare * 100).toFixed(0)}%${figures.workerSpread === null ? '' : `; workers' CPU within ${(figures.workerSpread * 100).toFixed(0)}% of their mean`}`,
    );
    console.log(
      `  ${figures.stepsPerSecond} steps/s, p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, RSS ${figures.rssStartMiB} -> ${figures.rssEndMiB} MiB (${(figures.rssGrowth * 100).toFixed(1)}%), ${figures.errors} errors; other processes kept ${(figures.cpu.othersBusyShare * 100).toFixed(0)}% of the ${cores} cores busy`,
    );
    return figures;
  }
}

const runs = [];
const plans: RunPlan[] = [];
if (CUSTOM) {
  for (const sessions of SESSION_COUNTS)
    for (const workers of WORKER_COUNTS)
      for (const variant of VARIANTS)
        plans.push({ variant, workers, sessions, bufferCap: BUFFER_CAP, profile: PROFILE });
} else {
  for (const sessions of [64, 256])
    for (const variant of ['baseline', 'batched'])
      plans.push({ variant, workers: 1, sessions, bufferCap: 0 });
  for (const sessions of [64, 256])
    for (const workers of [1, 2])
      plans.push({ variant: 'batched', workers, sessions, bufferCap: DEFAULT_CAP });
  // The CPU split by part, from profiles (which cost some CPU themselves): before and after.
  for (const variant of ['baseline', 'batched'])
    plans.push({ variant, workers: 1, sessions: 64, bufferCap: 0, profile: true });
  plans.push({
    variant: 'batched',
    workers: 2,
    sessions: 64,
    bufferCap: DEFAULT_CAP,
    profile: true,
  });
}
for (const plan of plans) runs.push(await run(plan));
const cores = cpus().length;
const report = {
  benchmark: 'server',
  date: new Date().toISOString(),
  machine: {
    cpus: cores,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    ompThreads: '1',
    note: `${cores} cores shared by the server (all its threads), the load generator (this process) and whatever else runs on the machine (see each run's cpu.othersBusyShare): steps/s and latencies are bounded by that, not by the server alone; coreMsPerStep (the server process's CPU time over the steps) is the figure that carries over.`,
  },
  targets: { coreMsPerStep: 0.5, rssGrowth: 0.1, workerSpread: 0.1, errors: 0 },
  protocol: {
    steps: STEPS,
    warmupSteps: WARMUP_STEPS,
    writeBack: true,
    plan: CUSTOM ? 'custom' : 'default',
  },
  targetsMet: Object.fromEntries(
    runs
      .filter((figures) => figures.variant === 'batched')
      .map((figures) => [
        `${figures.variant}-${figures.workers}w-${figures.sessions}s-${figures.bufferCap ? 'cap' : 'nocap'}${'profile' in figures ? '-profiled' : ''}`,
        {
          coreMsPerStep: figures.coreMsPerStep <= 0.5,
          // RSS stays flat only where the buffer is capped (unbounded, it grows by design).
          ...(figures.bufferCap ? { rssGrowth: figures.rssGrowth < 0.1 } : {}),
          ...(figures.workerSpread === null ? {} : { workerSpread: figures.workerSpread <= 0.1 }),
          errors: figures.errors === 0,
        },
      ]),
  ),
  runs,
};
const out = OUT ? resolve(OUT) : join(repository, 'benchmarks', 'results', 'server.json');
await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
if (beforeCli) await rm(beforeCli, { recursive: true, force: true });
console.log(`\nwrote ${out}`);
