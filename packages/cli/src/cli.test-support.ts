/**
 * What the CLI's tests share: an in-memory `CommandIo` that records what a command printed,
 * and the shared benchmark data folder.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CommandIo } from './cli.js';

/** A `CommandIo` whose output is kept; `DEBUG_CLI=1` also echoes stderr to the test's output. */
export type CapturedIo = CommandIo & { out: () => string; err: () => string };

/** Runs a command with `env` (default empty) in `cwd` (default the process's), keeping its output. */
export function captureIo(options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): CapturedIo {
  let out = '';
  let err = '';
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: {
      write: (text: string) => {
        err += text;
        if (process.env.DEBUG_CLI) process.stdout.write(text);
      },
    },
    env: options.env ?? {},
    cwd: options.cwd ?? process.cwd(),
    out: () => out,
    err: () => err,
  };
}

/** The shared data folder (`DREAMGYM_DATA_DIR`, holding `alfworld/`); a clear error without it. */
export function dataRoot(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (!root || !existsSync(join(root, 'alfworld'))) {
    throw new Error(
      'Set DREAMGYM_DATA_DIR to the shared data folder (it must hold alfworld/); CI uses ../shared/data.',
    );
  }
  return resolve(root);
}
