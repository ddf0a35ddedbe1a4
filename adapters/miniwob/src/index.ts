/**
 * `@dreamgym/miniwob`: the DreamGym adapter for MiniWoB++. The adapter factory and its
 * options, the dataset loaders, the state mapper, the action grammar, the candidate actions,
 * task mutation and the real-environment connector.
 */

export { parseMiniwobAction } from './action-grammar.js';
export {
  createMiniwobAdapter,
  MINIWOB_DOMAIN,
  type MiniwobAdapter,
  type MiniwobAdapterOptions,
  MiniwobAdapterOptionsSchema,
} from './adapter.js';
export { miniwobCandidateActions } from './candidate-actions.js';
export { loadMiniwobTasks, miniwobTaskLoader } from './datasets/tasks.js';
export {
  loadMiniwobTrajectories,
  miniwobTrajectoryLoader,
} from './datasets/trajectories.js';
export { mutateMiniwobTask } from './mutate-task.js';
export { miniwobPrompts } from './prompts.js';
export {
  connectMiniwobReal,
  type MiniwobRealOptions,
  MiniwobRealOptionsSchema,
} from './real/connect.js';
export { type MiniwobRawObservation, mapMiniwobObservation } from './state-mapper.js';
