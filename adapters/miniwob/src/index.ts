/**
 * `@dreamgym/miniwob`: the DreamGym adapter for MiniWoB++, web tasks on the real task pages
 * of the `miniwob` package with the tasks' own rewards, through `@dreamgym/browser`. The
 * adapter factory and its options, the dataset loaders and builder, the state mapper, the
 * action grammar (the web grammar with element notes), the candidate actions, task mutation
 * and the real environment.
 */
export {
  type MiniwobAction,
  NOTE_SEPARATOR,
  parseMiniwobAction,
} from './action-grammar.js';
export {
  createMiniwobAdapter,
  type MiniwobAdapter,
  type MiniwobAdapterOptions,
  MiniwobAdapterOptionsSchema,
} from './adapter.js';
export { elementNote, instructionLine, miniwobCandidateActions } from './candidate-actions.js';
export {
  type BuildMiniwobDatasetOptions,
  buildMiniwobDataset,
  type MiniwobDatasetSummary,
  recordMiniwobInstances,
} from './datasets/build-dataset.js';
export {
  MINIWOB_EVAL_SEED_OFFSET,
  MINIWOB_EXPERIMENT_TASKS,
  miniwobSeeds,
  miniwobSplitOf,
  miniwobTaskId,
} from './datasets/task-list.js';
export {
  loadMiniwobTasks,
  MINIWOB_DOMAIN,
  MINIWOB_TASKS_FILE,
  MiniwobTaskMetaSchema,
  miniwobTaskLoader,
} from './datasets/tasks.js';
export {
  loadMiniwobTrajectories,
  miniwobTrajectoryFiles,
  miniwobTrajectoryLoader,
  parseMiniwobTrajectory,
} from './datasets/trajectories.js';
export {
  buildMiniwobVocabulary,
  loadMiniwobVocabularySync,
  type MiniwobVocabulary,
  mutateMiniwobTask,
} from './mutate-task.js';
export { miniwobPrompts } from './prompts.js';
export {
  connectMiniwobReal,
  MiniwobEnvironment,
  type MiniwobRealOptions,
  type MiniwobRealOptionsInput,
  MiniwobRealOptionsSchema,
  type MiniwobRealSetup,
} from './real/connect.js';
export {
  type MiniwobRawObservation,
  mapMiniwobObservation,
  normalizeMiniwobText,
} from './state-mapper.js';
