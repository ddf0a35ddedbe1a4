/**
 * `@dreamgym/textworld`: the DreamGym adapter for TextWorld's generated cooking games. The
 * adapter factory and its options, the dataset builder and loaders, the state mapper, the
 * command grammar, the candidate actions, task mutation, the real-engine connector and
 * exploration on it.
 */

export {
  parseTextworldAction,
  TEXTWORLD_ACTION_FORMS,
  TEXTWORLD_DIRECTIONS,
  type TextworldActionType,
} from './action-grammar.js';
export {
  createTextworldAdapter,
  type TextworldAdapter,
  type TextworldAdapterOptions,
  TextworldAdapterOptionsSchema,
} from './adapter.js';
export { mentionedTextworldEntities, textworldCandidateActions } from './candidate-actions.js';
export {
  type BuildTextworldDatasetOptions,
  BuildTextworldDatasetOptionsSchema,
  buildTextworldDataset,
  type TextworldBuildProgress,
  type TextworldDatasetSummary,
} from './datasets/build-dataset.js';
export {
  loadTextworldTasks,
  TEXTWORLD_DOMAIN,
  TEXTWORLD_TASKS_FILE,
  TextworldTaskMetaSchema,
  textworldTaskLoader,
} from './datasets/tasks.js';
export {
  loadTextworldTrajectories,
  TEXTWORLD_EXPERT_FILE,
  textworldTrajectoryLoader,
} from './datasets/trajectories.js';
export { textworldExperienceHints } from './experience-hints.js';
export { mutateTextworldTask } from './mutate-task.js';
export { textworldPrompts } from './prompts.js';
export { connectTextworldReal } from './real/connect.js';
export {
  type ExploreTextworldOptions,
  ExploreTextworldOptionsSchema,
  type ExploreTextworldSummary,
  exploreTextworld,
  TEXTWORLD_EXPLORATION_PERTURBATIONS,
  type TextworldExplorationProgress,
} from './real/explore.js';
export {
  type TextworldRealOptions,
  type TextworldRealOptionsInput,
  TextworldRealOptionsSchema,
} from './real/options.js';
export type { TextworldGameInfo } from './real/protocol-client.js';
export {
  TEXTWORLD_SPLITS,
  TextworldRealEnvironment,
  type TextworldSplit,
  textworldGameOf,
} from './real/textworld-real-environment.js';
export {
  recipeDirections,
  TEXTWORLD_COOKING,
  TEXTWORLD_CUTTING,
  type TextworldIngredient,
  TextworldIngredientSchema,
  textworldInstruction,
} from './recipe.js';
export {
  cleanTextworldText,
  mapTextworldObservation,
  TEXTWORLD_COOKING_OBJECTIVE,
  type TextworldRawObservation,
} from './state-mapper.js';
