export {
  type ActionRefusal,
  type ActionRefusalOptions,
  learnActionRefusal,
  type RefusalAnswer,
  refusalObservation,
  refuses,
} from './action-refusal.js';
export {
  type ActionAlignment,
  alignActions,
  alignActionTokens,
  type EntityPair,
  parseActionByTokens,
  transferEntities,
} from './entity-transfer.js';
export {
  type ConsistencyHints,
  type Recollection,
  recallFromHistory,
} from './episode-consistency.js';
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
  ExperienceModel,
  ExperiencePrediction,
  InitialStateInput,
} from './experience-model.js';
export {
  buildExperiencePrompt,
  buildInitialStatePrompt,
  type ExperiencePrompt,
  type ExperienceStepOutput,
  ExperienceStepOutputSchema,
  InitialStateOutputSchema,
  type PromptBudget,
} from './experience-prompt.js';
export {
  GroundedHybridExperienceModel,
  type GroundedHybridExperienceModelOptions,
  type HybridConsultPolicy,
  type HybridContradiction,
} from './grounded-hybrid-experience-model.js';
export {
  estimateTokens,
  formatHistoryStep,
  type HistoryWindow,
  selectHistoryWindow,
  type TokenCounter,
} from './history-window.js';
export { JudgedExperienceModel } from './judged-experience-model.js';
export { addToListing, type ListingStyle, mentionsEntity, removeFromListing } from './listing.js';
export { outcomeFacts } from './outcome-facts.js';
export {
  OutcomeJudge,
  type OutcomeJudgeEvaluation,
  type OutcomeJudgeOptions,
  type OutcomeJudgeSummary,
  type OutcomeQuery,
  type OutcomeVerdict,
} from './outcome-judge.js';
export {
  applyRewardRule,
  type JudgedOutcome,
  type RewardRule,
  type RewardRuleInput,
  RewardRuleSchema,
} from './outcome-reward.js';
export {
  ReasoningExperienceModel,
  type ReasoningExperienceModelOptions,
} from './reasoning-experience-model.js';
export {
  emptyRetrievalModelTimings,
  instructionOverlap,
  RetrievalExperienceModel,
  type RetrievalExperienceModelOptions,
  type RetrievalModelTimings,
} from './retrieval-experience-model.js';
export {
  SyntheticEnvironment,
  type SyntheticEnvironmentOptions,
} from './synthetic-environment.js';
export { WorldMemory, type WorldMemoryOptions } from './world-memory.js';
