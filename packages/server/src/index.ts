/**
 * `@dreamgym/server`: DreamGym's synthetic (and real) environments over Meta's OpenEnv
 * protocol, so Python trainers that consume OpenEnv (TRL, SkyRL, ART, torchforge...) train
 * against them while DreamGym keeps the curriculum and the replay buffer.
 */

export { DreamGymService, type DreamGymServiceOptions } from './dreamgym-service.js';
export {
  EnvironmentServer,
  type EnvironmentServerOptions,
  type EnvironmentServerSettings,
  EnvironmentServerSettingsSchema,
  type EnvironmentServerStats,
} from './environment-server.js';
export {
  createJsonLogger,
  type JsonLoggerOptions,
  type Logger,
  type LogLevel,
  silentLogger,
} from './logger.js';
export {
  type Action,
  type EnvironmentMetadata,
  type ObservationMetadata,
  type ObservationPayload,
  ObservationSchema,
  type ResetParameters,
  type StepReply,
  type WireObservation,
  type WireState,
} from './protocol/openenv-messages.js';
export { RemoteEnvironment, WorkerLostError } from './remote-environment.js';
export {
  type EpisodeLogLine,
  parseServeConfig,
  type ServeConfig,
  type ServeConfigInput,
  ServeConfigSchema,
} from './serve-config.js';
export { type ServeDreamGymOptions, type ServedDreamGym, serveDreamGym } from './serve-dreamgym.js';
export { SharedBuffer, type SharedBufferOptions, type SharedBufferStats } from './shared-buffer.js';
export {
  type EpisodeRecord,
  StaticTaskSource,
  type TaskRequest,
  type TaskSource,
} from './task-source.js';
export type { WriteBackSettings, WriteBackStats } from './write-back-queue.js';
