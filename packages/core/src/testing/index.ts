/**
 * `@dreamgym/core/testing`: the conformance suite every environment and adapter runs,
 * and a tiny reference domain for tests and examples.
 */
export {
  type AdapterConformanceOptions,
  adapterConformanceChecks,
  type ConformanceCheck,
  ConformanceFailure,
  type EnvironmentConformanceOptions,
  environmentConformanceChecks,
  type MalformedDatasetCase,
} from './conformance.js';
export {
  CorridorEnvironment,
  type CorridorEnvironmentOptions,
  type CorridorPlayOptions,
  corridorTask,
  corridorTasks,
  createCorridorAdapter,
  optimalCorridorAction,
  playCorridor,
} from './corridor-domain.js';
export {
  type DescribeConformanceOptions,
  describeAdapterConformance,
  describeEnvironmentConformance,
  describeTrainablePolicyConformance,
} from './describe-conformance.js';
export {
  type ChatMessageReply,
  type ChatReply,
  type ChatResponder,
  type DropReply,
  deterministicEmbedding,
  type EmbeddingsReply,
  type EmbeddingsResponder,
  type EmbeddingsVectorsReply,
  type ErrorReply,
  type OpenAICompatibleServer,
  type OpenAICompatibleServerOptions,
  openAICompatibleServerPool,
  type RawReply,
  type ReceivedChatMessage,
  type ReceivedChatRequest,
  type ReceivedEmbeddingsRequest,
  type ReceivedResponseFormat,
  type RecordedRequest,
  type RejectionStyle,
  type ReplyTiming,
  type ReplyUsage,
  type ResponseFormatSupport,
  type ServerCapabilities,
  splitIntoTokens,
  startOpenAICompatibleServer,
} from './openai-compatible-server.js';
export {
  corridorConformanceSamples,
  type TrainablePolicyConformanceOptions,
  trainablePolicyConformanceChecks,
} from './trainable-policy-conformance.js';
