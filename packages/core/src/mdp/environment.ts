import type { Observation, StepResult, Task } from './schemas.js';

/**
 * An interactive environment: real (an engine, a browser, a web shop) or synthetic
 * (DreamGym's experience model). One instance runs one episode at a time.
 *
 * Contract (checked by `@dreamgym/core/testing`):
 * - `reset(task)` starts a new episode and returns s_0; it may be called again at any time.
 * - `step(action)` returns s_{t+1}, r_{t+1} and `done`; calling it before `reset` or
 *   after `done` throws an `EnvironmentStateError`.
 * - An action outside the domain's grammar is not an exception: the environment answers
 *   with an observation that says so (as real engines do), and `info.invalidAction` is true.
 * - `close()` frees resources; it is idempotent, and any call after it throws.
 */
export interface Environment {
  /** Starts an episode of `task` and returns the initial observation. */
  reset(task: Task): Promise<Observation>;
  /** Applies `action` (text in the domain's grammar) and returns what followed. */
  step(action: string): Promise<StepResult>;
  /** Releases the environment's resources (processes, sockets, browsers). Idempotent. */
  close(): Promise<void>;
}
