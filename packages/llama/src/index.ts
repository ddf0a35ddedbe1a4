/**
 * `@dreamgym/llama`: local GGUF models for DreamGym. A `ChatModel` and `ContinuationScorer`
 * running llama.cpp in process (node-llama-cpp, CPU), an OpenAI-compatible HTTP server for
 * the same model, the model cache with its resolver and downloader, and the trainable LLM
 * policy (`LlmPolicy`: acting through llama.cpp in process or through an inference server,
 * `OpenAICompatibleRuntime`; learning in the torch trainer worker).
 */

export { defaultSystemPromptOf } from './chat-templates.js';
export {
  createLlmPolicy,
  type LlmPolicyFactoryOptions,
  LlmPolicyFactoryOptionsSchema,
  LlmPolicyTrainerSettingsSchema,
  llmPolicyWorkDirectory,
} from './create-llm-policy.js';
export { toGrammarSchema, UnsupportedSchemaError } from './grammar-schema.js';
export {
  LlamaChatModel,
  type LlamaChatRequest,
  type LlamaChatResponse,
} from './llama-chat-model.js';
export {
  type LlamaChatModelOptions,
  LlamaChatModelOptionsSchema,
  type SamplingOptions,
} from './llama-chat-model-options.js';
export type { LlamaChatModelStats, LlamaQueueState } from './llama-engine.js';
export {
  LlamaPolicyRuntime,
  type LlamaPolicyRuntimeOptions,
} from './llama-policy-runtime.js';
export { LlmPolicy } from './llm-policy.js';
export type {
  LlmDecisionRecord,
  LlmPolicyOptions,
  LlmPolicyStats,
  LlmTrainerOptions,
} from './llm-policy-options.js';
export type {
  ExportedWeights,
  LlmRuntime,
  RuntimeGeneration,
  RuntimeToken,
} from './llm-runtime.js';
export { trainerStartParams } from './llm-trainer-client.js';
export {
  cachedModelPath,
  DEFAULT_MODEL_NAME,
  KNOWN_MODELS,
  type KnownModel,
  knownModel,
  modelCacheDirectory,
  type ResolvedModel,
  type ResolveModelOptions,
  resolveModelPath,
} from './model-files.js';
export { type PulledModel, type PullModelOptions, pullModel, sha256OfFile } from './model-pull.js';
export {
  OpenAICompatibleRuntime,
  type OpenAICompatibleRuntimeOptions,
} from './openai-runtime.js';
export { type LlamaServer, type LlamaServerOptions, startLlamaServer } from './openai-server.js';
export type { PromptCompletion, PromptCompletionRequest } from './prompt-completion.js';
export type { GeneratedToken } from './token-generation.js';
export {
  defaultTrainerDirectory,
  defaultTrainerPython,
  TorchTrainerBackend,
  type TorchTrainerBackendOptions,
  type TrainerDescription,
} from './torch-trainer-backend.js';
