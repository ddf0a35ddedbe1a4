/**
 * `@dreamgym/llama`: local GGUF models for DreamGym. A `ChatModel` and `ContinuationScorer`
 * running llama.cpp in process (node-llama-cpp, CPU), an OpenAI-compatible HTTP server for
 * the same model, the model cache with its resolver and downloader, and the trainable LLM
 * policy (`LlmPolicy`: acting through llama.cpp in process or through an inference server,
 * `OpenAICompatibleRuntime`; learning in the torch trainer worker).
 */

export {
  createLlmPolicy,
  type LlmPolicyFactoryOptions,
  llmPolicyWorkDirectory,
} from './create-llm-policy.js';
export { UnsupportedSchemaError } from './grammar-schema.js';
export {
  LlamaChatModel,
  type LlamaChatRequest,
  type LlamaChatResponse,
} from './llama-chat-model.js';
export type { LlamaChatModelOptions, SamplingOptions } from './llama-chat-model-options.js';
export type { LlamaChatModelStats } from './llama-engine.js';
export { LlamaPolicyRuntime, type LlamaPolicyRuntimeOptions } from './llama-policy-runtime.js';
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
  DEFAULT_MODEL_NAME,
  KNOWN_MODELS,
  type KnownModel,
  modelCacheDirectory,
  type ResolvedModel,
  type ResolveModelOptions,
  resolveModelPath,
} from './model-files.js';
export { type PulledModel, type PullModelOptions, pullModel } from './model-pull.js';
export { OpenAICompatibleRuntime, type OpenAICompatibleRuntimeOptions } from './openai-runtime.js';
export { type LlamaServer, type LlamaServerOptions, startLlamaServer } from './openai-server.js';
export type { PromptCompletion, PromptCompletionRequest } from './prompt-completion.js';
export { TorchTrainerBackend, type TorchTrainerBackendOptions } from './torch-trainer-backend.js';
