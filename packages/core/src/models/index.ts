export type {
  ChatMessage,
  ChatModel,
  ChatModelStats,
  ChatRequest,
  ChatResponse,
  StructuredChatRequest,
  StructuredChatResponse,
  TokenLogprob,
  TokenUsage,
} from './chat-model.js';
export { type ChatMLOptions, formatChatMLPrompt } from './chat-template.js';
export {
  type ContinuationScore,
  type ContinuationScorer,
  rankContinuations,
  type ScoreRequest,
  type ScoreResponse,
} from './continuation-scorer.js';
export type { EmbeddingModel } from './embedding-model.js';
export {
  HashingEmbedder,
  type HashingEmbedderOptions,
  HashingEmbedderOptionsSchema,
} from './hashing-embedder.js';
export type { ModelClientDependencies } from './model-transport.js';
export {
  isResponseFormatRejection,
  OpenAICompatibleChatModel,
  type ResponseJsonSchema,
  toResponseJsonSchema,
} from './openai-compatible-chat-model.js';
export {
  type EmbeddingModelStats,
  OpenAICompatibleEmbeddingModel,
} from './openai-compatible-embedding-model.js';
export {
  type OpenAICompatibleChatModelOptions,
  OpenAICompatibleChatModelOptionsSchema,
  type OpenAICompatibleClientOptions,
  OpenAICompatibleClientOptionsSchema,
  type OpenAICompatibleEmbeddingModelOptions,
  OpenAICompatibleEmbeddingModelOptionsSchema,
  type StructuredOutputMode,
  StructuredOutputModeSchema,
} from './openai-compatible-options.js';
export {
  continuationTokens,
  OpenAICompatibleScorer,
  type OpenAICompatibleScorerOptions,
  OpenAICompatibleScorerOptionsSchema,
} from './openai-compatible-scorer.js';
