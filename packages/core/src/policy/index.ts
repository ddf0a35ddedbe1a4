/**
 * Policies: the `Policy` contract, the embedded `LinearSoftmaxPolicy` and the LLM-backed
 * `ChatModelPolicy`.
 */

export { type AdamConfig, AdamOptimizer, type AdamOptions, resolveAdamOptions } from './adam.js';
export {
  type AgentPromptOptions,
  buildAgentMessages,
  extractTaggedAction,
  formatAgentAction,
} from './agent-prompt.js';
export {
  ChatModelPolicy,
  type ChatModelPolicyOptions,
  type ChatModelPolicyStats,
  type InvalidActionFallback,
  spanLogprob,
} from './chat-model-policy.js';
export {
  LinearSoftmaxPolicy,
  type LinearSoftmaxPolicyHeader,
  type LinearSoftmaxPolicyOptions,
  type LinearSoftmaxPolicyState,
  type PreparedDecision,
} from './linear-softmax-policy.js';
export {
  type LlmDecisionRecord,
  LlmPolicy,
  type LlmPolicyOptions,
  type LlmPolicyStats,
  type LlmTrainerOptions,
} from './llm-policy.js';
export {
  buildLlmPolicyMessages,
  formatLlmPolicyAnswer,
  type LlmActionFormat,
  type LlmPolicyPromptOptions,
  parseLlmPolicyAnswer,
} from './llm-policy-prompt.js';
export type {
  ExportedWeights,
  LlmRuntime,
  RuntimeGeneration,
  RuntimeToken,
} from './llm-runtime.js';
export {
  candidateActionsOf,
  type ImitationMetrics,
  type ImitationOptions,
  isTrainablePolicy,
  type Policy,
  type PolicyContext,
  type PolicyDecision,
  type PolicySample,
  type PolicyUpdateBatch,
  type PolicyUpdateMetrics,
  type PolicyUpdateOptions,
  type TrainablePolicy,
} from './policy.js';
export { entropyOf, logSoftmax, softmaxLogitGradient } from './softmax.js';
