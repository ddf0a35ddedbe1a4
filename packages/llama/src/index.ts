/**
 * `@dreamgym/llama`: local GGUF models for DreamGym. A `ChatModel` and `ContinuationScorer`
 * running llama.cpp in process (node-llama-cpp, CPU), an OpenAI-compatible HTTP server for
 * the same model, and the model cache with its resolver and downloader.
 */
export {
  createLlmPolicy,
  type LlmPolicyFactoryOptions,
  LlmPolicyFactoryOptionsSchema,
  LlmPolicyTrainerSettingsSchema,
  llmPolicyWorkDirectory,
} from './create-llm-policy.js';
export { toGrammarSchema, UnsupportedSchemaError } from './grammar-schema.js';
export {
  defaultSystemPromptOf,
  type GeneratedToken,
  LlamaChatModel,
  type LlamaChatModelOptions,
  LlamaChatModelOptionsSchema,
  type LlamaChatModelStats,
  type LlamaChatRequest,
  type LlamaChatResponse,
  type PromptCompletion,
  type PromptCompletionRequest,
  type SamplingOptions,
} from './llama-chat-model.js';
export {
  LlamaPolicyRuntime,
  type LlamaPolicyRuntimeOptions,
} from './llama-policy-runtime.js';
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
export { type LlamaServer, type LlamaServerOptions, startLlamaServer } from './openai-server.js';
