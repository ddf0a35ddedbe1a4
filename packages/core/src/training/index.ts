/**
 * Training: rollout collection, advantage estimators, the PPO loss, `GrpoTrainer`,
 * `PpoTrainer`, and exporters of rollouts with advantages for Python trainers.
 */

export {
  clippedSurrogate,
  k3KlDivergence,
  type PpoLossOptions,
  ppoStepLoss,
  resolvePpoLossOptions,
} from '../policy/ppo-loss.js';
export {
  broadcastToSteps,
  discountedReturns,
  drGrpoAdvantages,
  gaeAdvantages,
  groupNormalizedAdvantages,
  grpoAdvantages,
  weighEpisodesAlike,
  whiten,
} from './advantages.js';
export {
  type BehaviourCloningEpoch,
  type BehaviourCloningOptions,
  type BehaviourCloningResult,
  cloneBehaviour,
  demonstrationSamples,
} from './behaviour-cloning.js';
export type { CheckpointSelectionResult } from './checkpoint-selection.js';
export {
  type CheckpointFolders,
  type CheckpointParts,
  CheckpointStore,
  type LoadedCheckpoint,
} from './checkpoint-store.js';
export { type BehaviourCloningConfig, BehaviourCloningConfigSchema } from './dreamgym-config.js';
export {
  type ArtTrajectoryGroupRecord,
  ArtTrajectoryGroupRecordSchema,
  type ExportOptions,
  exportArt,
  exportTrl,
  exportVerl,
  type TrlStepRecord,
  TrlStepRecordSchema,
  toArtRecords,
  toTrlRecords,
  toVerlRecords,
  type VerlStepRecord,
  VerlStepRecordSchema,
} from './exporters.js';
export {
  type ForkCreditOptions,
  type ForkCreditSettings,
  ForkedStates,
  type ForkPlayOptions,
  type ForkValues,
  forkAdvantages,
  forkCreditSettings,
} from './fork-credit.js';
export { GrpoTrainer, type GrpoTrainerOptions } from './grpo-trainer.js';
export {
  LinearValueFunction,
  type LinearValueFunctionOptions,
  type LinearValueFunctionState,
} from './linear-value-function.js';
export type { StartEvaluation } from './loop-evaluation.js';
export { IterationMetricsSchema } from './metrics.js';
export {
  type AdvantageEstimate,
  PolicyGradientTrainer,
  type PolicyGradientTrainerOptions,
  type ScoredRollout,
  type StepValues,
  type TrainerStep,
  type TrainerStepOptions,
  type TrainingSample,
  type UpdateMetrics,
} from './policy-gradient-trainer.js';
export { PpoTrainer, type PpoTrainerOptions } from './ppo-trainer.js';
export { BudgetedEnvironment, RealTransitionBudget } from './sim-to-real.js';
export type { SyntheticEnvironmentParts } from './synthetic-environment-from-config.js';
