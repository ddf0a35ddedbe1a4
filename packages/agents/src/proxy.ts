/**
 * `@dreamgym/agents/proxy`: train an agent in any language by its base URL. The recording proxy
 * sits in front of the inference server (the agent's `OPENAI_BASE_URL`) and records every model
 * call with its tokens, by episode; the environment is offered as MCP tools; `ProxyTrainer`
 * runs the agent per episode and makes the same GRPO update as `AgentTrainer` from the records.
 * Needs `@dreamgym/server` (the MCP environment) beside it.
 *
 * @packageDocumentation
 */
export {
  type ProxyRecord,
  ProxyRecordSchema,
  readProxyRecords,
} from './proxy/proxy-records.js';
export {
  type ProxyEpisode,
  type ProxyEpisodeResult,
  type ProxyIterationMetrics,
  ProxyTrainer,
  type ProxyTrainerOptions,
} from './proxy/proxy-trainer.js';
export {
  type RecordingProxy,
  type RecordingProxyOptions,
  startRecordingProxy,
} from './proxy/recording-proxy.js';
