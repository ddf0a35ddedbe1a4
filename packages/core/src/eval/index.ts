export {
  type EvaluationMetrics,
  type EvaluationMetricsInput,
  EvaluationMetricsSchema,
  type SyntheticToRealGap,
  SyntheticToRealGapSchema,
  wilsonInterval95,
} from './evaluation-metrics.js';
export {
  type DisagreementKind,
  type EvaluateExperienceModelOptions,
  evaluateExperienceModel,
  type FidelityFigures,
  type FidelityReport,
  type StepDisagreement,
} from './experience-fidelity.js';
export {
  measureOnPolicyFidelity,
  type OnPolicyEpisodePair,
  type OnPolicyFidelityOptions,
  type OnPolicyFidelityPhase,
  type OnPolicyFidelityProgress,
  type OnPolicyFidelityReport,
  type ReplayDisagreement,
  type SuccessEstimate,
  type SyntheticSuccessPrecision,
  type SyntheticSuccessReplay,
} from './on-policy-fidelity.js';
export {
  evaluatePolicy,
  type PolicyEvaluation,
  type PolicyEvaluationOptions,
} from './policy-evaluation.js';
export {
  DEFAULT_PREFLIGHT_THRESHOLDS,
  formatPreflight,
  type OfflinePreflight,
  type OnPolicyPreflight,
  onPolicyPreflight,
  type PreflightReport,
  type PreflightThresholds,
  preflightOffline,
  preflightVerdict,
} from './preflight.js';
export { exactMatch, normalizeStateText, textTokens, tokenF1 } from './text-similarity.js';
