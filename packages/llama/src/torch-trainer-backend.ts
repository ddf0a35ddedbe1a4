/**
 * The client of the torch trainer backend: a Python worker (`python -m
 * dreamgym_trainer.worker`; the package ships it in `trainer/`, the repository keeps its source
 * in `trainers/python/`) that holds an LLM policy's fp32 weights and
 * runs its gradient steps, spoken to over a JSON-lines protocol on the worker's stdin and
 * stdout (one request per line, answers in order). Logs arrive on its stderr.
 *
 * A worker that exits, is killed or cannot start fails every pending and later request with
 * a `TrainerBackendError` naming the request, the exit status and the last lines of stderr.
 * An aborted request kills the worker: Python cannot be interrupted mid-step, and a half-run
 * update must not leave weights the caller does not know about.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CheckpointError, ConfigError, ModelFileError, TrainerBackendError } from '@dreamgym/core';

/** Where and how the worker runs. */
export interface TorchTrainerBackendOptions {
  /**
   * The Python interpreter, with the trainer's requirements (torch, transformers, peft, gguf:
   * the package's `trainer/requirements.txt`; `npx @dreamgym/cli doctor --fix --only trainer`
   * installs them into the project's `.venv`). Default: `$DREAMGYM_PYTHON`, else
   * `.venv/bin/python` of the nearest folder above the current directory that has one, else
   * `python3`.
   */
  python?: string;
  /**
   * The folder that holds the `dreamgym_trainer` package. Default: `$DREAMGYM_TRAINER_DIR`,
   * else, in the DreamGym repository, its `trainers/python`; else the trainer this package
   * ships (`trainer/`); else `trainers/python` of the nearest folder above the current
   * directory that has it.
   */
  trainerDirectory?: string;
  /** torch device: `cpu` (default) or `cuda` / `cuda:N`. */
  device?: string;
  /** torch CPU threads. Default: torch's own choice. */
  threads?: number;
  /** Environment of the worker. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Receives the worker's log lines (its stderr). */
  log?: (line: string) => void;
}

/** The worker's answer to `start`. */
export interface TrainerDescription {
  protocol: number;
  model: string;
  architecture: string;
  blocks: number;
  vocabSize: number;
  parameters: number;
  trainableParameters: number;
  device: string;
  threads: number;
  loadSeconds: number;
  /** Layers below the first trainable one, whose outputs the worker caches. */
  frozenTrunkLayers: number;
  mode: 'lora' | 'full';
  [key: string]: unknown;
}

const STDERR_LINES = 40;

function findUp(start: string, relative: string): string | undefined {
  let directory = resolve(start);
  for (;;) {
    const candidate = join(directory, relative);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** The default Python of the trainer backend (see {@link TorchTrainerBackendOptions.python}). */
export function defaultTrainerPython(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DREAMGYM_PYTHON?.trim()) return env.DREAMGYM_PYTHON;
  return findUp(process.cwd(), join('.venv', 'bin', 'python')) ?? 'python3';
}

/** The folder holding `dreamgym_trainer` (see {@link TorchTrainerBackendOptions.trainerDirectory}). */
export function defaultTrainerDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DREAMGYM_TRAINER_DIR?.trim()) return resolve(env.DREAMGYM_TRAINER_DIR);
  // This package's folder: `dist/` in an install, `src/` or `dist/` in the DreamGym repository.
  const here = dirname(fileURLToPath(import.meta.url));
  const worker = join('trainers', 'python', 'dreamgym_trainer', 'worker.py');
  // In the repository, its source (`trainer/` there is only the copy a pack makes); in an
  // install, the trainer the package ships; else a checkout above the working folder.
  const inRepository = findUp(here, worker);
  if (inRepository) return dirname(dirname(inRepository));
  const shipped = join(here, '..', 'trainer');
  if (existsSync(join(shipped, 'dreamgym_trainer', 'worker.py'))) return resolve(shipped);
  const found = findUp(process.cwd(), worker);
  if (!found) {
    throw new ConfigError(
      `Cannot find the DreamGym trainer: this @dreamgym/llama has no trainer/ folder beside ${here} (an incomplete install: reinstall @dreamgym/llama) and no trainers/python is above ${process.cwd()}. Or set DREAMGYM_TRAINER_DIR (or the trainerDirectory option) to a folder that holds dreamgym_trainer.`,
      { field: 'trainer.trainerDirectory' },
    );
  }
  return dirname(dirname(found));
}

/** How to give the worker a Python with its requirements, from the project folder. */
const PYTHON_SETUP =
  "Create the trainer's virtualenv in your project with `npx @dreamgym/cli doctor --fix --only trainer` (a .venv with torch, transformers, peft and gguf from the trainer's requirements.txt), or set the trainer's python option (or DREAMGYM_PYTHON) to a Python that has them.";

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface WorkerAnswer {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: { kind: string; message: string; traceback?: string };
}

/** A running trainer worker. */
export class TorchTrainerBackend {
  /** The worker's description of itself (model, device, parameter counts). */
  description: TrainerDescription | undefined;
  private readonly pending = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private nextId = 1;
  private failure: TrainerBackendError | undefined;
  private closing: Promise<void> | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly where: string,
    private readonly log: ((line: string) => void) | undefined,
  ) {
    this.exited = new Promise((resolveExit) => {
      child.once('exit', (code, signal) => {
        const status = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        this.fail(
          new TrainerBackendError(
            `The trainer worker (${where}, pid ${child.pid}) ${status}${this.closing ? '' : ' unexpectedly'}.${this.tailText()}`,
            { kind: 'exited' },
          ),
        );
        resolveExit();
      });
    });
    child.once('error', (error) => {
      this.fail(
        new TrainerBackendError(
          `Cannot run the trainer worker (${where}): ${error.message}. ${PYTHON_SETUP}`,
          { kind: 'spawn', cause: error },
        ),
      );
    });
    createInterface({ input: child.stdout! }).on('line', (line) => this.answer(line));
    createInterface({ input: child.stderr! }).on('line', (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_LINES) this.stderrTail.shift();
      this.log?.(line);
    });
  }

  /** Starts a worker process (the model is loaded by {@link TorchTrainerBackend.request}(`start`)). */
  static spawn(options: TorchTrainerBackendOptions = {}): TorchTrainerBackend {
    const env = options.env ?? process.env;
    const python = options.python ?? defaultTrainerPython(env);
    const directory = options.trainerDirectory ?? defaultTrainerDirectory(env);
    if (!existsSync(join(directory, 'dreamgym_trainer', 'worker.py'))) {
      throw new ConfigError(
        `${directory} does not hold the DreamGym trainer (dreamgym_trainer/worker.py).`,
        { field: 'trainer.trainerDirectory' },
      );
    }
    const args = ['-m', 'dreamgym_trainer.worker', '--device', options.device ?? 'cpu'];
    if (options.threads !== undefined) args.push('--threads', String(options.threads));
    const child = spawn(python, args, {
      cwd: directory,
      env: {
        ...env,
        PYTHONPATH: [directory, env.PYTHONPATH].filter(Boolean).join(':'),
        PYTHONUNBUFFERED: '1',
        TOKENIZERS_PARALLELISM: 'false',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new TorchTrainerBackend(child, `${python} -m dreamgym_trainer.worker`, options.log);
  }

  /** The worker's process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the worker is gone (crashed, killed or closed). */
  get dead(): boolean {
    return this.failure !== undefined;
  }

  /**
   * Sends one request and resolves with its result. Worker errors become `CheckpointError`
   * (a saved state that does not fit), `ModelFileError` (the GGUF), or `TrainerBackendError`.
   */
  request<T = unknown>(
    method: string,
    params: Record<string, unknown> = {},
    signal?: AbortSignal,
  ): Promise<T> {
    if (this.failure) return Promise.reject(this.withMethod(this.failure, method));
    signal?.throwIfAborted();
    const id = this.nextId++;
    return new Promise<T>((resolvePromise, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        reject(signal!.reason);
        // The step cannot be interrupted in Python; the worker's weights would be unknown.
        this.child.kill('SIGKILL');
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        method,
        resolve: (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolvePromise(value as T);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      });
      this.child.stdin!.write(`${JSON.stringify({ id, method, params })}\n`, (error) => {
        if (error) this.fail(this.broken(`writing the ${method} request failed: ${error.message}`));
      });
    });
  }

  /** Loads the model in the worker; resolves with its description. */
  async start(params: Record<string, unknown>): Promise<TrainerDescription> {
    this.description = await this.request<TrainerDescription>('start', params);
    return this.description;
  }

  /** Asks the worker to exit and waits for it (kills it after `timeoutMs`). Idempotent. */
  close(timeoutMs = 10_000): Promise<void> {
    this.closing ??= (async () => {
      if (!this.failure) {
        const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
        try {
          await this.request('shutdown').catch(() => {});
          this.child.stdin?.end();
          await this.exited;
        } finally {
          clearTimeout(timer);
        }
      }
    })();
    return this.closing;
  }

  /** Kills the worker at once (tests, crash simulation). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child.kill(signal);
  }

  private answer(line: string): void {
    let message: WorkerAnswer;
    try {
      message = JSON.parse(line) as WorkerAnswer;
    } catch {
      this.log?.(`(unparsable line from the trainer worker) ${line.slice(0, 200)}`);
      return;
    }
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    if (message.ok) {
      pending.resolve(message.result);
      return;
    }
    const error = message.error ?? { kind: 'internal', message: 'no error details' };
    const text = `Trainer worker ${pending.method} failed (${error.kind}): ${error.message}`;
    if (error.kind === 'checkpoint') pending.reject(new CheckpointError(text));
    else if (error.kind === 'model-file') {
      pending.reject(new ModelFileError(text, { path: String(error.message) }));
    } else if (error.kind === 'python-module') {
      pending.reject(
        new TrainerBackendError(
          `${text} (${this.where}): this Python lacks the trainer's requirements. ${PYTHON_SETUP}`,
          {
            kind: error.kind,
            method: pending.method,
          },
        ),
      );
    } else {
      const lastFrame = error.traceback?.trim().split('\n').slice(-3).join(' | ');
      pending.reject(
        new TrainerBackendError(`${text}${lastFrame ? ` [${lastFrame}]` : ''}`, {
          kind: error.kind,
          method: pending.method,
        }),
      );
    }
  }

  private tailText(): string {
    return this.stderrTail.length > 0
      ? ` Last worker output:\n  ${this.stderrTail.slice(-12).join('\n  ')}`
      : '';
  }

  private broken(reason: string): TrainerBackendError {
    return new TrainerBackendError(
      `The trainer worker (${this.where}): ${reason}.${this.tailText()}`,
      {
        kind: 'protocol',
      },
    );
  }

  private withMethod(error: TrainerBackendError, method: string): TrainerBackendError {
    return new TrainerBackendError(`${method}: ${error.message}`, {
      kind: error.kind,
      method,
      cause: error,
    });
  }

  private fail(error: TrainerBackendError): void {
    this.failure ??= error;
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.reject(this.withMethod(this.failure, pending.method));
    }
  }
}
