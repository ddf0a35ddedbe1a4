/**
 * `@dreamgym/server`: DreamGym's synthetic (and real) environments over Meta's OpenEnv
 * protocol, so Python trainers that consume OpenEnv (TRL, SkyRL, ART, torchforge...) train
 * against them while DreamGym keeps the curriculum and the replay buffer.
 */

export {
  CachingRetriever,
  type CachingRetrieverOptions,
  type RetrievalStats,
} from './caching-retriever.js';
export { DreamGymService, type DreamGymServiceOptions } from './dreamgym-service.js';
export {
  EnvironmentServer,
  type EnvironmentServerOptions,
  type EnvironmentServerSettings,
  EnvironmentServerSettingsSchema,
  type EnvironmentServerStats,
} from './environment-server.js';
export { EpisodeRunner, type EpisodeRunnerOptions } from './episode-runner.js';
export {
  createJsonLogger,
  type JsonLoggerOptions,
  type Logger,
  type LogLevel,
  redactSecrets,
  silentLogger,
} from './logger.js';
export {
  type Action,
  ActionSchema,
  CLOSE_CODES,
  type EnvironmentMetadata,
  EnvironmentMetadataSchema,
  type HttpStepRequest,
  HttpStepRequestSchema,
  type ObservationMetadata,
  ObservationMetadataSchema,
  type ObservationPayload,
  ObservationSchema,
  type ResetParameters,
  ResetParametersSchema,
  StateSchema,
  type StepReply,
  StepReplySchema,
  type WireObservation,
  type WireState,
  WS_ERROR_CODES,
  type WsErrorCode,
  type WsIncomingMessage,
  WsIncomingMessageSchema,
} from './protocol/openenv-messages.js';
export { openApiDocument, schemaDocument } from './protocol/schema-documents.js';
export {
  type EnvironmentLoss,
  isLosable,
  type LosableEnvironment,
  RemoteEnvironment,
  WorkerLostError,
} from './remote-environment.js';
export {
  type EpisodeLogLine,
  EpisodeLogLineSchema,
  parseServeConfig,
  type ServeConfig,
  type ServeConfigInput,
  ServeConfigSchema,
} from './serve-config.js';
export {
  type ServeDreamGymOptions,
  type ServedDreamGym,
  serveDreamGym,
} from './serve-dreamgym.js';
export {
  SharedBuffer,
  type SharedBufferOptions,
  SharedBufferOptionsSchema,
  type SharedBufferStats,
} from './shared-buffer.js';
export type { LanceDbModule } from './shared-buffer-table.js';
export {
  type EpisodeRecord,
  StaticTaskSource,
  type TaskRequest,
  type TaskSource,
} from './task-source.js';
export {
  type ReplicaFactory,
  type ReplicaParts,
  WorkerPool,
  type WorkerPoolOptions,
  type WorkerPoolStats,
} from './worker-pool.js';
export type { WriteBackSettings, WriteBackStats } from './write-back-queue.js';
