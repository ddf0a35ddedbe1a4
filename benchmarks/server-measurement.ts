/**
 * What `server.ts` reads of the server's processes: RSS and CPU time from /proc, the machine's
 * busy share, where the CPU went by part from V8 CPU profiles (`--cpu-prof`), and, through
 * their inspectors (`--inspect`), full GCs and heap snapshots.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import WebSocket from 'ws';

/** `value` rounded to `digits` decimals (3 unless given). */
export const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Resident set size of a process, in MiB, from /proc. */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** CPU seconds (user + system) a process has used, from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
export function machineJiffies(): { busy: number; total: number } {
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

/** Frames that name a part of a step, in the order a sample is given to the first that matches. */
const PROFILE_PARTS: [part: string, frames: RegExp][] = [
  // The replay buffer's top-k: embedding the query, the faiss search, picking the members.
  ['bufferSearch', /^(searchBuffer|embedQuery)$/],
  // Write-backs reaching a buffer (the serving process's, or a replica's): embedding, index insert.
  ['writeBackAdd', /^(storeBatch|planBatch|evictOverCapacity|compactBuffer)$/],
  // The embedded experience model's prediction (its own retrieval excluded, above).
  ['experienceModel', /^(predict|initialState)$/],
  ['garbageCollector', /^\(garbage collector\)$/],
];

/** A V8 CPU profile (`--cpu-prof`), the parts read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Where the CPU of a run's processes went (every profile in `directory`: the serving process
 * and its workers), as shares of the sampled time outside set-up, by {@link PROFILE_PARTS};
 * the rest is `protocolAndOther` (JSON, WebSocket frames, sessions, worker channel, curriculum).
 */
export async function profileShares(directory: string): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  let sampled = 0;
  for (const file of (await readdir(directory)).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(await readFile(join(directory, file), 'utf8')) as CpuProfile;
    const parent = new Map<number, number>();
    const names = new Map<number, string>();
    for (const node of profile.nodes) {
      names.set(node.id, node.callFrame.functionName);
      for (const child of node.children ?? []) parent.set(child, node.id);
    }
    const partOf = new Map<number, string | null>();
    const classify = (leaf: number): string | null => {
      const known = partOf.get(leaf);
      if (known !== undefined) return known;
      const stack: string[] = [];
      for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id))
        stack.push(names.get(id)!);
      let part: string | null = 'protocolAndOther';
      if (stack[0] === '(idle)' || stack.some((name) => /^(setUpDomain|createReplica)$/.test(name)))
        part = null;
      else {
        const found = PROFILE_PARTS.find(([, frames]) => stack.some((name) => frames.test(name)));
        if (found) part = found[0];
      }
      partOf.set(leaf, part);
      return part;
    };
    profile.samples.forEach((leaf, index) => {
      const part = classify(leaf);
      if (part === null) return;
      const micros = profile.timeDeltas[index] ?? 0;
      totals[part] = (totals[part] ?? 0) + micros;
      sampled += micros;
    });
  }
  return Object.fromEntries(
    Object.entries(totals).map(([part, micros]) => [part, round(micros / Math.max(1, sampled))]),
  );
}

/** The serving process' V8 heap in use, from its `/metrics` (NaN where it cannot be read). */
export async function heapUsedMiB(url: string): Promise<number> {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(/^dreamgym_process_heap_used_bytes (\S+)$/m.exec(text)?.[1]) / 2 ** 20;
  } catch {
    return Number.NaN;
  }
}

/**
 * Sends one command to a process' inspector (a `ws://` address from `--inspect`) and resolves
 * when it has answered; `onEvent` sees the events the inspector sends meanwhile.
 */
function inspectorCommand(
  address: string,
  method: string,
  onEvent: (method: string, params: unknown) => void = () => {},
): Promise<void> {
  return new Promise<void>((done, fail) => {
    const socket = new WebSocket(address);
    socket.once('open', () => socket.send(JSON.stringify({ id: 1, method })));
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as {
        id?: number;
        method?: string;
        params?: unknown;
      };
      if (message.method) onEvent(message.method, message.params);
      if (message.id !== 1) return;
      socket.close();
      done();
    });
    socket.once('error', fail);
  });
}

/**
 * A heap snapshot of the serving process (its inspector, the first to listen) written to
 * `file`, for `--heap-snapshots DIR`: compare the start's and the end's in Chrome's DevTools
 * (Memory, Comparison) to see what a growth is made of.
 */
export async function writeHeapSnapshot(inspector: string, file: string): Promise<void> {
  const chunks: string[] = [];
  await inspectorCommand(inspector, 'HeapProfiler.takeHeapSnapshot', (method, params) => {
    if (method === 'HeapProfiler.addHeapSnapshotChunk')
      chunks.push((params as { chunk: string }).chunk);
  });
  await writeFile(file, chunks.join(''));
  console.log(`  heap snapshot: ${file}`);
}

/**
 * A full garbage collection in every process of the server (the inspector's
 * `HeapProfiler.collectGarbage`), so that RSS read just after it is memory in use, not where
 * V8's heap happens to be in its cycle (it grows to 2-3x its live size between major GCs).
 */
export async function collectGarbage(inspectors: readonly string[]): Promise<void> {
  await Promise.all(
    inspectors.map((address) => inspectorCommand(address, 'HeapProfiler.collectGarbage')),
  );
}

/**
 * The URL a `dreamgym serve` child process prints once it listens; rejects, with what the
 * process wrote to stderr, if it exits first.
 */
export function listeningUrl(
  child: ChildProcess,
  name: string,
  stderr: () => string,
): Promise<string> {
  return new Promise<string>((resolveUrl, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) resolveUrl(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}\n${stderr()}`)));
  });
}
