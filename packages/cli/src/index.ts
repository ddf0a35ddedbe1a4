/**
 * `@dreamgym/cli`: the `dreamgym` command, and its building blocks for programmatic use.
 */

export { COMMANDS, type Command, type CommandIo, runCli } from './cli.js';
export {
  type DomainSetup,
  type DomainSetupOptions,
  DomainSetupOptionsSchema,
  setUpDomain,
} from './domain-setup.js';
export { adapterFactoryName, installedAdapterPackages, loadDomainAdapter } from './domains.js';
export {
  createExperienceModel,
  type EmbeddedExperienceModel,
  ExperienceGrounding,
  type ExperienceGroundingOptions,
  type ExperienceModelChoice,
  embeddedExperienceModel,
} from './experience-model.js';
export { htmlPage, loadRun, type ReportRun, renderReport } from './html-report.js';
export {
  estimateRemainingMs,
  formatProgressBar,
  formatProgressLine,
  type ProgressOutput,
  ProgressReporter,
  type ProgressState,
  reportEpisodes,
} from './progress.js';
export { type ChartSeries, escapeHtml, type LineChartOptions, lineChart } from './svg-chart.js';
