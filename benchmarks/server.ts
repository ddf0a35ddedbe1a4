/**
 * OpenEnv server benchmark: `dreamgym serve` on ALFWorld with the embedded experience model
 * (all offline expert transitions, HNSW index), driven by 256 concurrent WebSocket sessions
 * until 100k steps have been taken. Each session plays episodes back to back (`reset`, then
 * random admissible actions until `done`), one request in flight per session, as
 * openenv-core's `EnvClient` does.
 *
 * Measures, client side: steps/s, p50/p99 step latency (send to reply), protocol errors;
 * server side: RSS at the start (sessions connected, first episodes played) and at the end,
 * and the CPU time the server and the load generator used (the machine is shared: the load
 * average and the CPU left to other processes are recorded too).
 *
 * Two runs side by side: without replay write-back (the server's own cost, which RSS growth
 * checks for leaks) and with it (the default: every finished episode's transitions join the
 * buffer, which grows by design).
 *
 * Run: `npm run server -w dreamgym-benchmarks` (`-- --sessions 256 --steps 100000`). The
 * server runs from the CLI's sources (node with tsx's loader) against the built core, server and ALFWorld
 * packages, with OMP_NUM_THREADS=1. Writes benchmarks/results/server.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SeededRandom } from '@dreamgym/core';
import WebSocket from 'ws';

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] ? args[at + 1]! : fallback;
};
const SESSIONS = Number(option('sessions', '256'));
const STEPS = Number(option('steps', '100000'));
const WARMUP_STEPS = Number(option('warmup', String(Math.min(5000, Math.floor(STEPS / 10)))));
const MODES = option('modes', 'no-write-back,write-back').split(',');
const repository = resolve(import.meta.dirname, '..');
const dataDirectory = join(
  process.env.DREAMGYM_DATA_DIR ?? resolve(repository, '../shared/data'),
  'alfworld',
);

function percentile(sorted: Float64Array, share: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;
}

/** Resident set size of a process, in MiB, from /proc. */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
function machineJiffies(): { busy: number; total: number } {
  const values = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const idle = values[3]! + values[4]!;
  const total = values.reduce((sum, value) => sum + value, 0);
  return { busy: total - idle, total };
}

async function startServer(runDirectory: string, writeBack: boolean) {
  // One process (node with tsx's loader): its pid is the server's, and SIGTERM reaches it.
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(repository, 'packages', 'cli', 'src', 'bin.ts'),
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
      String(SESSIONS + 16),
      '--index',
      'hnsw',
      '--log-level',
      'warn',
      ...(writeBack ? [] : ['--no-write-back']),
    ],
    {
      cwd: repository,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, OMP_NUM_THREADS: '1' },
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
    for (const line of String(chunk).split('\n'))
      if (line.startsWith('alfworld:')) console.log(`  ${line}`);
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolveUrl(match[1]!);
    });
    child.once('exit', (code) =>
      reject(new Error(`dreamgym serve exited with ${code}\n${stderr}`)),
    );
  });
  return { child, url, serverPid: child.pid!, stderr: () => stderr };
}

interface Load {
  steps: number;
  episodes: number;
  errors: number;
  latencies: Float64Array;
}

/** Drives `SESSIONS` sessions until `STEPS` steps (after `WARMUP_STEPS` unmeasured ones). */
async function drive(
  url: string,
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
    Array.from({ length: SESSIONS }, async (_, index) => {
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

async function run(writeBack: boolean) {
  const runDirectory = await mkdtemp(join(tmpdir(), 'dreamgym-server-bench-'));
  console.log(
    `\n${writeBack ? 'with' : 'without'} replay write-back: starting dreamgym serve (all ALFWorld offline transitions, HNSW)...`,
  );
  const server = await startServer(runDirectory, writeBack);
  try {
    let rssStart = 0;
    let cpuStart = {
      server: 0,
      client: process.cpuUsage(),
      machine: machineJiffies(),
      load: loadavg(),
    };
    const progressStarted = performance.now();
    const result = await drive(
      server.url,
      () => {
        rssStart = rssMiB(server.serverPid);
        cpuStart = {
          server: cpuSeconds(server.serverPid),
          client: process.cpuUsage(),
          machine: machineJiffies(),
          load: loadavg(),
        };
        console.log(
          `  warm (${WARMUP_STEPS} steps): server RSS ${rssStart.toFixed(0)} MiB; measuring ${STEPS} steps...`,
        );
      },
      (steps) => {
        const elapsed = (performance.now() - progressStarted) / 1000;
        console.log(
          `  ${steps}/${STEPS} steps  (${elapsed.toFixed(0)} s)  server RSS ${rssMiB(server.serverPid).toFixed(0)} MiB`,
        );
      },
    );
    const rssEnd = rssMiB(server.serverPid);
    const machine = machineJiffies();
    const client = process.cpuUsage(cpuStart.client);
    const serverCpu = cpuSeconds(server.serverPid) - cpuStart.server;
    const clientCpu = (client.user + client.system) / 1e6;
    const machineBusy =
      (machine.busy - cpuStart.machine.busy) / (machine.total - cpuStart.machine.total);
    const cores = cpus().length;
    const sorted = result.latencies.slice(0, result.steps).sort();
    const status = (await (await fetch(`${server.url}/dreamgym/status`)).json()) as {
      episodes: { finished: number };
      iteration: number;
      curriculum: { poolSize: number; generatedTasks: number };
      buffer: { size: number; bySource: Record<string, number> };
      server: { errors: Record<string, number> };
    };
    const figures = {
      writeBack,
      sessions: SESSIONS,
      steps: result.steps,
      seconds: Math.round(result.seconds * 10) / 10,
      stepsPerSecond: Math.round(result.steps / result.seconds),
      p50Ms: Math.round(percentile(sorted, 0.5) * 100) / 100,
      p99Ms: Math.round(percentile(sorted, 0.99) * 100) / 100,
      maxMs: Math.round(sorted[sorted.length - 1]! * 100) / 100,
      rssStartMiB: Math.round(rssStart),
      rssEndMiB: Math.round(rssEnd),
      rssGrowth: Math.round(((rssEnd - rssStart) / rssStart) * 1000) / 1000,
      errors:
        result.errors + Object.values(status.server.errors).reduce((sum, count) => sum + count, 0),
      episodes: result.episodes,
      server: {
        episodesFinished: status.episodes.finished,
        iteration: status.iteration,
        poolSize: status.curriculum.poolSize,
        generatedTasks: status.curriculum.generatedTasks,
        bufferSize: status.buffer.size,
        bufferBySource: status.buffer.bySource,
      },
      cpu: {
        serverCoreSeconds: Math.round(serverCpu * 10) / 10,
        loadGeneratorCoreSeconds: Math.round(clientCpu * 10) / 10,
        machineBusyShare: Math.round(machineBusy * 1000) / 1000,
        /** Share of the machine's cores busy with processes other than this benchmark. */
        othersBusyShare:
          Math.round(
            Math.max(0, machineBusy - (serverCpu + clientCpu) / (result.seconds * cores)) * 1000,
          ) / 1000,
        loadAverage1mStart: Math.round(cpuStart.load[0]! * 100) / 100,
        loadAverage1mEnd: Math.round(loadavg()[0]! * 100) / 100,
      },
    };
    console.log(
      `  ${figures.stepsPerSecond} steps/s, p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, RSS ${figures.rssStartMiB} -> ${figures.rssEndMiB} MiB (${(figures.rssGrowth * 100).toFixed(1)}%), ${figures.errors} errors; other processes kept ${(figures.cpu.othersBusyShare * 100).toFixed(0)}% of the ${cores} cores busy`,
    );
    return figures;
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((resolveExit) => server.child.once('exit', resolveExit));
    await rm(runDirectory, { recursive: true, force: true });
  }
}

const runs = [];
for (const mode of MODES) runs.push(await run(mode === 'write-back'));
const primary = runs.find((figures) => !figures.writeBack) ?? runs[0]!;
const report = {
  benchmark: 'server',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    ompThreads: '1',
  },
  targets: { stepsPerSecond: 2000, p99Ms: 50, rssGrowth: 0.1 },
  // The protocol is 256 sessions and 100k steps; a smaller run says so.
  ...(SESSIONS < 256 || STEPS < 100_000
    ? {
        scale: `reduced: ${SESSIONS} sessions, ${STEPS} steps (the protocol: 256 sessions, 100000 steps)`,
      }
    : {}),
  targetsMet: {
    stepsPerSecond: primary.stepsPerSecond >= 2000,
    p99Ms: primary.p99Ms < 50,
    rssGrowth: primary.rssGrowth < 0.1,
  },
  sessions: primary.sessions,
  stepsPerSecond: primary.stepsPerSecond,
  p50Ms: primary.p50Ms,
  p99Ms: primary.p99Ms,
  rssStartMiB: primary.rssStartMiB,
  rssEndMiB: primary.rssEndMiB,
  errors: primary.errors,
  runs,
};
await writeFile(
  join(repository, 'benchmarks', 'results', 'server.json'),
  `${JSON.stringify(report, null, 2)}\n`,
);
console.log('\nwrote benchmarks/results/server.json');
