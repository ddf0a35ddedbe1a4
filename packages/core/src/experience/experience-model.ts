/**
 * `ExperienceModel`: the paper's M_exp (Eq. 4). Given the task, the interaction history,
 * the current abstract state s_t, the action a_t and the top-k retrieved transitions D_k,
 * it writes its reasoning R_t, the next state s_{t+1}, the reward r_{t+1} and whether the
 * episode ended.
 */
import type { Observation, Step, Task, Trajectory } from '../mdp/schemas.js';
import type { ScoredTransition } from '../replay/retriever.js';
import type { RewardRuleInput } from './outcome-reward.js';

/** What the experience model is asked to predict from (one transition of an episode). */
export interface ExperienceInput {
  task: Task;
  /** The steps of the episode so far, oldest first (empty at the first step or when history is ablated). */
  history: readonly Step[];
  /** s_t: the current abstract state. */
  state: Observation;
  /** a_t: the action, in the domain's canonical form. */
  action: string;
  /** D_k: stored transitions similar to (s_t, a_t), most similar first (empty when retrieval is ablated). */
  demos: readonly ScoredTransition[];
  /** Cancels a model request. */
  signal?: AbortSignal;
}

/** What the experience model predicts for one transition. */
export interface ExperiencePrediction {
  /** R_t: why the model predicts this outcome (the reasoning trace, or how it was derived). */
  reasoning: string;
  /** s_{t+1}. `actions` may be absent; the synthetic environment then fills them from the adapter. */
  observation: Observation;
  /**
   * The model's own estimate of r_{t+1} (its neighbours' mean reward, the LLM's number). What
   * the step earns is decided once, by the synthetic environment's reward rule
   * (`ExperienceModel.rewardRule`): under the default outcome rule this number is not used;
   * in `model` mode it is the reward of every step that is not a success. Absent: none.
   */
  reward?: number;
  /** True when the episode ended after the action. */
  done: boolean;
  /** True when the model judged the task accomplished. */
  success: boolean;
  /** Diagnostics (`experienceModelFailure`, `consistency`, votes...), copied into `StepResult.info`. */
  info?: Record<string, unknown>;
}

/** What the model is given to synthesise an initial state s_0 for a task that has none. */
export interface InitialStateInput {
  task: Task;
  /** Stored transitions of similar tasks (their `state` at `stepIndex` 0 shows what an initial state looks like). */
  demos: readonly ScoredTransition[];
  signal?: AbortSignal;
}

/** The experience model M_exp. */
export interface ExperienceModel {
  /** Identifies the model in logs and metrics (`retrieval`, `reasoning:<chat model id>`). */
  readonly id: string;
  /**
   * How the synthetic environment turns this model's predictions into rewards (its reward
   * rule, applied once per step there): absent, the outcome reward (1 on a successful final
   * step, else 0). A model learned from data with graded rewards declares `mode: 'model'`.
   */
  readonly rewardRule?: RewardRuleInput;
  /** Predicts (R_t, s_{t+1}, its reward estimate, done, success) for one transition. */
  predict(input: ExperienceInput): Promise<ExperiencePrediction>;
  /**
   * Synthesises s_0 for a task without `initialObservation`. Models without it cannot
   * start such tasks; the synthetic environment says so.
   */
  initialState?(input: InitialStateInput): Promise<Observation>;
  /**
   * Learns from real trajectories gathered while training (the episodes of sim-to-real), so
   * the model co-evolves with the policy. Models without it learn only through the replay
   * buffer they retrieve from.
   */
  learn?(trajectories: readonly Trajectory[]): void;
}
