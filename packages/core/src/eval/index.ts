export { type SyntheticToRealGap, wilsonInterval95 } from './evaluation-metrics.js';
export {
  type DisagreementKind,
  type EvaluateExperienceModelOptions,
  evaluateExperienceModel,
  type FidelityFigures,
  type FidelityReport,
  type StepDisagreement,
} from './experience-fidelity.js';
export type {
  OnPolicyEpisodePair,
  OnPolicyFidelityOptions,
  OnPolicyFidelityPhase,
  OnPolicyFidelityProgress,
  OnPolicyFidelityReport,
  ReplayDisagreement,
  SuccessEstimate,
  SyntheticSuccessPrecision,
  SyntheticSuccessReplay,
} from './on-policy-fidelity.js';
export type { PolicyEvaluation, PolicyEvaluationOptions } from './policy-evaluation.js';
export {
  formatPreflight,
  type OfflinePreflight,
  type OnPolicyPreflight,
  onPolicyPreflight,
  type PreflightReport,
  type PreflightThresholds,
  preflightOffline,
  preflightVerdict,
} from './preflight.js';
export { exactMatch, tokenF1 } from './text-similarity.js';
