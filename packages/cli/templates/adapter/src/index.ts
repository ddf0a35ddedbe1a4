/**
 * `@dreamgym/__NAME__`: the DreamGym adapter for __TITLE__. The adapter factory and its
 * options, the dataset loaders, the state mapper, the action grammar, the candidate actions,
 * task mutation and the real-environment connector.
 */

export { parse__PASCAL__Action } from './action-grammar.js';
export {
  __CONSTANT___DOMAIN,
  type __PASCAL__Adapter,
  type __PASCAL__AdapterOptions,
  __PASCAL__AdapterOptionsSchema,
  create__PASCAL__Adapter,
} from './adapter.js';
export { __CAMEL__CandidateActions } from './candidate-actions.js';
export { __CAMEL__TaskLoader, load__PASCAL__Tasks } from './datasets/tasks.js';
export {
  __CAMEL__TrajectoryLoader,
  load__PASCAL__Trajectories,
} from './datasets/trajectories.js';
export { mutate__PASCAL__Task } from './mutate-task.js';
export { __CAMEL__Prompts } from './prompts.js';
export {
  type __PASCAL__RealOptions,
  __PASCAL__RealOptionsSchema,
  connect__PASCAL__Real,
} from './real/connect.js';
export { type __PASCAL__RawObservation, map__PASCAL__Observation } from './state-mapper.js';
