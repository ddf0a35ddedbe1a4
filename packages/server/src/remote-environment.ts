/**
 * `RemoteEnvironment`: an `Environment` played in a worker process of a {@link WorkerPool}.
 * The serving process keeps the session (socket, episode bookkeeping); the worker runs the
 * experience model and the retrieval. When the worker dies, every call in flight fails,
 * later calls fail at once, and `lost` resolves, so the session can be closed with a code
 * that says why.
 */
import {
  type Environment,
  EnvironmentError,
  type Observation,
  type StepResult,
  type Task,
} from '@dreamgym/core';

/** Why an environment's worker went away. */
export interface EnvironmentLoss {
  reason: string;
}

/** What a remote environment asks of its worker. */
export interface WorkerChannel {
  call(request: Record<string, unknown> & { op: string }): Promise<unknown>;
  /** Resolves when the worker has died. */
  readonly lost: Promise<EnvironmentLoss>;
}

/** An environment whose steps run elsewhere and can be lost with it. */
export interface LosableEnvironment extends Environment {
  /** Resolves once the environment is gone for good (its worker died). */
  readonly lost: Promise<EnvironmentLoss>;
}

/** True for an environment that says when it is lost. */
export function isLosable(environment: Environment): environment is LosableEnvironment {
  return (environment as Partial<LosableEnvironment>).lost instanceof Promise;
}

/** One environment in a worker. */
export class RemoteEnvironment implements LosableEnvironment {
  private closed = false;

  constructor(
    private readonly channel: WorkerChannel,
    /** The environment's id in its worker. */
    readonly id: number,
    private readonly onClosed: () => void,
  ) {}

  get lost(): Promise<EnvironmentLoss> {
    return this.channel.lost;
  }

  reset(task: Task): Promise<Observation> {
    return this.channel.call({ op: 'reset', environment: this.id, task }) as Promise<Observation>;
  }

  step(action: string): Promise<StepResult> {
    return this.channel.call({ op: 'step', environment: this.id, action }) as Promise<StepResult>;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClosed();
    try {
      await this.channel.call({ op: 'close', environment: this.id });
    } catch (error) {
      // A dead worker took the environment with it: nothing is left to close.
      if (!WorkerLostError.isLoss(error)) throw error;
    }
  }
}

/** A call to a worker that died (or had died) before answering. */
export class WorkerLostError extends EnvironmentError {
  readonly workerLost = true;

  /** True for this error, also from another copy of the package. */
  static isLoss(error: unknown): boolean {
    return (error as { workerLost?: unknown } | undefined)?.workerLost === true;
  }
}
