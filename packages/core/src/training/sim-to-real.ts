/**
 * Sim-to-real (S2R): after the synthetic phase, training continues in the real environment
 * until a budget of real transitions is spent. The budget is counted exactly: every real
 * `step` spends one transition, and once the budget is gone `step` throws a
 * `BudgetExhaustedError` without touching the real environment again: rollout collection
 * ends that episode as cut by the budget.
 */
import { BudgetExhaustedError, ConfigError } from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import type { Observation, StepResult, Task } from '../mdp/schemas.js';
import type { DreamGymConfig } from './dreamgym-config.js';

/** A shared count of real transitions against a fixed budget. */
export class RealTransitionBudget {
  private spentCount: number;

  constructor(
    readonly total: number,
    spent = 0,
  ) {
    if (!Number.isInteger(total) || total < 0) {
      throw new ConfigError(
        `The real-transition budget must be a non-negative integer, got ${total}.`,
        {
          field: 'simToReal.realTransitionBudget',
        },
      );
    }
    this.spentCount = spent;
  }

  get spent(): number {
    return this.spentCount;
  }

  get remaining(): number {
    return Math.max(0, this.total - this.spentCount);
  }

  /** Takes one transition; false when the budget is exhausted. */
  take(): boolean {
    if (this.spentCount >= this.total) return false;
    this.spentCount += 1;
    return true;
  }

  /**
   * Counts `transitions` spent on the real environment outside training (validating the
   * policy), which may overdraw the budget: a real step is spent once it is taken.
   */
  spendOutside(transitions: number): void {
    this.spentCount += transitions;
  }
}

/**
 * Wraps a real environment so each `step` spends one transition of `budget`. When the budget
 * is exhausted, `step` throws a `BudgetExhaustedError` without calling the real environment.
 */
export class BudgetedEnvironment implements Environment {
  constructor(
    private readonly inner: Environment,
    private readonly budget: RealTransitionBudget,
  ) {}

  reset(task: Task): Promise<Observation> {
    return this.inner.reset(task);
  }

  async step(action: string): Promise<StepResult> {
    if (!this.budget.take()) {
      throw new BudgetExhaustedError(
        `The real-transition budget of ${this.budget.total} is spent; "${action}" was not sent to the real environment.`,
      );
    }
    return this.inner.step(action);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Total iterations a run will make: the synthetic ones, then at least one real one when there is a budget. */
export function plannedIterations(
  config: Pick<DreamGymConfig, 'iterations' | 'maxSteps' | 'simToReal'>,
): number {
  const { simToReal } = config;
  const perRealIteration =
    simToReal.tasksPerIteration * simToReal.rolloutsPerTask * config.maxSteps;
  const realIterations =
    simToReal.realTransitionBudget > 0
      ? Math.ceil(simToReal.realTransitionBudget / perRealIteration)
      : 0;
  return config.iterations + realIterations;
}

/**
 * Iterations for progress once `done` iterations have run, some of them real: the real ones
 * left are estimated from the transitions the real iterations so far used on average (the
 * plan assumes every episode runs to `maxSteps`, and most end sooner).
 */
export function estimatedIterations(
  config: Pick<DreamGymConfig, 'iterations'>,
  done: number,
  budget: RealTransitionBudget,
): number {
  if (budget.remaining === 0) return done;
  const realDone = done - config.iterations;
  return done + Math.ceil(budget.remaining / (budget.spent / realDone));
}
