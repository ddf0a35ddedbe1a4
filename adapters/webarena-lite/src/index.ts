/**
 * `@dreamgym/webarena-lite`: the DreamGym adapter for WebArena-Lite (165 tasks on
 * self-hosted shop, shop admin, GitLab, forum and map sites): the adapter factory and its
 * options, the config and trajectory loaders, the evaluator (`evaluateWebarenaTask`:
 * `string_match`, `url_match`, `program_html`), task mutation, and the real connector on
 * `@dreamgym/browser`.
 */
export {
  createWebarenaLiteAdapter,
  type WebarenaLiteAdapter,
  type WebarenaLiteAdapterOptions,
} from './adapter.js';
export {
  type EvaluationSpec,
  type ProgramHtmlCheck,
  type ReferenceAnswers,
  type WebarenaConfig,
  WebarenaConfigSchema,
} from './config/config-schema.js';
export {
  resolvePlaceholders,
  WEBARENA_SITES,
  type WebarenaSite,
  type WebarenaSites,
  WebarenaSitesSchema,
} from './config/sites.js';
export { downloadWebarenaLiteData, WEBARENA_LITE_CONFIG_URL } from './datasets/download.js';
export {
  loadWebarenaTasks,
  WEBARENA_LITE_CONFIG_FILE,
  WEBARENA_LITE_DOMAIN,
  webarenaConfigToTask,
  webarenaTaskId,
  webarenaTaskLoader,
} from './datasets/task-configs.js';
export { loadWebarenaTrajectories, webarenaTrajectoryLoader } from './datasets/trajectories.js';
export { evaluateWebarenaTask, type WebarenaEvaluationInput } from './evaluation/evaluate-task.js';
export type { EvaluationCheck, TaskEvaluation } from './evaluation/evaluation-result.js';
export { type WebarenaAccounts, WebarenaAccountsSchema } from './evaluation/helper-functions.js';
export { exactMatch } from './evaluation/text-matching.js';
export {
  buildWebarenaTemplateVocabulary,
  loadWebarenaTemplateVocabularySync,
  mutateWebarenaTask,
  type WebarenaTemplateVocabulary,
} from './mutate-task.js';
export { webarenaLitePrompts } from './prompts.js';
export { connectWebarenaLiteReal, storageStatePath } from './real/connect.js';
export type { WebarenaRealOptions, WebarenaRealSetup } from './real/options.js';
export { mapWebarenaObservation, type WebarenaRawObservation } from './state-mapper.js';
