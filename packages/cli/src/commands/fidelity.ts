/**
 * `dreamgym fidelity`: how far a run's synthetic environment agrees with the real one on the
 * episodes of the run's own policy (its latest checkpoint): free-running success in both on
 * the same tasks, the synthetic successes replayed on the real engine, and every real step of
 * the policy predicted by the run's experience model (false-success rate and true-success
 * recall per action type). Writes the report as JSON and as an HTML page.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  measureOnPolicyFidelity,
  SeededRandom,
  syntheticEnvironmentFromConfig,
} from '@dreamgym/core';
import type {
  FidelityFigures,
  OnPolicyFidelityPhase,
  OnPolicyFidelityProgress,
  OnPolicyFidelityReport,
  SuccessEstimate,
} from '@dreamgym/core/eval';
import { escapeHtml, htmlPage, ProgressReporter, reportEpisodes } from '@dreamgym/run';
import { type Command, type CommandIo, integer, parseFlags } from '../command-arguments.js';
import { runDirectoryFlag, withRunCheckpoint } from '../run-checkpoint.js';
import { setupFlagSpecs } from '../run-flags.js';
import { RUN_MODEL_OVERRIDE_FLAGS } from '../run-models.js';

const FIDELITY_USAGE = `Usage: dreamgym fidelity --run-dir DIR [options]

  --run-dir DIR              a \`dreamgym train\` run folder (its latest checkpoint's policy
                             and the run's experience model are measured)
  --eval-split NAME          split of the tasks, e.g. train or valid_seen (default the run's)
  --eval-tasks N             the first N tasks of the split (default the run's)
  --sample-tasks N           a seeded sample of N tasks of the whole split instead, or of
                             its first --eval-tasks (splits are often ordered by task type:
                             a prefix covers one type)
  --max-steps N  --seed N    step limit (default the run's) and seed
  --sample                   sample actions instead of taking the most likely one
  --outcome-judge on|off     outcomes by the learned judge (default: as the run was trained)
                             or by the experience model alone
  --world-memory on|off      one-entity actions answered from the task's own world's data
                             (default: as the run was trained), or by neighbours alone
  --out FILE.json            the report (default DIR/fidelity.json)
  --html FILE.html           the page (default DIR/fidelity.html)

Plays each task once in the run's synthetic environment and once on the real engine, replays
every successful synthetic episode's actions on the real engine, and predicts every real step
of the policy with the experience model from the real history.
Where its model servers or local model run now may differ from training:
  --base-url URL  --embedding-base-url URL  --model-concurrency N  --model-threads N`;

/** `12.5%`. */
function percent(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

/** `12.5% [95% CI 8.1-18.0%] n=40`. */
function withInterval(rate: number, [low, high]: [number, number], n: number): string {
  return `${percent(rate)} [95% CI ${percent(low)}-${percent(high)}] n=${n}`;
}

function successLine(name: string, estimate: SuccessEstimate): string {
  return `${name}: ${withInterval(estimate.rate, estimate.interval95, estimate.episodes)}`;
}

/** What the page says about the run the report measured. */
export interface FidelityReportContext {
  runDirectory: string;
  checkpoint: string;
  split: string;
}

function figuresRow(name: string, figures: FidelityFigures): string {
  return `<tr><th>${escapeHtml(name)}</th><td>${figures.steps}</td><td>${percent(figures.exactMatch)}</td><td>${figures.tokenF1.toFixed(3)}</td><td>${percent(figures.rewardAccuracy)}</td><td>${percent(figures.terminalAgreement)}</td><td>${percent(figures.falseSuccessRate)}</td><td>${figures.realSuccesses === 0 ? '–' : percent(figures.trueSuccessRecall)} <span class="ci">of ${figures.realSuccesses}</span></td></tr>`;
}

const text = (value: string) => `<td class="text">${escapeHtml(value)}</td>`;

/** Table rows, or one row saying there are none. */
function rowsOrNone(rows: string[], columns: number, none: string): string {
  return rows.length > 0
    ? rows.join('\n')
    : `<tr><td class="text" colspan="${columns}">${escapeHtml(none)}</td></tr>`;
}

/** The report as a self-contained HTML page; every text from the report is escaped. */
export function renderFidelityReport(
  report: OnPolicyFidelityReport,
  context: FidelityReportContext,
): string {
  const title = 'DreamGym on-policy fidelity';
  const precision = report.syntheticSuccessPrecision;
  const headline = [
    ['synthetic success (free-running)', successCell(report.syntheticSuccess)],
    ['real success (free-running, same tasks)', successCell(report.realSuccess)],
    [
      'synthetic-success precision (replayed on the real engine)',
      `${percent(precision.rate)} <span class="ci">[${percent(precision.interval95[0])}, ${percent(precision.interval95[1])}] ${precision.reallySucceeded} of ${precision.replayed}</span>`,
    ],
    [
      'false-success rate (teacher-forced, real steps)',
      `${percent(report.falseSuccessRate)} <span class="ci">of ${report.teacherForced.steps} steps</span>`,
    ],
    [
      'true-success recall (teacher-forced)',
      `${report.teacherForced.realSuccesses === 0 ? '–' : percent(report.trueSuccessRecall)} <span class="ci">of ${report.teacherForced.realSuccesses} real successes</span>`,
    ],
    ['next state exact (teacher-forced)', percent(report.nextStateExact)],
  ]
    .map(([name, value]) => `<tr><th>${name}</th><td>${value}</td></tr>`)
    .join('\n');
  const byType = [
    figuresRow('all', report.teacherForced),
    ...Object.entries(report.byActionType).map(([type, figures]) => figuresRow(type, figures)),
  ].join('\n');
  const replays = new Map(precision.replays.map((replay) => [replay.taskId, replay]));
  const episodes = report.episodes
    .map((pair) => {
      const replay = replays.get(pair.taskId);
      const replayCell = replay
        ? `${replay.realSuccess ? 'succeeds' : 'fails'}${replay.firstDisagreement ? ` (first disagrees at step ${replay.firstDisagreement.stepIndex}: ${escapeHtml(replay.firstDisagreement.action)})` : ''}`
        : '–';
      const outcome = (episode: { success: boolean; steps: number }) =>
        `${episode.success ? 'success' : 'failure'} <span class="ci">${episode.steps} steps</span>`;
      return `<tr><th>${escapeHtml(pair.taskId)}</th>${text(pair.instruction)}<td>${outcome(pair.synthetic)}</td><td>${outcome(pair.real)}</td><td>${replayCell}</td></tr>`;
    })
    .join('\n');
  const replayRows = precision.replays.map((replay) => {
    const first = replay.firstDisagreement;
    return `<tr><th>${escapeHtml(replay.taskId)}</th><td>${replay.actions.length}</td><td>${replay.stepsReplayed}</td><td>${replay.realSuccess ? 'yes' : 'no'}</td><td>${first ? first.stepIndex : '–'}</td>${text(first?.action ?? '')}${text(first?.syntheticNextState ?? '')}${text(first?.realNextState ?? '')}</tr>`;
  });
  const worst = report.worstDisagreements.map(
    (step) =>
      `<tr><th>${escapeHtml(step.kind)}</th>${text(step.instruction)}<td>${step.stepIndex}</td>${text(step.action)}${text(step.realNextState)}${text(step.predictedNextState)}<td>${step.realReward}${step.realDone ? ', done' : ''}</td><td>${step.predictedReward}${step.predictedDone ? ', done' : ''}</td></tr>`,
  );
  return htmlPage(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>Run ${escapeHtml(context.runDirectory)}, checkpoint ${escapeHtml(context.checkpoint)}: policy ${escapeHtml(report.policyId)}, experience model ${escapeHtml(report.experienceModelId)}; ${report.tasks} ${escapeHtml(context.split)} tasks, ${report.maxSteps} steps at most, ${report.greedy ? 'greedy' : 'sampled'} actions.</p>
<h2>Free-running, precision and teacher-forced figures</h2>
<table class="headline">
<tbody>
${headline}
</tbody>
</table>
<p class="ci">Free-running: the policy plays each task once in each environment. Precision: each successful synthetic episode's actions replayed in order on the real engine. Teacher-forced: each step of the policy's real episodes predicted by the experience model from the real history; a successful end is <code>done</code> with success or a positive reward.</p>
<h2>Teacher-forced by action type</h2>
<table class="by-action-type">
<thead><tr><th>action type</th><th>steps</th><th>next state exact</th><th>token F1</th><th>reward accuracy</th><th>done agreement</th><th>false-success rate</th><th>true-success recall</th></tr></thead>
<tbody>
${byType}
</tbody>
</table>
<h2>Episodes</h2>
<table class="episodes">
<thead><tr><th>task</th><th>instruction</th><th>synthetic</th><th>real</th><th>synthetic success replayed</th></tr></thead>
<tbody>
${episodes}
</tbody>
</table>
<h2>Synthetic successes replayed on the real engine</h2>
<table class="replays">
<thead><tr><th>task</th><th>actions</th><th>replayed</th><th>really succeeds</th><th>first disagreement</th><th>action</th><th>synthetic next state</th><th>real next state</th></tr></thead>
<tbody>
${rowsOrNone(replayRows, 8, 'No synthetic episode succeeded: nothing to replay.')}
</tbody>
</table>
<h2>Worst disagreements (teacher-forced)</h2>
<table class="worst-disagreements">
<thead><tr><th>kind</th><th>instruction</th><th>step</th><th>action</th><th>real next state</th><th>predicted next state</th><th>real reward</th><th>predicted reward</th></tr></thead>
<tbody>
${rowsOrNone(worst, 8, 'The model agreed with every real step.')}
</tbody>
</table>
`,
  );
}

function successCell(estimate: SuccessEstimate): string {
  return `${percent(estimate.rate)} <span class="ci">[${percent(estimate.interval95[0])}, ${percent(estimate.interval95[1])}] ${estimate.successes} of ${estimate.episodes}</span>`;
}

/** Progress on stderr: the episodes of each phase as they end, then the teacher-forced steps. */
function progressLines(io: CommandIo): (progress: OnPolicyFidelityProgress) => void {
  const episodes = new Map<OnPolicyFidelityPhase, ReturnType<typeof reportEpisodes>>();
  let steps: ProgressReporter | undefined;
  let stepsShown = 0;
  return (progress) => {
    const label = `dreamgym fidelity (${progress.phase})`;
    if (progress.phase === 'teacher-forced') {
      // Updates come per trajectory; a log gets a line per tenth of the steps, as episodes do.
      steps ??= new ProgressReporter(label, progress.total, io.stderr);
      const tenth = Math.max(1, Math.ceil(progress.total / 10));
      const last = progress.done === progress.total;
      if (
        io.stderr.isTTY ||
        last ||
        Math.floor(progress.done / tenth) > Math.floor(stepsShown / tenth)
      ) {
        steps.update(progress.done);
        stepsShown = progress.done;
      }
      if (last) steps.finish();
      return;
    }
    let report = episodes.get(progress.phase);
    if (!report) {
      report = reportEpisodes(label, io.stderr);
      episodes.set(progress.phase, report);
    }
    report({ success: progress.success === true }, progress);
  };
}

async function fidelity(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      'run-dir': { type: 'string' },
      ...setupFlagSpecs(['eval-split', 'eval-tasks']),
      'sample-tasks': { type: 'string' },
      'max-steps': { type: 'string' },
      seed: { type: 'string' },
      sample: { type: 'boolean' },
      'outcome-judge': { type: 'string' },
      'world-memory': { type: 'string' },
      out: { type: 'string' },
      html: { type: 'string' },
      ...RUN_MODEL_OVERRIDE_FLAGS,
    },
    FIDELITY_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${FIDELITY_USAGE}\n`);
    return 0;
  }
  const runDirectory = runDirectoryFlag(values, io, FIDELITY_USAGE);
  const out = resolve(
    io.cwd,
    (values.out as string | undefined) ?? join(runDirectory, 'fidelity.json'),
  );
  const html = resolve(
    io.cwd,
    (values.html as string | undefined) ?? join(runDirectory, 'fidelity.html'),
  );
  const maxStepsFlag = integer(values['max-steps'], '--max-steps');
  const seedFlag = integer(values.seed, '--seed');
  const sample = integer(values['sample-tasks'], '--sample-tasks');
  return withRunCheckpoint(
    runDirectory,
    values,
    io,
    // A sample is drawn from the whole split, not from the prefix the run evaluated on.
    { models: true, wholeSplit: sample !== undefined },
    async ({ config, domain, policy, checkpoint, models, log }) => {
      const maxSteps = maxStepsFlag ?? config.maxSteps;
      const k = config.retrieval.enabled ? config.retrieval.k : 0;
      const experienceModel = models!.experienceModel;
      const tasks =
        sample === undefined
          ? domain.evaluationTasks
          : new SeededRandom(seedFlag ?? config.seed)
              .fork('fidelity-tasks')
              .shuffle([...domain.evaluationTasks])
              .slice(0, sample);
      log(
        `measuring checkpoint ${checkpoint} on ${tasks.length} ${domain.evaluationSplit} tasks: synthetic, real, replays of synthetic successes, teacher-forced real steps...`,
      );
      const report = await measureOnPolicyFidelity({
        policy,
        tasks,
        adapter: domain.adapter,
        // The synthetic environment the run trained in, as the loop builds it.
        syntheticEnvironment: () =>
          syntheticEnvironmentFromConfig(
            { ...config, maxSteps },
            { experienceModel, retriever: domain.replayBuffer, adapter: domain.adapter },
          ),
        realEnvironment: domain.realEnvironment,
        experienceModel,
        retriever: domain.replayBuffer,
        k,
        useHistory: config.history.enabled,
        maxSteps,
        greedy: values.sample !== true,
        random: new SeededRandom(seedFlag ?? config.seed),
        concurrency: config.concurrency,
        realConcurrency: config.realConcurrency,
        onProgress: progressLines(io),
      });
      await mkdir(dirname(out), { recursive: true });
      await writeFile(
        out,
        `${JSON.stringify({ runDirectory, checkpoint, split: domain.evaluationSplit, ...report }, null, 2)}\n`,
      );
      await mkdir(dirname(html), { recursive: true });
      await writeFile(
        html,
        renderFidelityReport(report, { runDirectory, checkpoint, split: domain.evaluationSplit }),
      );
      const precision = report.syntheticSuccessPrecision;
      const taught = report.teacherForced;
      io.stdout.write(
        [
          successLine('synthetic success', report.syntheticSuccess),
          successLine('real success', report.realSuccess),
          `synthetic-success precision: ${withInterval(precision.rate, precision.interval95, precision.replayed)} (${precision.reallySucceeded} of ${precision.replayed} synthetic successes succeed on the real engine)`,
          `teacher-forced on ${taught.steps} real steps: false-success rate ${percent(report.falseSuccessRate)}, true-success recall ${percent(report.trueSuccessRecall)} (of ${taught.realSuccesses} real successes), next state exact ${percent(report.nextStateExact)}`,
          `report: ${out}`,
          `page: ${html}`,
        ].join('\n') + '\n',
      );
      return 0;
    },
  );
}

/** `dreamgym fidelity`. */
export const fidelityCommand: Command = {
  name: ['fidelity'],
  summary: "measure a run's synthetic environment against the real one on its policy's episodes",
  run: fidelity,
};
