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
export type { HashingEmbedderOptions } from './hashing-embedder.js';
export type { ModelClientDependencies } from './model-transport.js';
export {
  OpenAICompatibleChatModel,
  type ResponseJsonSchema,
  toResponseJsonSchema,
} from './openai-compatible-chat-model.js';
export {
  type EmbeddingModelStats,
  OpenAICompatibleEmbeddingModel,
} from './openai-compatible-embedding-model.js';
export type {
  OpenAICompatibleChatModelOptions,
  OpenAICompatibleClientOptions,
  OpenAICompatibleEmbeddingModelOptions,
  StructuredOutputMode,
} from './openai-compatible-options.js';
export {
  OpenAICompatibleScorer,
  type OpenAICompatibleScorerOptions,
} from './openai-compatible-scorer.js';
