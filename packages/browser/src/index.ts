/**
 * `@dreamgym/browser`: the browser parts every DreamGym web domain shares. A Playwright
 * browser `Environment` on the system's Chromium, the AX-tree state mapper over CDP (stable
 * element ids, pruning, iframes stitched in place, optional viewport filter), an optional
 * LLM refinement of the tree, the WebArena action grammar with its executor and candidate
 * actions, a trajectory recorder, and MiniWoB++ task pages served locally.
 */

/** Playwright's types that the environment's hooks and evaluators receive. */
export type { Browser, Page } from 'playwright-core';
export {
  formatWebAction,
  parseWebAction,
  parseWebActionText,
  WEB_ACTION_FORMS,
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
  PageSessions,
  type RawAccessibilitySnapshot,
  type RawAxNode,
} from './axtree/accessibility-snapshot.js';
export type { ObservedElement } from './axtree/element-ids.js';
export { flattenAccessibilityTree } from './axtree/flatten-accessibility-tree.js';
export { estimateObservationTokens } from './axtree/observation-budget.js';
export {
  type ObserveOptions,
  type PageObservation,
  PageObserver,
  type PageObserverOptions,
} from './axtree/page-observer.js';
export { type ChromiumOptions, launchChromium } from './chromium.js';
export { BrowserEnvironment, suggestTypedTexts } from './environment/browser-environment.js';
export {
  type BrowserEnvironmentOptions,
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
  type MiniwobEpisodeOptions,
  type MiniwobHooksOptions,
  type MiniwobServer,
  type MiniwobServerOptions,
  miniwobTaskHooks,
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
} from './refine/llm-observation-refiner.js';
export { type ServeDirectoryOptions, type StaticServer, serveDirectory } from './static-server.js';
