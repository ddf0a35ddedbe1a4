/**
 * `curriculum/`: reward-variance task values (paper Eq. 7), selection of informative
 * tasks, task generators (LLM-backed and the adapter's mutations) with validation and
 * de-duplication, the task pool with lineage, and the `lambda`-bounded batch sampler.
 */
export {
  type CurriculumConfig,
  type CurriculumConfigInput,
  CurriculumConfigSchema,
  type CurriculumGrowth,
  type CurriculumOptions,
  type CurriculumSnapshot,
  parseCurriculumConfig,
} from './curriculum.js';
export {
  LlmTaskGenerator,
  type LlmTaskGeneratorOptions,
  type TaskInstructionValidator,
} from './llm-task-generator.js';
export type { MutationTaskGeneratorOptions } from './mutation-task-generator.js';
export {
  type DeduplicationResult,
  TaskDeduplicator,
  type TaskDeduplicatorOptions,
} from './task-deduplicator.js';
export type {
  TaskGenerationContext,
  TaskRejection,
  TaskRejectionReason,
} from './task-generator.js';
export { TaskPool, type TaskPoolSnapshot, type TaskStats } from './task-pool.js';
export { selectTasksToExpand, type TaskSelectionOptions } from './task-selection.js';
export {
  RewardGroups,
  rewardVariance,
  rolloutGroupsFromTrajectories,
  type TaskRolloutGroup,
  type TaskValue,
  taskValues,
} from './task-value.js';
