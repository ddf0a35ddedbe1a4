/**
 * Reuses expensive environments (engine processes, browsers) across rollout collections:
 * a collector's `close()` on a leased environment returns it to the pool instead of
 * closing it; `closeAll()` closes them for good. A leased environment forks where the pooled
 * one can.
 */
import { canFork, type Environment } from '../mdp/environment.js';
import type { Observation, StepResult, Task } from '../mdp/schemas.js';

export class EnvironmentPool {
  private readonly idle: Environment[] = [];
  private readonly all: Environment[] = [];

  constructor(private readonly create: () => Environment | Promise<Environment>) {}

  /** An environment from the pool (a new one when none is idle); `close()` gives it back. */
  async lease(): Promise<Environment> {
    const environment = this.idle.pop() ?? (await this.track(await this.create()));
    let returned = false;
    return {
      reset: (task: Task): Promise<Observation> => environment.reset(task),
      step: (action: string): Promise<StepResult> => environment.step(action),
      close: async () => {
        if (returned) return;
        returned = true;
        this.idle.push(environment);
      },
      // A fork is the caller's own, outside the pool; only an environment that can fork can.
      ...(canFork(environment) ? { fork: () => environment.fork() } : {}),
    };
  }

  /** Environments created so far. */
  get size(): number {
    return this.all.length;
  }

  /** Closes every environment the pool created. */
  async closeAll(): Promise<void> {
    const environments = this.all.splice(0);
    this.idle.length = 0;
    await Promise.all(environments.map((environment) => environment.close()));
  }

  private track(environment: Environment): Environment {
    this.all.push(environment);
    return environment;
  }
}
