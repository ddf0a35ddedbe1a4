/**
 * The real environment: starts (or connects to) the benchmark's own environment and drives it
 * as a DreamGym `Environment`, for sim-to-real training and evaluation.
 */
import type { Environment } from '@dreamgym/core';
import { z } from 'zod';
import { notImplemented } from '../not-implemented.js';

/** Options of {@link connectMiniwobReal}. */
export const MiniwobRealOptionsSchema = z.object({
  /** Actions per episode; after this many the episode ends with `done` and `truncated`. Default 30. */
  maxSteps: z.number().int().positive().default(30),
});
/** Options of {@link connectMiniwobReal}, as a caller writes them. */
export type MiniwobRealOptions = z.input<typeof MiniwobRealOptionsSchema>;

/**
 * Connects to the real MiniWoB++ environment. `reset(task)` starts an episode of the task,
 * `step(action)` answers an action outside the grammar with `info.invalidAction: true`
 * (never a throw), the reward and `done` are the environment's own, and `close()` is
 * idempotent.
 */
export async function connectMiniwobReal(options: MiniwobRealOptions = {}): Promise<Environment> {
  void options;
  throw notImplemented(
    'connectReal',
    'src/real/connect.ts',
    'write connectMiniwobReal(options): start or connect to the real environment and return an Environment (reset, step, close) that passes the environment conformance checks',
    8,
  );
}
