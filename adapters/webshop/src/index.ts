/**
 * `@dreamgym/webshop`: the DreamGym adapter for WebShop (web shopping from instructions):
 * the adapter factory and its options, the state mapper, the search/click grammar, the
 * dataset loaders and downloader, the purchase reward, task mutation and the connector to a
 * running WebShop server (AgentGym protocol).
 */
export {
  ASIN_PATTERN,
  canonicalClickValue,
  checkWebshopAction,
  formatWebshopAction,
  parseWebshopAction,
  WEBSHOP_BUTTONS,
  type WebshopActionType,
  type WebshopAvailableActions,
} from './action-grammar.js';
export {
  createWebshopAdapter,
  type WebshopAdapter,
  type WebshopAdapterOptions,
  WebshopAdapterOptionsSchema,
} from './adapter.js';
export {
  type WebshopCandidateSources,
  webshopCandidateActions,
} from './candidate-actions.js';
export {
  downloadWebshopData,
  WEBSHOP_DATA_BASE_URL,
  type WebshopDownloadOptions,
  WebshopDownloadOptionsSchema,
} from './datasets/download.js';
export {
  GOAL_QUERY_MAP_FILE,
  ITEMS_FILE,
  loadWebshopGoalQueryMap,
  loadWebshopItems,
  type WebshopItemRecord,
  WebshopItemRecordSchema,
} from './datasets/goal-query-map.js';
export {
  HUMAN_GOALS_FILE,
  loadWebshopGoalTasks,
  normalizeWebshopInstruction,
  readWebshopHumanGoals,
  WEBSHOP_SPLITS,
  type WebshopSplit,
  webshopSplitOf,
} from './datasets/human-goals.js';
export {
  loadWebshopSessionTrajectories,
  MTURK_SESSIONS_DIRECTORY,
  readWebshopSession,
  type WebshopRewardInfo,
  type WebshopRewardMode,
  type WebshopSessionGoal,
  type WebshopSessionLoadOptions,
  type WebshopSessionRecord,
  WebshopSessionRecordSchema,
} from './datasets/mturk-sessions.js';
export { webshopExperienceHints } from './experience-hints.js';
export {
  buildWebshopVocabulary,
  mutateWebshopTask,
  type WebshopVocabulary,
  WebshopVocabularySchema,
} from './mutate-task.js';
export {
  detectObservationMode,
  parseWebshopPage,
  parseWebshopUrl,
  type WebshopObservationMode,
} from './pages/parse-page.js';
export {
  renderWebshopPage,
  type WebshopItemOption,
  type WebshopListedProduct,
  type WebshopPage,
  type WebshopPageKind,
} from './pages/webshop-page.js';
export { webshopPrompts } from './prompts.js';
export {
  connectWebshopReal,
  WebshopConnectionError,
  WebshopProtocolClient,
  WebshopRealEnvironment,
  type WebshopRealOptions,
  type WebshopRealOptionsInput,
  WebshopRealOptionsSchema,
  WebshopServerAnswerError,
  webshopSessionOf,
} from './real/index.js';
export { normalizeWebshopColor, WEBSHOP_COLORS } from './reward/colors.js';
export { tokenSetRatio } from './reward/fuzzy-match.js';
export {
  approximateNouns,
  combinePurchaseReward,
  countAttributeMatches,
  matchOptions,
  matchProductType,
  type NounExtractor,
  type PurchaseInput,
  type PurchaseReward,
  type PurchaseRewardParts,
  priceWithinBound,
  productTypeFactor,
  type TypeMatch,
  type WebshopGoal,
  type WebshopProduct,
  webshopPurchaseReward,
} from './reward/purchase-reward.js';
export { webshopSearchQueries, withoutPriceClause } from './search-queries.js';
export {
  mapWebshopObservation,
  type WebshopParsedRawObservation,
  type WebshopRawObservation,
  webshopPageToObservation,
} from './state-mapper.js';
