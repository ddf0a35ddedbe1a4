/**
 * `@dreamgym/webarena-lite`: the DreamGym adapter for WebArena-Lite (165 tasks on
 * self-hosted shop, shop admin, GitLab, forum and map sites): the adapter factory and its
 * options, the config and trajectory loaders, the evaluators (`string_match`, `url_match`,
 * `program_html`), task mutation, and the real connector on `@dreamgym/browser`.
 */
export {
  createWebarenaLiteAdapter,
  type WebarenaLiteAdapter,
  type WebarenaLiteAdapterOptions,
  WebarenaLiteAdapterOptionsSchema,
} from './adapter.js';
export {
  type EvaluationSpec,
  EvaluationSpecSchema,
  type ProgramHtmlCheck,
  ProgramHtmlCheckSchema,
  type ReferenceAnswers,
  ReferenceAnswersSchema,
  type WebarenaConfig,
  WebarenaConfigSchema,
} from './config/config-schema.js';
export { type JsonWithLines, parseJsonWithLines } from './config/json-with-lines.js';
export {
  resolvePlaceholders,
  resolvePlaceholdersDeep,
  sitesIn,
  unknownPlaceholders,
  WEBARENA_SITES,
  type WebarenaSite,
  type WebarenaSites,
  type WebarenaSitesInput,
  WebarenaSitesSchema,
} from './config/sites.js';
export { downloadWebarenaLiteData, WEBARENA_LITE_CONFIG_URL } from './datasets/download.js';
export {
  type LocatedConfig,
  loadWebarenaTasks,
  readWebarenaConfigFile,
  WEBARENA_LITE_CONFIG_FILE,
  WEBARENA_LITE_DOMAIN,
  webarenaConfigFiles,
  webarenaConfigToTask,
  webarenaTaskId,
  webarenaTaskLoader,
} from './datasets/task-configs.js';
export {
  loadWebarenaTrajectories,
  parseWebarenaTrajectory,
  webarenaTrajectoryFiles,
  webarenaTrajectoryLoader,
} from './datasets/trajectories.js';
export { evaluateWebarenaTask, type WebarenaEvaluationInput } from './evaluation/evaluate-task.js';
export {
  combineChecks,
  type EvaluationCheck,
  type TaskEvaluation,
} from './evaluation/evaluation-result.js';
export {
  type HelperArgument,
  type HelperCall,
  parseHelperCall,
  WEBARENA_HELPER_FUNCTIONS,
  type WebarenaHelperFunction,
} from './evaluation/helper-call.js';
export {
  gitlabProjectMemberRole,
  type HelperContext,
  redditPostUrl,
  runHelperCall,
  shoppingLatestOrderUrl,
  shoppingLatestReviewAuthor,
  shoppingLatestReviewRating,
  type WebarenaAccounts,
  type WebarenaAccountsInput,
  WebarenaAccountsSchema,
} from './evaluation/helper-functions.js';
export { judgeFuzzyMatch, judgeUnachievableReason } from './evaluation/judge.js';
export { evaluateProgramHtml, type ProgramHtmlContext } from './evaluation/program-html.js';
export { evaluateStringMatch, type StringMatchInput } from './evaluation/string-match.js';
export {
  cleanAnswer,
  exactMatch,
  mustExclude,
  mustInclude,
  mustIncludeAny,
  satisfiesCondition,
  wordTokens,
} from './evaluation/text-matching.js';
export { evaluateUrlMatch, urlMatches } from './evaluation/url-match.js';
export {
  buildWebarenaTemplateVocabulary,
  loadWebarenaTemplateVocabularySync,
  mutateWebarenaTask,
  type WebarenaTemplateVocabulary,
} from './mutate-task.js';
export { webarenaLitePrompts } from './prompts.js';
export { connectWebarenaLiteReal, storageStatePath } from './real/connect.js';
export {
  type WebarenaRealOptions,
  type WebarenaRealOptionsInput,
  WebarenaRealOptionsSchema,
  type WebarenaRealSetup,
} from './real/options.js';
export { mapWebarenaObservation, type WebarenaRawObservation } from './state-mapper.js';
