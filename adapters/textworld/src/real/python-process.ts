/**
 * The Python side of the adapter: finding `python/` (the `dreamgym_textworld_server` package)
 * and a Python with `textworld`, starting the engine server as a child process on 127.0.0.1,
 * and running the game generator to completion.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvironmentError } from '@dreamgym/core';
import { TextworldProtocolClient } from './protocol-client.js';

/** Name of the Python package of the server and the generator. */
export const TEXTWORLD_SERVER_MODULE = 'dreamgym_textworld_server';

function moduleDirectory(): string {
  // tsup's `shims` provide import.meta.url in the CJS build as well.
  return dirname(fileURLToPath(import.meta.url));
}

function hasServerPackage(directory: string): boolean {
  return existsSync(join(directory, TEXTWORLD_SERVER_MODULE, '__main__.py'));
}

/**
 * The folder that holds the `dreamgym_textworld_server` package: `python/` of this npm
 * package, found above the running module (`src/real/` in the repository, `dist/` when
 * installed), else through the package's own manifest (when bundled into another file).
 */
export function textworldPythonDirectory(): string {
  let directory = moduleDirectory();
  for (let depth = 0; depth < 5; depth += 1) {
    if (hasServerPackage(join(directory, 'python'))) return join(directory, 'python');
    directory = dirname(directory);
  }
  for (const base of [import.meta.url, join(process.cwd(), 'package.json')]) {
    try {
      const manifest = createRequire(base).resolve('@dreamgym/textworld/package.json');
      const candidate = join(dirname(manifest), 'python');
      if (hasServerPackage(candidate)) return candidate;
    } catch {
      // Not resolvable from there; try the next base.
    }
  }
  throw new EnvironmentError(
    `Cannot find the TextWorld server package ${TEXTWORLD_SERVER_MODULE} in a python/ folder above ${moduleDirectory()} or in the installed @dreamgym/textworld: the installation is incomplete (reinstall @dreamgym/textworld).`,
  );
}

/**
 * The default Python: `.venv/bin/python` of the nearest folder above the working folder or
 * this module that has one (the repository's virtualenv made by `scripts/setup.sh`), else
 * `python3` on the PATH.
 */
export function defaultTextworldPython(): string {
  for (const start of [process.cwd(), moduleDirectory()]) {
    let directory = resolve(start);
    for (;;) {
      const candidate = join(directory, '.venv', 'bin', 'python');
      if (existsSync(candidate)) return candidate;
      const parent = dirname(directory);
      if (parent === directory) break;
      directory = parent;
    }
  }
  return 'python3';
}

interface SpawnedPython {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last of what the process wrote on stderr. */
  stderr: () => string;
  /** Calls `onLine` with every line the process writes on stdout. */
  lines: (onLine: (line: string) => void) => void;
}

function spawnPython(pythonPath: string, args: string[]): SpawnedPython {
  const directory = textworldPythonDirectory();
  const child = spawn(pythonPath, args, {
    cwd: directory,
    env: {
      ...process.env,
      PYTHONPATH: [directory, process.env.PYTHONPATH].filter(Boolean).join(':'),
      PYTHONUNBUFFERED: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    tail.push(chunk);
    while (tail.length > 50) tail.shift();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.once('exit', (code, signal) => done({ code, signal }));
  });
  return {
    child,
    exited,
    stderr: () => tail.join('').slice(-2000),
    lines: (onLine) => {
      let buffer = '';
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => {
        buffer += chunk;
        for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          if (line !== '') onLine(line);
        }
      });
    },
  };
}

function spawnFailure(pythonPath: string, error: Error): EnvironmentError {
  return new EnvironmentError(
    `Cannot start ${pythonPath}: ${error.message}. Create a virtualenv with TextWorld (python3 -m venv .venv && .venv/bin/python -m pip install --no-deps -r node_modules/@dreamgym/textworld/python/requirements.txt), or pass pythonPath (a Python with textworld).`,
    { cause: error },
  );
}

/** A started TextWorld server. */
export interface TextworldServerProcess {
  url: string;
  pid: number | undefined;
  /** Resolves when the process has ended, for whatever reason. */
  exited: Promise<unknown>;
  /** Whether the process has ended. */
  readonly ended: boolean;
  /** Stops the server (SIGTERM, then SIGKILL after `graceMs`) and waits for it to end. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts `python -m dreamgym_textworld_server` on 127.0.0.1 and waits until it is healthy. */
export async function startTextworldServer(options: {
  dataDir: string;
  pythonPath: string;
  port: number;
  startTimeoutMs: number;
}): Promise<TextworldServerProcess> {
  const python = spawnPython(options.pythonPath, [
    '-m',
    TEXTWORLD_SERVER_MODULE,
    '--data-dir',
    options.dataDir,
    '--port',
    String(options.port),
    '--parent-pid',
    String(process.pid),
  ]);
  let ended = false;
  void python.exited.then(() => {
    ended = true;
  });
  let timer: NodeJS.Timeout | undefined;
  const failure = new Promise<never>((_, reject) => {
    python.child.once('error', (error) => reject(spawnFailure(options.pythonPath, error)));
    void python.exited.then((exit) =>
      reject(
        new EnvironmentError(
          `The TextWorld server exited with ${exit.signal ?? `code ${exit.code}`} before it was ready. Its stderr:\n${python.stderr()}`,
        ),
      ),
    );
    timer = setTimeout(
      () =>
        reject(
          new EnvironmentError(
            `The TextWorld server did not become healthy within ${options.startTimeoutMs} ms (raise startTimeoutMs on a slow machine). Its stderr:\n${python.stderr()}`,
          ),
        ),
      options.startTimeoutMs,
    );
  });
  failure.catch(() => undefined);
  const listening = new Promise<number>((resolvePort) => {
    python.lines((line) => {
      try {
        const event = JSON.parse(line) as { event?: string; port?: number };
        if (event.event === 'listening' && typeof event.port === 'number') resolvePort(event.port);
      } catch {
        // Not our JSON event line: something the engine printed.
      }
    });
  });
  try {
    const port = await Promise.race([listening, failure]);
    const url = `http://127.0.0.1:${port}`;
    await Promise.race([
      new TextworldProtocolClient(url, options.startTimeoutMs).health(),
      failure,
    ]);
    return {
      url,
      pid: python.child.pid,
      exited: python.exited,
      get ended() {
        return ended;
      },
      async stop(graceMs = 3_000) {
        if (ended) return;
        python.child.kill('SIGTERM');
        const kill = setTimeout(() => python.child.kill('SIGKILL'), graceMs);
        try {
          await python.exited;
        } finally {
          clearTimeout(kill);
        }
      },
    };
  } catch (error) {
    python.child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `python -m <module> ...args` to completion, handing every JSON line it prints to
 * `onRecord`.
 *
 * @throws EnvironmentError with the process's stderr when it fails.
 */
export async function runTextworldPython(
  pythonPath: string,
  module: string,
  args: string[],
  onRecord: (record: Record<string, unknown>) => void,
  signal?: AbortSignal,
): Promise<void> {
  const python = spawnPython(pythonPath, ['-m', module, ...args]);
  const abort = () => python.child.kill('SIGTERM');
  signal?.addEventListener('abort', abort, { once: true });
  let callbackError: unknown;
  python.lines((line) => {
    try {
      onRecord(JSON.parse(line) as Record<string, unknown>);
    } catch (error) {
      if (!(error instanceof SyntaxError)) {
        callbackError ??= error;
        python.child.kill('SIGTERM');
      }
    }
  });
  try {
    const exit = await Promise.race([
      python.exited,
      new Promise<never>((_, reject) =>
        python.child.once('error', (error) => reject(spawnFailure(pythonPath, error))),
      ),
    ]);
    if (callbackError !== undefined) throw callbackError;
    if (signal?.aborted) throw signal.reason;
    if (exit.code !== 0) {
      throw new EnvironmentError(
        `${pythonPath} -m ${module} ${args.join(' ')} exited with ${exit.signal ?? `code ${exit.code}`}. Its stderr:\n${python.stderr()}`,
      );
    }
  } finally {
    signal?.removeEventListener('abort', abort);
  }
}
