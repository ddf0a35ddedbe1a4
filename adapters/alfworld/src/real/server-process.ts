/**
 * Starts the Python ALFWorld server (`python -m dreamgym_alfworld_server`) as a child
 * process on 127.0.0.1 and waits until it answers `GET /health`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnvironmentError } from '@dreamgym/core';
import { AlfworldProtocolClient } from './protocol-client.js';

/** Name of the Python package that implements the server. */
export const ALFWORLD_SERVER_MODULE = 'dreamgym_alfworld_server';

/** How to start a server. */
export interface AlfworldServerStartOptions {
  /** Folder with `train/`, `valid_seen/`, `valid_unseen/`. */
  dataDir: string;
  /** Python with alfworld and textworld. */
  pythonPath: string;
  /** 0 picks a free port. */
  port: number;
  /** Milliseconds to wait for `/health`. */
  startTimeoutMs: number;
  /** Milliseconds per request once it runs. */
  requestTimeoutMs: number;
}

/** Why a server process ended. */
export interface AlfworldServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function moduleDirectory(): string {
  // tsup's `shims` provide import.meta.url in the CJS build as well.
  return dirname(fileURLToPath(import.meta.url));
}

function hasServerPackage(directory: string): boolean {
  return existsSync(join(directory, ALFWORLD_SERVER_MODULE, '__main__.py'));
}

/**
 * The folder that holds the `dreamgym_alfworld_server` package: `python/` of this npm
 * package, found above the running module (`src/real/` in the repository, `dist/` when
 * installed), else through the package's own manifest (when this code is bundled into
 * another file, as the benchmarks do).
 */
export function alfworldServerDirectory(): string {
  let directory = moduleDirectory();
  for (let depth = 0; depth < 5; depth += 1) {
    if (hasServerPackage(join(directory, 'python'))) return join(directory, 'python');
    directory = dirname(directory);
  }
  for (const base of [import.meta.url, join(process.cwd(), 'package.json')]) {
    try {
      const manifest = createRequire(base).resolve('@dreamgym/alfworld/package.json');
      const candidate = join(dirname(manifest), 'python');
      if (hasServerPackage(candidate)) return candidate;
    } catch {
      // Not resolvable from there; try the next base.
    }
  }
  throw new EnvironmentError(
    `Cannot find the ALFWorld server package ${ALFWORLD_SERVER_MODULE} in a python/ folder above ${moduleDirectory()} or in the installed @dreamgym/alfworld: the installation is incomplete (reinstall @dreamgym/alfworld).`,
  );
}

/**
 * The default Python: `.venv/bin/python` of the nearest folder above the current directory
 * or this module that has one (the repository's virtualenv made by `scripts/setup.sh`),
 * else `python3` on the PATH.
 */
export function defaultAlfworldPython(): string {
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

/** A running server process. */
export class AlfworldServerProcess {
  /** Resolves when the process has ended, for whatever reason. */
  readonly exited: Promise<AlfworldServerExit>;
  private exit: AlfworldServerExit | undefined;
  private readonly stderrTail: string[] = [];

  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    exited: Promise<AlfworldServerExit>,
    stderrTail: string[],
  ) {
    this.exited = exited.then((exit) => {
      this.exit = exit;
      return exit;
    });
    this.stderrTail = stderrTail;
  }

  /** Process id of the Python server. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** How the process ended, or undefined while it runs. */
  get exitStatus(): AlfworldServerExit | undefined {
    return this.exit;
  }

  /** The last lines the server wrote on stderr (engine tracebacks). */
  get recentErrors(): string {
    return this.stderrTail.join('').slice(-2000);
  }

  /** Starts the server and waits until it is healthy. */
  static async start(options: AlfworldServerStartOptions): Promise<AlfworldServerProcess> {
    const serverDirectory = alfworldServerDirectory();
    const pythonPathEnv = [serverDirectory, process.env.PYTHONPATH].filter(Boolean).join(':');
    const child = spawn(
      options.pythonPath,
      [
        '-m',
        ALFWORLD_SERVER_MODULE,
        '--data-dir',
        options.dataDir,
        '--host',
        '127.0.0.1',
        '--port',
        String(options.port),
        '--parent-pid',
        String(process.pid),
      ],
      {
        cwd: serverDirectory,
        env: { ...process.env, PYTHONPATH: pythonPathEnv, PYTHONUNBUFFERED: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const stderrTail: string[] = [];
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderrTail.push(chunk);
      while (stderrTail.length > 50) stderrTail.shift();
    });
    const exited = new Promise<AlfworldServerExit>((resolveExit) => {
      child.once('exit', (code, signal) => resolveExit({ code, signal }));
    });
    const describeExit = (exit: AlfworldServerExit) =>
      `the ALFWorld server (${options.pythonPath} -m ${ALFWORLD_SERVER_MODULE}) exited with ${exit.signal ?? `code ${exit.code}`} before it was ready. Its stderr:\n${stderrTail.join('').slice(-2000)}`;
    let timer: NodeJS.Timeout | undefined;
    // One promise that rejects on the first reason to give up: spawn error, early exit, timeout.
    const failure = new Promise<never>((_, reject) => {
      child.once('error', (error) =>
        reject(
          new EnvironmentError(
            `Cannot start the ALFWorld server with ${options.pythonPath}: ${error.message}. Create the project's virtualenv with the ALFWorld engine ('npx @dreamgym/cli doctor --fix --only python' prints the commands), or pass pythonPath (a Python with alfworld and textworld).`,
            { cause: error },
          ),
        ),
      );
      void exited.then((exit) => reject(new EnvironmentError(describeExit(exit))));
      timer = setTimeout(
        () =>
          reject(
            new EnvironmentError(
              `The ALFWorld server did not become healthy within ${options.startTimeoutMs} ms (raise startTimeoutMs on a slow machine). Its stderr:\n${stderrTail.join('').slice(-2000)}`,
            ),
          ),
        options.startTimeoutMs,
      );
    });
    // Rejections after a successful start (the process dies later) are the environment's business.
    failure.catch(() => undefined);

    const listening = new Promise<number>((resolvePort) => {
      let buffer = '';
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => {
        buffer += chunk;
        for (;;) {
          const newline = buffer.indexOf('\n');
          if (newline < 0) break;
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          try {
            const event = JSON.parse(line) as { event?: string; port?: number };
            if (event.event === 'listening' && typeof event.port === 'number')
              resolvePort(event.port);
          } catch {
            // Not our JSON event line: something the engine printed.
          }
        }
      });
    });

    try {
      const port = await Promise.race([listening, failure]);
      const url = `http://127.0.0.1:${port}`;
      // The socket is bound before the line is printed, so the first health check answers.
      await Promise.race([
        new AlfworldProtocolClient(url, options.requestTimeoutMs).health(options.startTimeoutMs),
        failure,
      ]);
      return new AlfworldServerProcess(child, url, exited, stderrTail);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops the server (SIGTERM, then SIGKILL after `graceMs`) and waits for it to end. */
  async stop(graceMs = 3_000): Promise<void> {
    if (this.exit !== undefined || this.child.exitCode !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
