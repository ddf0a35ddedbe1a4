/**
 * `@dreamgym/core`: train LLM agents with reinforcement learning on synthetic experience.
 *
 * The root entry holds what a DreamGym run is made of: the contracts and schemas (tasks,
 * observations, steps, trajectories, transitions, `Environment`, `DomainAdapter`), the errors,
 * the loop and its configuration, the synthetic environment and its embedded experience model,
 * the replay buffer, the curriculum, evaluation and the embedded policy. Everything else is in
 * a subpath entry named after its folder:
 * - `@dreamgym/core/mdp`         JSONL I/O and the rest of the schemas
 * - `@dreamgym/core/models`      chat, embedding and scoring models (OpenAI-compatible clients)
 * - `@dreamgym/core/policy`      policies (`ChatModelPolicy`, the agent prompt and its answer format)
 * - `@dreamgym/core/replay`      the replay buffer's options, index and retrieval types
 * - `@dreamgym/core/rollout`     rollout collection and environment pools
 * - `@dreamgym/core/experience`  experience models, prompts, formats, world memory, the judge's parts
 * - `@dreamgym/core/curriculum`  task pools, values, deduplication, generators
 * - `@dreamgym/core/eval`        evaluation and fidelity measurements
 * - `@dreamgym/core/training`    trainers, advantages, behaviour cloning, exporters, checkpoints
 * - `@dreamgym/core/annotate`    reasoning annotation and SFT export
 * - `@dreamgym/core/testing`     conformance checks and the corridor domain (no test runner);
 *   `@dreamgym/core/testing/vitest` the same checks as vitest suites
 * Helpers the workspace packages share but users do not need are in `@dreamgym/core/internal`,
 * which carries no compatibility promise.
 */
export type {
  DatasetLoader,
  DatasetLoadOptions,
  DomainAdapter,
  DomainDatasets,
  DomainDefaults,
  DomainPrompts,
  ParsedAction,
} from './adapter.js';
export { Curriculum } from './curriculum/curriculum.js';
export { MutationTaskGenerator } from './curriculum/mutation-task-generator.js';
export type { TaskGenerator } from './curriculum/task-generator.js';
export {
  ActionParseError,
  BudgetExhaustedError,
  CheckpointError,
  ConfigError,
  DatasetFormatError,
  DatasetNotFoundError,
  DreamGymError,
  type DreamGymErrorCode,
  EnvironmentError,
  EnvironmentStateError,
  IndexError,
  InvalidArgumentError,
  LockedError,
  ModelError,
  ModelFileError,
  ModelOutputError,
  NotImplementedError,
  type RecordLocation,
  TrainerBackendError,
} from './errors.js';
export { type EvaluationMetrics, wilsonInterval95 } from './eval/evaluation-metrics.js';
export { measureOnPolicyFidelity } from './eval/on-policy-fidelity.js';
export { evaluatePolicy } from './eval/policy-evaluation.js';
export type { ExperienceModel } from './experience/experience-model.js';
export { JudgedExperienceModel } from './experience/judged-experience-model.js';
export { OutcomeJudge } from './experience/outcome-judge.js';
export { RetrievalExperienceModel } from './experience/retrieval-experience-model.js';
export { SyntheticEnvironment } from './experience/synthetic-environment.js';
export type { Environment } from './mdp/environment.js';
export { readJsonl, writeJsonl } from './mdp/jsonl.js';
export {
  type Observation,
  ObservationSchema,
  type Step,
  type StepResult,
  StepResultSchema,
  StepSchema,
  type Task,
  type TaskInput,
  TaskSchema,
  type Trajectory,
  TrajectorySchema,
  type Transition,
  TransitionSchema,
} from './mdp/schemas.js';
export { trajectoryToTransitions } from './mdp/transitions.js';
export type { EmbeddingModel } from './models/embedding-model.js';
export { HashingEmbedder } from './models/hashing-embedder.js';
export { parseOptions } from './parse-options.js';
export { LinearSoftmaxPolicy } from './policy/linear-softmax-policy.js';
export type {
  Policy,
  PolicyContext,
  PolicyDecision,
  TrainablePolicy,
} from './policy/policy.js';
export { type RandomState, SeededRandom } from './random/seeded-random.js';
export { ReplayBuffer, type ReplayBufferOptions } from './replay/replay-buffer.js';
export {
  createLinearSoftmaxPolicy,
  type DreamGymConfig,
  type DreamGymConfigInput,
  DreamGymConfigSchema,
  parseDreamGymConfig,
} from './training/dreamgym-config.js';
export {
  type DreamGymComponents,
  DreamGymLoop,
  type DreamGymLoopOptions,
  type DreamGymResult,
  loadRunPolicy,
} from './training/dreamgym-loop.js';
export type { IterationMetrics } from './training/metrics.js';
export { syntheticEnvironmentFromConfig } from './training/synthetic-environment-from-config.js';
