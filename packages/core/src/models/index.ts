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
export type { EmbeddingModel } from './embedding-model.js';
