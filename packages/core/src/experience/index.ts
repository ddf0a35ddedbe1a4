export {
  type ActionRefusal,
  type ActionRefusalOptions,
  learnActionRefusal,
  refuses,
} from './action-refusal.js';
export { alignActions, transferEntities } from './entity-transfer.js';
export { type ConsistencyHints, recallFromHistory } from './episode-consistency.js';
export {
  type CompactExperienceFormatOptions,
  type CompactExperienceOutputSchema,
  compactExperienceFormat,
  type ExperiencePromptFormat,
  type ExperienceTarget,
  standardExperienceFormat,
} from './experience-format.js';
export type {
  ExperienceInput,
  ExperiencePrediction,
  InitialStateInput,
} from './experience-model.js';
export {
  GroundedHybridExperienceModel,
  type GroundedHybridExperienceModelOptions,
  type HybridConsultPolicy,
  type HybridContradiction,
} from './grounded-hybrid-experience-model.js';
export type { TokenCounter } from './history-window.js';
export { addToListing, removeFromListing } from './listing.js';
export type {
  OutcomeJudgeEvaluation,
  OutcomeJudgeOptions,
  OutcomeJudgeSummary,
  OutcomeQuery,
  OutcomeVerdict,
} from './outcome-judge.js';
export {
  applyRewardRule,
  type JudgedOutcome,
  type RewardRule,
  RewardRuleSchema,
  rewardRuleOf,
} from './outcome-reward.js';
export {
  ReasoningExperienceModel,
  type ReasoningExperienceModelOptions,
} from './reasoning-experience-model.js';
export {
  emptyRetrievalModelTimings,
  type RetrievalExperienceModelOptions,
  type RetrievalModelTimings,
} from './retrieval-experience-model.js';
export type { SyntheticEnvironmentOptions } from './synthetic-environment.js';
export { WorldMemory, type WorldMemoryOptions } from './world-memory.js';
