/**
 * `@dreamgym/run`: what a DreamGym run is assembled from, without a command line: a domain's
 * set-up (its adapter, tasks, offline data and replay buffer), the one experience model
 * factory of every door (embedded, LLM, hybrid: judged by the learned outcome judge), the
 * models a selection chooses (a local or served LLM, the embedder), the policy a run trains,
 * `openRun` that builds them all in the order that fails fastest, the run folder's
 * `run.json`, and the progress lines and HTML reports of a run. `@dreamgym/cli` maps its flags onto these; benchmarks and programs import them.
 *
 * @packageDocumentation
 */
export {
  type DomainSetup,
  type DomainSetupOptions,
  DomainSetupOptionsSchema,
  type ObservationReader,
  setUpDomain,
} from './domain-setup.js';
export { adapterFactoryName, loadDomainAdapter } from './domains.js';
export {
  createExperienceModel,
  ExperienceGrounding,
  type ExperienceModelChoice,
  embeddedExperienceModel,
} from './experience-model.js';
export { htmlPage, loadRun, type ReportRun, renderReport } from './html-report.js';
export {
  loadLlamaRuntime,
  type ModelSelection,
  openChatModel,
  type SelectedModels,
  selectModels,
  usesChatModel,
} from './models.js';
export { openRun } from './open-run.js';
export { type ProgressOutput, ProgressReporter, reportEpisodes } from './progress.js';
export { LLM_POLICY_PACKAGE, type RunPolicySettings } from './run-policy.js';
export {
  RUN_SPEC_FILE,
  type RunSpec,
  readRunSpec,
  SAVED_MODEL_FLAGS,
  writeRunSpec,
} from './run-spec.js';
export { escapeHtml, lineChart } from './svg-chart.js';
