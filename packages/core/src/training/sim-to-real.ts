/**
 * Sim-to-real (S2R): after the synthetic phase, training continues in the real environment
 * until a budget of real transitions is spent. The budget is counted exactly: every real
 * `step` spends one transition, and once the budget is gone episodes end (truncated)
 * without touching the real environment again.
 */
import { ConfigError } from '../errors.js';
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
 * is exhausted, `step` ends the episode (`done` and `truncated`, reward 0,
 * `info.budgetExhausted`) with the last observation, without calling the real environment.
 */
export class BudgetedEnvironment implements Environment {
  private lastObservation: Observation | undefined;

  constructor(
    private readonly inner: Environment,
    private readonly budget: RealTransitionBudget,
  ) {}

  async reset(task: Task): Promise<Observation> {
    this.lastObservation = await this.inner.reset(task);
    return this.lastObservation;
  }

  async step(action: string): Promise<StepResult> {
    if (this.lastObservation !== undefined && !this.budget.take()) {
      return {
        observation: this.lastObservation,
        reward: 0,
        done: true,
        truncated: true,
        info: { budgetExhausted: true, success: false },
      };
    }
    const result = await this.inner.step(action);
    this.lastObservation = result.observation;
    return result;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
