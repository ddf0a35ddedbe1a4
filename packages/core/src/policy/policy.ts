/**
 * `Policy`: what acts in an environment. DreamGym is orthogonal to the policy: an LLM behind
 * an OpenAI-compatible server ({@link ChatModelPolicy}) or the embedded
 * {@link LinearSoftmaxPolicy} that trains on CPU.
 */
import type { Observation, Step, Task } from '../mdp/schemas.js';
import type { SeededRandom } from '../random/seeded-random.js';
import type { PpoLossConfig } from './ppo-loss.js';

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

/**
 * The one rule for the actions an agent chooses from at `observation`: the state's own list
 * where it has one, else what `propose` (the adapter's `candidateActions`) proposes from the
 * state and the episode so far. Rollouts, behaviour cloning and the synthetic environment all
 * ask here.
 */
export function candidateActionsAt(
  observation: Observation,
  history: readonly Step[],
  propose: ((observation: Observation, history: readonly Step[]) => string[]) | undefined,
): readonly string[] {
  if (observation.actions && observation.actions.length > 0) return observation.actions;
  return propose?.(observation, history) ?? [];
}

/** The actions a policy chooses from at `observation`: its own list, else the caller's candidates. */
export function candidateActionsOf(
  observation: Observation,
  candidates: readonly string[] | undefined,
): readonly string[] {
  return candidateActionsAt(observation, [], () => [...(candidates ?? [])]);
}

/**
 * One decision as a trainer re-evaluates it: the inputs the policy saw and the action it
 * took. Built from rollout records (or from offline trajectories, for behaviour cloning).
 */
export interface PolicySample {
  task: Task;
  observation: Observation;
  /** Actions taken before this step in the episode, oldest first. */
  previousActions: readonly string[];
  /**
   * The observation text each previous action was taken at (aligned with `previousActions`;
   * the first is the initial observation). The embedded policy's relational features need
   * it; `rolloutSamples` and `demonstrationSamples` fill it.
   */
  previousObservations?: readonly string[];
  /** The candidate actions the policy chose from (empty where the policy writes free text). */
  candidates: readonly string[];
  /** The action taken. A policy that chooses among candidates needs it to be one of them. */
  action: string;
  /**
   * What the acting policy recorded about this decision (`PolicyDecision.info`): an LLM
   * policy keeps its prompt and completion tokens here, so the update scores exactly the
   * tokens that were sampled.
   */
  decisionInfo?: Record<string, unknown>;
}

/** One iteration's decisions with what the clipped policy-gradient loss needs. */
export interface PolicyUpdateBatch {
  samples: readonly PolicySample[];
  /** The advantage A_t of each sample (GRPO's group-normalised return, or GAE's). */
  advantages: readonly number[];
  /**
   * log pi_behaviour(a|s) of each sample: what the acting policy reported when it acted.
   * The importance ratio of the clipped loss is taken against it.
   */
  behaviourLogprobs: readonly number[];
  /** log pi_ref(a|s) under the frozen KL reference; required when `loss.klCoefficient > 0`. */
  referenceLogprobs?: readonly number[];
}

/** How to run one update. */
export interface PolicyUpdateOptions {
  /** Passes over the batch. */
  epochs: number;
  /** Samples per gradient step. Default: the whole batch in one step. */
  miniBatchSize?: number;
  /** Clip ranges, dual clip, KL and entropy coefficients (`resolvePpoLossOptions`). */
  loss: PpoLossConfig;
  /** Clip the gradient's global L2 norm to this. */
  maxGradNorm?: number;
  /** Overrides the optimiser's learning rate for this update. */
  learningRate?: number;
  /** Shuffles the mini-batches. */
  random: SeededRandom;
  signal?: AbortSignal;
}

/** Figures of one update, means over every mini-batch evaluation. */
export interface PolicyUpdateMetrics {
  loss: number;
  policyLoss: number;
  /** k3 estimate of KL(pi || ref) (0 without a KL term). */
  kl: number;
  entropy: number;
  /** Share of evaluations where the clip was active. */
  clipFraction: number;
  /** Mean global gradient norm before clipping. */
  gradNorm: number;
  /** Gradient steps taken. */
  gradientSteps: number;
  /**
   * Mean |log pi_behaviour - log pi_theta| before the first gradient step: 0 for a policy
   * that trains the weights it acts with, larger where generation runs on other weights
   * (a quantised copy of an LLM).
   */
  behaviourMismatch: number;
}

/** How to run behaviour cloning steps. */
export interface ImitationOptions {
  /** Samples per gradient step. Default: all at once. */
  miniBatchSize?: number;
  maxGradNorm?: number;
  learningRate?: number;
  random: SeededRandom;
  signal?: AbortSignal;
}

/** Figures of one pass of behaviour cloning. */
export interface ImitationMetrics {
  /** Mean negative log-likelihood of the demonstrated actions before each gradient step. */
  negativeLogLikelihood: number;
  gradientSteps: number;
}

/**
 * A policy the DreamGym loop can train, whatever runs its gradient step: in process (the
 * embedded {@link LinearSoftmaxPolicy}) or in another process (an LLM policy whose torch
 * trainer runs in Python). Every method works on whole batches so a remote trainer pays one
 * round trip per call.
 */
export interface TrainablePolicy extends Policy {
  /** log pi(a|s) of each sample under the current weights. */
  logprobs(samples: readonly PolicySample[], signal?: AbortSignal): Promise<number[]>;
  /**
   * The clipped policy-gradient update shared by GRPO, Dr.GRPO and PPO: for `epochs` passes,
   * shuffled mini-batches, `max(-A r, -A clip(r))` (dual clip optional) with
   * `r = pi_theta / pi_behaviour`, plus `klCoefficient * k3(pi_theta, pi_ref)` minus
   * `entropyCoefficient * H`, gradient norm clipped, one optimiser step per mini-batch.
   */
  update(batch: PolicyUpdateBatch, options: PolicyUpdateOptions): Promise<PolicyUpdateMetrics>;
  /** One pass of behaviour cloning: maximum likelihood of the demonstrated actions. */
  imitate(samples: readonly PolicySample[], options: ImitationOptions): Promise<ImitationMetrics>;
  /** A frozen copy of the current weights (the KL reference); it cannot be updated. */
  snapshot(): Promise<TrainablePolicy>;
  /**
   * Forgets the optimiser's moments, keeping the weights: a new optimisation problem starts.
   * The loop calls it when a run starts, so that RL after behaviour cloning (or from a policy
   * loaded with its optimiser state) is not pushed on by the previous problem's momentum:
   * with Adam, a step whose gradient is zero still moves the weights by the moments it kept.
   */
  resetOptimizer(): Promise<void>;
  /** Writes the weights and the optimiser state into `directory` (created if missing). */
  saveState(directory: string): Promise<void>;
  /** Restores what {@link TrainablePolicy.saveState} wrote; throws a `CheckpointError` on a mismatch. */
  loadState(directory: string): Promise<void>;
  /** Releases what the policy holds (worker processes, models). Idempotent. */
  close?(): Promise<void>;
}

/** Whether `policy` can be trained by the DreamGym loop. */
export function isTrainablePolicy(policy: Policy): policy is TrainablePolicy {
  const candidate = policy as Partial<TrainablePolicy>;
  return (
    typeof candidate.update === 'function' &&
    typeof candidate.logprobs === 'function' &&
    typeof candidate.saveState === 'function'
  );
}
