import { ConfigError } from '../errors.js';
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
 * - `fork()`, where an environment has it (the synthetic one; real engines cannot be put back
 *   into an intermediate state), returns a new, independent environment in the current state:
 *   same task, same history, same world. Stepping the fork leaves this one untouched, and
 *   stepping this one leaves the fork untouched. Ask through {@link forkEnvironment}, which
 *   says clearly when an environment cannot.
 */
export interface Environment {
  /** Starts an episode of `task` and returns the initial observation. */
  reset(task: Task): Promise<Observation>;
  /** Applies `action` (text in the domain's grammar) and returns what followed. */
  step(action: string): Promise<StepResult>;
  /** Releases the environment's resources (processes, sockets, browsers). Idempotent. */
  close(): Promise<void>;
  /**
   * An optional capability: a new environment in this one's current state (mid-episode
   * included), independent of it from then on. Absent where the environment cannot be
   * restored to an intermediate state (every real one).
   */
  fork?(): Promise<Environment>;
}

/** An environment that can fork. */
export type ForkableEnvironment = Environment & { fork(): Promise<Environment> };

/** Whether `environment` can fork ({@link Environment.fork}). */
export function canFork(environment: Environment): environment is ForkableEnvironment {
  return typeof environment.fork === 'function';
}

/**
 * `environment.fork()`: a new environment in its current state.
 *
 * @param name what the environment is, for the error (`the real environment`)
 * @throws ConfigError when the environment cannot fork (a real one): forking needs one that
 *   can, such as `SyntheticEnvironment`.
 */
export function forkEnvironment(
  environment: Environment,
  name = 'this environment',
): Promise<Environment> {
  if (!canFork(environment)) {
    throw new ConfigError(
      `${name} cannot fork: it has no fork() (real environments cannot be put back into an intermediate state). Forked continuations (trainer.credit 'fork') need an environment that can, such as SyntheticEnvironment.`,
      { field: 'trainer.credit' },
    );
  }
  return environment.fork();
}
