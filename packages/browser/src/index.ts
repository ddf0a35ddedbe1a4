/**
 * `@dreamgym/browser`: the browser parts every DreamGym web domain shares. A Playwright
 * browser `Environment` on the system's Chromium, the AX-tree state mapper over CDP (stable
 * element ids, pruning, iframes stitched in place, optional viewport filter), an optional
 * LLM refinement of the tree, the WebArena action grammar with its executor and candidate
 * actions, a trajectory recorder, and MiniWoB++ task pages served locally.
 */

/** Playwright's types that the environment's hooks and evaluators receive. */
export type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
export {
  executeWebAction,
  type WebActionContext,
  type WebActionOutcome,
} from './actions/execute-web-action.js';
export {
  formatWebAction,
  normalizeKeyCombination,
  parseWebAction,
  parseWebActionText,
  WEB_ACTION_FORMS,
  WEB_ACTION_TYPES,
  type WebAction,
  type WebActionType,
} from './actions/web-action-grammar.js';
export {
  type ObservationLine,
  parseObservationLines,
  type WebCandidateOptions,
  webCandidateActions,
} from './actions/web-candidate-actions.js';
export {
  type CaptureOptions,
  captureAccessibilitySnapshot,
  PageSessions,
  type RawAccessibilitySnapshot,
  type RawAxNode,
  type RawAxProperty,
  type RawFrameSnapshot,
} from './axtree/accessibility-snapshot.js';
export {
  ElementIdAllocator,
  type ElementLocation,
  type ObservedElement,
} from './axtree/element-ids.js';
export {
  type FlattenedTree,
  type FlattenOptions,
  flattenAccessibilityTree,
} from './axtree/flatten-accessibility-tree.js';
export { estimateObservationTokens } from './axtree/observation-budget.js';
export {
  formatObservationText,
  formatTabHeader,
  type ObserveOptions,
  type PageObservation,
  PageObserver,
  type PageObserverOptions,
  type TabSummary,
} from './axtree/page-observer.js';
export {
  CHROMIUM_ARGS,
  type ChromiumOptions,
  ChromiumOptionsSchema,
  chromiumExecutablePath,
  DEFAULT_CHROMIUM_PATH,
  launchChromium,
} from './chromium.js';
export {
  BrowserEnvironment,
  defaultTaskStart,
  suggestTypedTexts,
} from './environment/browser-environment.js';
export {
  type BrowserEnvironmentOptions,
  type BrowserEnvironmentOptionsInput,
  BrowserEnvironmentOptionsSchema,
  type BrowserEnvironmentSetup,
  type BrowserEpisode,
  type BrowserEvaluation,
  type BrowserStepContext,
  type BrowserTaskHooks,
  type BrowserTaskStart,
  type ObservationRefiner,
} from './environment/options.js';
export { WebActionError } from './errors.js';
export {
  defaultMiniwobPython,
  locateMiniwobHtml,
  type MiniwobEpisodeOptions,
  type MiniwobHooksOptions,
  type MiniwobReward,
  type MiniwobServer,
  type MiniwobServerOptions,
  miniwobTaskHooks,
  miniwobTaskOf,
  readMiniwobReward,
  startMiniwobEpisode,
  startMiniwobServer,
} from './miniwob/miniwob.js';
export {
  TrajectoryRecorder,
  type TrajectoryRecorderOptions,
} from './recording/trajectory-recorder.js';
export {
  createLlmObservationRefiner,
  type LlmObservationRefinerOptions,
  selectTreeLines,
} from './refine/llm-observation-refiner.js';
export {
  type ServeDirectoryOptions,
  type StaticServer,
  serveDirectory,
} from './static-server.js';
