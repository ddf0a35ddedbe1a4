/**
 * `Policy`: what acts in an environment. DreamGym is orthogonal to the policy: an LLM behind
 * an OpenAI-compatible server ({@link ChatModelPolicy}) or the embedded
 * {@link LinearSoftmaxPolicy} that trains on CPU.
 */
import type { Observation, Step, Task } from '../mdp/schemas.js';
import type { SeededRandom } from '../random/seeded-random.js';

/** What a policy sees besides the current observation. */
export interface PolicyContext {
  /** The task being solved. */
  task: Task;
  /** The episode so far: previous steps, oldest first. */
  history: readonly Step[];
  /**
   * Candidate actions when the observation does not list its admissible actions
   * (`observation.actions`); callers fill it from `DomainAdapter.candidateActions`.
   */
  candidates?: readonly string[];
  /**
   * Randomness for sampling. Rollout collection passes one stream per episode so results do
   * not depend on how concurrent episodes interleave. Default: the policy's own stream.
   */
  random?: SeededRandom;
  /** Take the most likely action instead of sampling (evaluation). Default false. */
  greedy?: boolean;
  /** Cancels a pending model request. */
  signal?: AbortSignal;
}

/** A policy's decision. */
export interface PolicyDecision {
  /** The action to send to the environment, in the domain's grammar. */
  action: string;
  /** log pi(action | state) under the policy that acted, when the policy knows it. */
  logprob?: number;
  /**
   * Added to the environment's reward for this step (zero or negative): how a policy
   * penalises its own invalid or unparsable outputs, as configured.
   */
  rewardPenalty?: number;
  /** Diagnostics (the model's reasoning, raw output, whether the output was invalid...). */
  info?: Record<string, unknown>;
}

/** Anything that acts: `act(observation, context) -> {action, logprob?}`. */
export interface Policy {
  /** Identifies the policy in logs and exported data. */
  readonly id: string;
  act(observation: Observation, context: PolicyContext): Promise<PolicyDecision>;
}

/** The actions a policy chooses from at `observation`: its own list, else the caller's candidates. */
export function candidateActionsOf(
  observation: Observation,
  candidates: readonly string[] | undefined,
): readonly string[] {
  if (observation.actions && observation.actions.length > 0) return observation.actions;
  return candidates ?? [];
}

/**
 * One decision as a trainer re-evaluates it: the inputs the policy saw and the action it
 * took. Built from rollout records.
 */
export interface PolicySample {
  task: Task;
  observation: Observation;
  /** Actions taken before this step in the episode, oldest first. */
  previousActions: readonly string[];
  /** The candidate actions the policy chose from. */
  candidates: readonly string[];
  /** The action taken; must be one of `candidates`. */
  action: string;
}

/**
 * A policy a gradient trainer can update: log-probabilities and entropies of recorded
 * decisions under the current weights, and accumulation of gradients of a per-step loss
 * through them. {@link LinearSoftmaxPolicy} implements it.
 */
export interface TrainablePolicy<Prepared = unknown> extends Policy {
  /** Precomputes what re-evaluating `sample` needs (features); reused across epochs. */
  prepare(sample: PolicySample): Prepared;
  /** log pi(a|s) and the entropy of pi(.|s) under the current weights. */
  evaluate(prepared: Prepared): { logprob: number; entropy: number };
  /**
   * Adds `dLogprob * grad log pi(a|s) + dEntropy * grad H(pi(.|s))` to the gradient buffer:
   * the chain rule for any per-step loss written in terms of the log-probability and entropy.
   */
  accumulateGradient(prepared: Prepared, dLogprob: number, dEntropy: number): void;
  /** Clears the gradient buffer. */
  zeroGradient(): void;
  /**
   * Applies the buffered gradient (of a loss to minimise) with the policy's optimiser,
   * after clipping its global L2 norm to `maxGradNorm` when given; returns the norm before
   * clipping, and clears the buffer.
   */
  applyGradient(options?: { maxGradNorm?: number; learningRate?: number }): { gradNorm: number };
  /** A frozen copy of the current weights, e.g. the KL reference policy. */
  snapshot(): TrainablePolicy<Prepared>;
}
