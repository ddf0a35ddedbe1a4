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
 * - `@dreamgym/core/policy`      policies (`ChatModelPolicy`, prompts, features, Adam, the PPO loss)
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
export { Curriculum, MutationTaskGenerator, type TaskGenerator } from './curriculum/index.js';
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
export {
  type EvaluationMetrics,
  evaluatePolicy,
  measureOnPolicyFidelity,
  wilsonInterval95,
} from './eval/index.js';
export {
  type ExperienceModel,
  JudgedExperienceModel,
  OutcomeJudge,
  RetrievalExperienceModel,
  SyntheticEnvironment,
} from './experience/index.js';
export {
  type Environment,
  type Observation,
  ObservationSchema,
  readJsonl,
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
  trajectoryToTransitions,
  writeJsonl,
} from './mdp/index.js';
export { type EmbeddingModel, HashingEmbedder } from './models/index.js';
export { parseOptions } from './parse-options.js';
export {
  LinearSoftmaxPolicy,
  type Policy,
  type PolicyContext,
  type PolicyDecision,
  type TrainablePolicy,
} from './policy/index.js';
export { type RandomState, SeededRandom } from './random/seeded-random.js';
export { ReplayBuffer, type ReplayBufferOptions } from './replay/index.js';
export {
  createLinearSoftmaxPolicy,
  type DreamGymComponents,
  type DreamGymConfig,
  type DreamGymConfigInput,
  DreamGymConfigSchema,
  DreamGymLoop,
  type DreamGymLoopOptions,
  type DreamGymResult,
  type IterationMetrics,
  loadRunPolicy,
  parseDreamGymConfig,
  stalledUpdateWarning,
  syntheticEnvironmentFromConfig,
} from './training/index.js';
