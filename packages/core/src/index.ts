/**
 * `@dreamgym/core`: train LLM agents with reinforcement learning on synthetic experience.
 *
 * One folder per concept of the DreamGym paper:
 * - `mdp/`        tasks, observations, steps, trajectories, transitions, `Environment`, JSONL I/O
 * - `adapter.ts`  `DomainAdapter`, what a benchmark domain provides
 * - `random/`     the seeded random generator every stochastic component takes
 * - `errors.ts`   the `DreamGymError` hierarchy
 *
 * Helpers the workspace packages share but users do not need (`Semaphore`, `extractJson`,
 * `writeFileAtomic`, `normalizeInPlace`) are in `@dreamgym/core/internal`, which carries no
 * compatibility promise.
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
export * from './annotate/index.js';
export * from './curriculum/index.js';
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
export * from './eval/index.js';
export * from './experience/index.js';
export * from './mdp/index.js';
export * from './models/index.js';
export { parseOptions } from './parse-options.js';
export * from './policy/index.js';
export { type RandomState, SeededRandom } from './random/seeded-random.js';
export * from './replay/index.js';
export * from './rollout/index.js';
export * from './training/index.js';
