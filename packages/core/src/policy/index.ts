/**
 * Policies: the `Policy` contract, the embedded `LinearSoftmaxPolicy` and the LLM-backed
 * `ChatModelPolicy`. The trainable LLM policy (`LlmPolicy`) is `@dreamgym/llama`'s.
 */

export { type AdamConfig, AdamOptimizer, type AdamOptions, resolveAdamOptions } from './adam.js';
export {
  type AgentAnswerFormat,
  type AgentPromptOptions,
  agentAnswerFormat,
  buildAgentMessages,
  formatAgentAnswer,
  locateAgentAnswer,
  parseAgentAnswer,
} from './agent-prompt.js';
export {
  ChatModelPolicy,
  type ChatModelPolicyOptions,
  type ChatModelPolicyStats,
  type InvalidAnswerFallback,
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
