/**
 * The state of one replay buffer that its parts share: what it holds (contents, index,
 * recall measurement), the settings they were built with, and where its files stand.
 * `ReplayBuffer` owns one; the loading, adding, index, recall and persistence functions
 * beside it take it explicitly and update it in place.
 */
import type { JsonlWriter } from '../mdp/jsonl.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { BufferContents } from './buffer-contents.js';
import { bufferPath, FILES, type StoredIndex } from './buffer-files.js';
import type { FaissVectorIndex } from './faiss-index.js';
import type { QuerySample, RecallMeasurement } from './index-tuning.js';
import type { PhiWeights } from './phi.js';
import type { ReplayLogEntrySchema } from './replay-log.js';

/** One buffer's shared state (see the module comment). */
export interface BufferState {
  readonly embedder: EmbeddingModel;
  readonly dimension: number;
  /** OpenMP threads faiss uses for batch work. */
  readonly threads: number;
  /** Queries sampled per recall measurement. */
  readonly recallQueries: number;
  /** A sample of the queries served, for measuring recall on what is really asked. */
  readonly served: QuerySample;
  readonly warn: (message: string) => void;

  indexSettings: StoredIndex;
  phiWeights: PhiWeights;
  contents: BufferContents;
  index: FaissVectorIndex | undefined;
  recall: RecallMeasurement | undefined;
  /** The next slot FIFO eviction looks at. */
  evictCursor: number;

  /** Directory of a persistent buffer (undefined: in memory only). */
  directory: string | undefined;
  readOnly: boolean;
  writer: JsonlWriter<typeof ReplayLogEntrySchema> | undefined;
  /** Lines of the record log (the next entry's line is one more). */
  logLines: number;
  /** Rows of `vectors.f32` / `index.faiss`, and slots of `rows.i32`, on disk. */
  flushedRows: number;
  flushedSlots: number;
}

/** Path of one of a persistent buffer's files. */
export function statePath(state: BufferState, name: keyof typeof FILES): string {
  return bufferPath(state.directory!, name);
}

/** The record log's path (its bare name, as slots cite it, for a buffer in memory). */
export function recordsFile(state: Pick<BufferState, 'directory'>): string {
  return state.directory ? bufferPath(state.directory, 'records') : FILES.records;
}

/** Empty contents for the buffer's current directory and phi weights. */
export function emptyContents(
  state: Pick<BufferState, 'directory' | 'phiWeights' | 'dimension'>,
): BufferContents {
  return new BufferContents(recordsFile(state), state.phiWeights.instruction > 0, state.dimension);
}
