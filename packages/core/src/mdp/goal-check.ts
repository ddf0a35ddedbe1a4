/**
 * What a domain's goal check reads of a synthetic step (`DomainAdapter.goalCheck`).
 */
import type { Observation, Step, Task } from './schemas.js';

/** One synthetic step, as `DomainAdapter.goalCheck` reads it. */
export interface GoalCheckInput {
  task: Task;
  /** The episode's steps before this one, oldest first. */
  history: readonly Step[];
  /** The action of this step, in the domain's canonical form. */
  action: string;
  /** The next state the experience model predicted. */
  nextState: Observation;
}
