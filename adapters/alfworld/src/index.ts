/**
 * `@dreamgym/alfworld`: the DreamGym adapter for ALFWorld (text household tasks on the
 * TextWorld ALFRED engine): the adapter factory and its options, the state mapper, the
 * command grammar, the dataset loaders and downloader, the task vocabulary, and the
 * real-engine connector.
 */
export {
  ALFWORLD_ACTION_FORMS,
  type AlfworldActionType,
  formatAlfworldAction,
  parseAlfworldAction,
} from './action-grammar.js';
export {
  type AlfworldAdapter,
  type AlfworldAdapterOptions,
  AlfworldAdapterOptionsSchema,
  createAlfworldAdapter,
} from './adapter.js';
export {
  alfworldCandidateActions,
  type CandidateCoverage,
  measureCandidateCoverage,
} from './candidate-actions.js';
export {
  ALFWORLD_GAME_FILES_URL,
  type AlfworldDownloadOptions,
  AlfworldDownloadOptionsSchema,
  downloadAlfworldData,
} from './datasets/download.js';
export {
  type AlfworldExpertRecord,
  AlfworldExpertRecordSchema,
  EXPERT_TRAJECTORIES_FILE,
  loadAlfworldExpertTrajectories,
} from './datasets/expert-trajectories.js';
export { GAME_FILE, loadAlfworldGameTasks } from './datasets/game-files.js';
export { alfworldExperienceHints, compareAlfworldEntities } from './experience-hints.js';
export { mutateAlfworldTask } from './mutate-task.js';
export {
  type AlfworldExpertProgress,
  type AlfworldExpertSummary,
  type GenerateAlfworldExpertOptions,
  GenerateAlfworldExpertOptionsSchema,
  generateAlfworldExpertTrajectories,
} from './real/expert.js';
export {
  AlfworldRealEnvironment,
  type AlfworldRealOptions,
  type AlfworldRealOptionsInput,
  AlfworldRealOptionsSchema,
  connectAlfworldReal,
  type ExploreAlfworldOptions,
  ExploreAlfworldOptionsSchema,
  type ExploreAlfworldSummary,
  exploreAlfworld,
} from './real/index.js';
export {
  ALFWORLD_BANNER,
  type AlfworldRawObservation,
  extractAlfworldTask,
  mapAlfworldObservation,
} from './state-mapper.js';
export {
  ALFWORLD_INSTRUCTION_TEMPLATES,
  ALFWORLD_SPLITS,
  ALFWORLD_TASK_TYPES,
  type AlfworldSplit,
  type AlfworldTaskType,
} from './task-types.js';
export {
  type AlfworldVocabulary,
  AlfworldVocabularySchema,
  buildAlfworldVocabulary,
  loadAlfworldVocabulary,
  loadAlfworldVocabularySync,
} from './vocabulary.js';
