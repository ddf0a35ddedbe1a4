export {
  FAISS_BUILD_HELP,
  faissBindingExtended,
  loadFaiss,
  type VectorIndexConfig,
} from './faiss-index.js';
export type { RecallMeasurement } from './index-tuning.js';
export {
  combinePhi,
  DEFAULT_PHI_WEIGHTS,
  embedPhi,
  type PhiInput,
  type PhiWeights,
  phiTexts,
} from './phi.js';
export {
  type ReplayAddResult,
  ReplayBuffer,
  type ReplayBufferOpenOptions,
  type ReplayBufferOptions,
  ReplayBufferOptionsSchema,
  type ReplayBufferStats,
  type ReplayIndexOptions,
  ReplayIndexOptionsSchema,
} from './replay-buffer.js';
export { type ReplayLogEntry, ReplayLogEntrySchema } from './replay-log.js';
export type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from './retriever.js';
