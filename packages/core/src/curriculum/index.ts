/**
 * `curriculum/`: reward-variance task values (paper Eq. 7), selection of informative
 * tasks, task generators (LLM-backed and the adapter's mutations) with validation and
 * de-duplication, the task pool with lineage, and the `lambda`-bounded batch sampler.
 */
export {
  Curriculum,
  type CurriculumConfig,
  type CurriculumConfigInput,
  CurriculumConfigSchema,
  type CurriculumGrowth,
  type CurriculumOptions,
  type CurriculumSnapshot,
  CurriculumSnapshotSchema,
  parseCurriculumConfig,
} from './curriculum.js';
export {
  buildTaskGenerationPrompt,
  type GeneratedTasks,
  GeneratedTasksSchema,
  LlmTaskGenerator,
  type LlmTaskGeneratorOptions,
  type TaskInstructionValidator,
} from './llm-task-generator.js';
export {
  MutationTaskGenerator,
  type MutationTaskGeneratorOptions,
} from './mutation-task-generator.js';
export {
  DEFAULT_SIMILARITY_THRESHOLD,
  type DeduplicationResult,
  normalizeInstruction,
  TaskDeduplicator,
  type TaskDeduplicatorOptions,
} from './task-deduplicator.js';
export {
  splitCount,
  type TaskGenerationContext,
  type TaskGenerator,
  type TaskRejection,
  type TaskRejectionReason,
  uniqueTaskId,
} from './task-generator.js';
export {
  type BatchComposition,
  batchComposition,
  TaskPool,
  type TaskPoolSnapshot,
  TaskPoolSnapshotSchema,
  type TaskStats,
  TaskStatsSchema,
} from './task-pool.js';
export {
  compareExpansionCandidates,
  type ExpansionCandidate,
  selectTasksToExpand,
  type TaskSelectionOptions,
} from './task-selection.js';
export {
  RewardGroups,
  rewardVariance,
  rolloutGroupsFromTrajectories,
  type TaskRolloutGroup,
  type TaskValue,
  taskValues,
} from './task-value.js';
