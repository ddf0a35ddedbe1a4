export {
  canFork,
  type Environment,
  type ForkableEnvironment,
  forkEnvironment,
} from './environment.js';
export type { GoalCheckInput } from './goal-check.js';
export {
  formatFieldPath,
  type JsonlLine,
  type JsonlLineSpan,
  JsonlWriter,
  parseRecord,
  readJsonl,
  readJsonlLines,
  writeJsonl,
} from './jsonl.js';
export type {
  ExpertGenerationOptions,
  ExpertGenerationProgress,
  ExpertGenerationSummary,
  ExplorationOptions,
  ExplorationProgress,
  ExplorationSummary,
} from './offline-data.js';
export {
  type ExperienceSource,
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
  type TrajectoryInput,
  TrajectorySchema,
  type Transition,
  TransitionSchema,
} from './schemas.js';
export { worldOf } from './task-world.js';
export { trajectoryToTransitions } from './transitions.js';
