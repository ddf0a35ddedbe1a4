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
