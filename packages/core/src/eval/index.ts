export {
  type EvaluateExperienceModelOptions,
  evaluateExperienceModel,
  type FidelityFigures,
  type FidelityReport,
} from './experience-fidelity.js';
export {
  evaluatePolicy,
  type PolicyEvaluation,
  type PolicyEvaluationOptions,
} from './policy-evaluation.js';
export { exactMatch, normalizeStateText, textTokens, tokenF1 } from './text-similarity.js';
