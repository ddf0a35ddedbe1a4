/**
 * `@dreamgym/test-support`: test doubles the `@dreamgym/*` packages share in their tests.
 * Private: never published, no compatibility promise.
 */
export {
  deterministicEmbedding,
  splitIntoTokens,
} from './default-replies.js';
export {
  openAICompatibleServerPool,
  startOpenAICompatibleServer,
} from './openai-compatible-server.js';
export type {
  ChatMessageReply,
  ChatReply,
  ChatResponder,
  DropReply,
  EmbeddingsReply,
  EmbeddingsResponder,
  EmbeddingsVectorsReply,
  ErrorReply,
  OpenAICompatibleServer,
  OpenAICompatibleServerOptions,
  RawReply,
  ReceivedChatMessage,
  ReceivedChatRequest,
  ReceivedEmbeddingsRequest,
  ReceivedResponseFormat,
  RecordedRequest,
  RejectionStyle,
  ReplyTiming,
  ReplyUsage,
  ResponseFormatSupport,
  ServerCapabilities,
} from './scripted-replies.js';
export { type WorkspacePackage, workspacePackages } from './workspace-sources.js';
