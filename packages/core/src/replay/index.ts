export { loadFaiss, type VectorIndexConfig } from './faiss-index.js';
export type { RecallMeasurement } from './index-tuning.js';
export type { PhiWeights } from './phi.js';
export type {
  ReplayAddResult,
  ReplayBufferOpenOptions,
  ReplayBufferStats,
  ReplayIndexOptions,
} from './replay-buffer.js';
export type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from './retriever.js';
