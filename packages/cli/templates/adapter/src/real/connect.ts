/**
 * The real environment: starts (or connects to) the benchmark's own environment and drives it
 * as a DreamGym `Environment`, for sim-to-real training and evaluation.
 */
import type { Environment } from '@dreamgym/core';
import { z } from 'zod';
import { notImplemented } from '../not-implemented.js';

/** Options of {@link connect__PASCAL__Real}. */
export const __PASCAL__RealOptionsSchema = z.object({
  /**
   * The dataset directory the real environment plays its tasks from (game files, pages).
   * Default: the adapter's `dataDir` (`dreamgym train --data DIR` passes it).
   */
  dataDir: z.string().min(1).optional(),
  /** Actions per episode; after this many the episode ends with `done` and `truncated`. Default 30. */
  maxSteps: z.number().int().positive().default(30),
});
/** Options of {@link connect__PASCAL__Real}, as a caller writes them. */
export type __PASCAL__RealOptions = z.input<typeof __PASCAL__RealOptionsSchema>;

/**
 * Connects to the real __TITLE__ environment. `reset(task)` starts an episode of the task,
 * `step(action)` answers an action outside the grammar with `info.invalidAction: true`
 * (never a throw), the reward and `done` are the environment's own, and `close()` is
 * idempotent.
 */
export async function connect__PASCAL__Real(
  options: __PASCAL__RealOptions = {},
): Promise<Environment> {
  void options;
  throw notImplemented(
    'connectReal',
    'src/real/connect.ts',
    'write connect__PASCAL__Real(options): start or connect to the real environment and return an Environment (reset, step, close) that passes the environment conformance checks',
    8,
  );
}

/**
 * Why the real __TITLE__ environment cannot start on this machine (its engine, browser or
 * server is not installed), or undefined when it can: the conformance test skips the real
 * environment's checks with this reason where there is one. Check for what `connectReal`
 * needs (a file, a command, a package), not whether it works: a connector that fails where
 * its engine is installed must fail its checks.
 *
 * @example
 * return existsSync(enginePath) ? undefined : `no __TITLE__ engine at ${enginePath}: install it with ...`;
 */
export function __CAMEL__RealUnavailable(options: __PASCAL__RealOptions = {}): string | undefined {
  void options;
  // Write the check once connectReal starts an engine that a machine may lack.
  return undefined;
}
