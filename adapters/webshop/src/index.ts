/**
 * `@dreamgym/webshop`: the DreamGym adapter for WebShop (web shopping from instructions):
 * the adapter factory and its options, the state mapper, the search/click grammar, the
 * dataset loaders and downloader, the purchase reward, task mutation and the connector to a
 * running WebShop server (AgentGym protocol).
 */
export {
  checkWebshopAction,
  formatWebshopAction,
  parseWebshopAction,
  type WebshopActionType,
  type WebshopAvailableActions,
} from './action-grammar.js';
export {
  createWebshopAdapter,
  type WebshopAdapter,
  type WebshopAdapterOptions,
} from './adapter.js';
export {
  downloadWebshopData,
  WEBSHOP_DATA_BASE_URL,
  type WebshopDownloadOptions,
} from './datasets/download.js';
export {
  loadWebshopGoalQueryMap,
  loadWebshopItems,
  type WebshopItemRecord,
} from './datasets/goal-query-map.js';
export {
  loadWebshopGoalTasks,
  normalizeWebshopInstruction,
  readWebshopHumanGoals,
  WEBSHOP_SPLITS,
  type WebshopSplit,
  webshopSplitOf,
} from './datasets/human-goals.js';
export {
  loadWebshopSessionTrajectories,
  readWebshopSession,
  type WebshopRewardInfo,
  type WebshopRewardMode,
  type WebshopSessionGoal,
  type WebshopSessionLoadOptions,
  type WebshopSessionRecord,
} from './datasets/mturk-sessions.js';
export { webshopExperienceHints } from './experience-hints.js';
export {
  buildWebshopVocabulary,
  mutateWebshopTask,
  type WebshopVocabulary,
} from './mutate-task.js';
export { parseWebshopPage, type WebshopObservationMode } from './pages/parse-page.js';
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
  WebshopRealEnvironment,
  type WebshopRealOptions,
  WebshopServerAnswerError,
} from './real/index.js';
export {
  approximateNouns,
  type NounExtractor,
  type PurchaseInput,
  type PurchaseReward,
  type WebshopGoal,
  type WebshopProduct,
  webshopPurchaseReward,
} from './reward/purchase-reward.js';
export {
  mapWebshopObservation,
  type WebshopParsedRawObservation,
  type WebshopRawObservation,
  webshopPageToObservation,
} from './state-mapper.js';
