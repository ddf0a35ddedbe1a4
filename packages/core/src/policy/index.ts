/**
 * Policies beyond the root entry's `Policy` contract and embedded `LinearSoftmaxPolicy`
 * (import those from `@dreamgym/core`): the LLM-backed `ChatModelPolicy`, the agent prompt and
 * its answer format, the update types. The trainable LLM policy (`LlmPolicy`) is
 * `@dreamgym/llama`'s.
 */

export type { AdamOptions } from './adam.js';
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
} from './chat-model-policy.js';
export type {
  LinearSoftmaxPolicyOptions,
  LinearSoftmaxPolicyState,
  PolicyFeatureSet,
} from './linear-softmax-policy.js';
export {
  candidateActionsOf,
  type ImitationMetrics,
  type ImitationOptions,
  isTrainablePolicy,
  type PolicySample,
  type PolicyUpdateBatch,
  type PolicyUpdateMetrics,
  type PolicyUpdateOptions,
} from './policy.js';
