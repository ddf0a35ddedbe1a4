/**
 * `@dreamgym/agents`: train the TypeScript agent you already have (AI SDK, OpenAI Agents JS)
 * in DreamGym, its code unchanged: its model calls captured from its client's `fetch`, a
 * DreamGym environment as its tools, and the model it calls updated by RL.
 *
 * Framework bindings are subpath entries: `@dreamgym/agents/ai-sdk`,
 * `@dreamgym/agents/openai-agents`.
 *
 * @packageDocumentation
 */
export type { AgentRunOptions } from './agent-run-folder.js';
export {
  type AgentEpisodeResult,
  type AgentIterationMetrics,
  AgentTrainer,
  type AgentTrainerOptions,
} from './agent-trainer.js';
export {
  type CapturedToolCall,
  EPISODE_OVER_MESSAGE,
  type ModelCall,
  ModelCallCapture,
  type ModelCallCaptureOptions,
} from './capture.js';
export { EnvironmentEpisode, type EpisodeStep } from './environment-episode.js';
export {
  type EpisodeOutcome,
  episodeOutcome,
  importTraces,
  type TraceImport,
  type TraceImportOptions,
} from './trace-import.js';
