/**
 * The pre-flight check: can this synthetic environment be trusted on this domain, before any
 * training? A domain nobody tuned the experience model for is the usual case (a user's own),
 * and an untrustworthy one fails silently: next states read right, every check passes, and RL
 * learns what the model pays for and reality does not (or never sees a reward at all). Two
 * cheap measurements, each against thresholds:
 * - offline: the outcome judge trained as the run trains it, on the offline episodes less a
 *   held-out fifth of the tasks, then teacher-forced on that fifth: does it recognise the real
 *   successes (recall), does it pay steps that are none, or the counterfactual negatives made
 *   from the successes (the object never taken, the first of two)?
 * - on-policy, where the real environment runs: the starting policy on a sample of training
 *   tasks in both environments (`measureOnPolicyFidelity`): its synthetic successes replayed
 *   on the real environment (precision), synthetic against real success, and its real steps
 *   teacher-forced.
 * A figure fails its threshold when its 95% Wilson interval lies wholly past it: held-out
 * samples are small (a few dozen successes), and a check that refused a sound model on a
 * count's noise would teach users to pass `--force` by habit.
 */
import type { OutcomeJudge, OutcomeJudgeEvaluation } from '../experience/outcome-judge.js';
import type { Trajectory } from '../mdp/schemas.js';
import { hashText } from '../policy/hashed-features.js';
import { wilsonInterval95 } from './evaluation-metrics.js';
import type { OnPolicyFidelityReport } from './on-policy-fidelity.js';

/** The figures below which (or above which) the synthetic environment is not trusted. */
export interface PreflightThresholds {
  /** Least share of real successes the model must recognise (95% interval wholly below fails). Default 0.9. */
  minRecall: number;
  /** Most share of other steps (and of counterfactual negatives) it may pay. Default 0.02. */
  maxFalseSuccessRate: number;
  /** Least share of the starting policy's synthetic successes that must replay as real ones. Default 0.9. */
  minPrecision: number;
}

/** The default thresholds (the targets of the truthful-experience work). */
export const DEFAULT_PREFLIGHT_THRESHOLDS: PreflightThresholds = {
  minRecall: 0.9,
  maxFalseSuccessRate: 0.02,
  minPrecision: 0.9,
};

/** The offline part: a judge trained without a fifth of the tasks, teacher-forced on them. */
export interface OfflinePreflight {
  /** Offline trajectories the judge was trained on. */
  trainTrajectories: number;
  /** Held-out trajectories it was judged on. */
  heldOutTrajectories: number;
  /** The judge's counts on the held-out trajectories. */
  evaluation: OutcomeJudgeEvaluation;
  /** recalled / successes (1 without successes). */
  recall: number;
  /** paidOtherSteps / otherSteps. */
  falseSuccessRate: number;
  /** paidCounterfactuals / counterfactuals. */
  counterfactualPaidRate: number;
}

/** The on-policy part: the starting policy's figures from `measureOnPolicyFidelity`. */
export type OnPolicyPreflight = Pick<
  OnPolicyFidelityReport,
  | 'tasks'
  | 'syntheticSuccess'
  | 'realSuccess'
  | 'falseSuccessRate'
  | 'trueSuccessRecall'
  | 'experienceModelId'
> & {
  /** Successful synthetic episodes replayed, and how many succeeded for real. */
  precision: { replayed: number; reallySucceeded: number; rate: number };
  /** Real successful final steps teacher-forced (recall is measured on these). */
  realSuccesses: number;
};

/** What the pre-flight check found, and whether the synthetic environment can be trusted. */
export interface PreflightReport {
  offline?: OfflinePreflight;
  onPolicy?: OnPolicyPreflight;
  /** The thresholds applied. */
  thresholds: PreflightThresholds;
  /** True when nothing measured fell past a threshold. */
  trusted: boolean;
  /** One sentence per figure past its threshold. */
  problems: string[];
}

/**
 * Splits `trajectories` by task (a fifth of the task ids, by hash, held out), trains a judge
 * on the rest with `trainJudge` (as the run trains its own) and judges the held-out fifth.
 * Undefined when either part is empty or no judge could be trained.
 */
export function preflightOffline(
  trajectories: readonly Trajectory[],
  trainJudge: (trajectories: readonly Trajectory[]) => OutcomeJudge | undefined,
): OfflinePreflight | undefined {
  const real = trajectories.filter((trajectory) => trajectory.source !== 'synthetic');
  const heldOut = real.filter((trajectory) => hashText(trajectory.task.id) % 5 === 0);
  const train = real.filter((trajectory) => hashText(trajectory.task.id) % 5 !== 0);
  if (heldOut.length === 0 || train.length === 0) return undefined;
  const judge = trainJudge(train);
  if (judge === undefined) return undefined;
  const evaluation = judge.evaluate(heldOut);
  const rate = (part: number, whole: number, empty: number) => (whole === 0 ? empty : part / whole);
  return {
    trainTrajectories: train.length,
    heldOutTrajectories: heldOut.length,
    evaluation,
    recall: rate(evaluation.recalled, evaluation.successes, 1),
    falseSuccessRate: rate(evaluation.paidOtherSteps, evaluation.otherSteps, 0),
    counterfactualPaidRate: rate(evaluation.paidCounterfactuals, evaluation.counterfactuals, 0),
  };
}

/** The on-policy part's figures, read from a `measureOnPolicyFidelity` report. */
export function onPolicyPreflight(report: OnPolicyFidelityReport): OnPolicyPreflight {
  const { replayed, reallySucceeded, rate } = report.syntheticSuccessPrecision;
  return {
    tasks: report.tasks,
    experienceModelId: report.experienceModelId,
    syntheticSuccess: report.syntheticSuccess,
    realSuccess: report.realSuccess,
    falseSuccessRate: report.falseSuccessRate,
    trueSuccessRecall: report.trueSuccessRecall,
    precision: { replayed, reallySucceeded, rate },
    realSuccesses: report.teacherForced.realSuccesses,
  };
}

const percent = (rate: number) => `${(rate * 100).toFixed(1)}%`;

/** Whether `part / whole` is below `threshold` with confidence: its 95% interval wholly below. */
function surelyBelow(part: number, whole: number, threshold: number): boolean {
  return whole > 0 && wilsonInterval95(part, whole)[1] < threshold;
}

/** Whether `part / whole` is above `threshold` with confidence: its 95% interval wholly above. */
function surelyAbove(part: number, whole: number, threshold: number): boolean {
  return whole > 0 && wilsonInterval95(part, whole)[0] > threshold;
}

/** `12/40 (30.0%, 95% 17.9-45.6%)`. */
function share(part: number, whole: number): string {
  const [low, high] = wilsonInterval95(part, whole);
  return `${part}/${whole} (${percent(whole === 0 ? 0 : part / whole)}, 95% ${percent(low)}-${percent(high)})`;
}

/**
 * Judges the measured parts against `thresholds`: a figure fails when its 95% interval lies
 * wholly past its threshold.
 */
export function preflightVerdict(
  parts: { offline?: OfflinePreflight; onPolicy?: OnPolicyPreflight },
  thresholds: PreflightThresholds = DEFAULT_PREFLIGHT_THRESHOLDS,
): PreflightReport {
  const problems: string[] = [];
  const { offline, onPolicy } = parts;
  if (offline) {
    const {
      successes,
      recalled,
      otherSteps,
      paidOtherSteps,
      counterfactuals,
      paidCounterfactuals,
    } = offline.evaluation;
    if (surelyBelow(recalled, successes, thresholds.minRecall)) {
      problems.push(
        `the outcome judge recognises ${share(recalled, successes)} held-out real successes, below ${percent(thresholds.minRecall)}: competent behaviour would go unrewarded`,
      );
    }
    if (surelyAbove(paidOtherSteps, otherSteps, thresholds.maxFalseSuccessRate)) {
      problems.push(
        `the outcome judge pays ${share(paidOtherSteps, otherSteps)} held-out steps that are no success, above ${percent(thresholds.maxFalseSuccessRate)}`,
      );
    }
    if (surelyAbove(paidCounterfactuals, counterfactuals, thresholds.maxFalseSuccessRate)) {
      problems.push(
        `the outcome judge pays ${share(paidCounterfactuals, counterfactuals)} counterfactual failures made from held-out successes (the object never taken, the first of several, the wrong object)`,
      );
    }
  }
  if (onPolicy) {
    const { precision, syntheticSuccess, realSuccess } = onPolicy;
    if (surelyBelow(precision.reallySucceeded, precision.replayed, thresholds.minPrecision)) {
      problems.push(
        `of the starting policy's synthetic successes, ${share(precision.reallySucceeded, precision.replayed)} succeed when replayed on the real environment, below ${percent(thresholds.minPrecision)}`,
      );
    }
    const [syntheticLow, syntheticHigh] = syntheticSuccess.interval95;
    const [realLow, realHigh] = realSuccess.interval95;
    if (syntheticLow > realHigh || realLow > syntheticHigh) {
      problems.push(
        `on the same ${onPolicy.tasks} training tasks the starting policy succeeds ${percent(syntheticSuccess.rate)} in the synthetic environment and ${percent(realSuccess.rate)} in the real one (95% intervals apart)`,
      );
    }
    const recalled = Math.round(onPolicy.trueSuccessRecall * onPolicy.realSuccesses);
    if (surelyBelow(recalled, onPolicy.realSuccesses, thresholds.minRecall)) {
      problems.push(
        `teacher-forced on the starting policy's real episodes, the model recognises ${share(recalled, onPolicy.realSuccesses)} of its real successes`,
      );
    }
    if (onPolicy.falseSuccessRate > thresholds.maxFalseSuccessRate) {
      problems.push(
        `teacher-forced on the starting policy's real episodes, the model pays ${percent(onPolicy.falseSuccessRate)} of steps that are no success`,
      );
    }
  }
  return { ...parts, thresholds, trusted: problems.length === 0, problems };
}

/** The report as lines for a log: the figures, then the verdict and each problem. */
export function formatPreflight(report: PreflightReport): string[] {
  const lines: string[] = [];
  const { offline, onPolicy } = report;
  if (offline) {
    const { evaluation } = offline;
    lines.push(
      `pre-flight (offline, judge trained on ${offline.trainTrajectories} episodes, ${offline.heldOutTrajectories} held out): recall ${share(evaluation.recalled, evaluation.successes)}, false success ${share(evaluation.paidOtherSteps, evaluation.otherSteps)} steps, counterfactuals paid ${share(evaluation.paidCounterfactuals, evaluation.counterfactuals)}`,
    );
  } else {
    lines.push(
      'pre-flight (offline): not measured (no outcome judge, or too few offline episodes)',
    );
  }
  if (onPolicy) {
    lines.push(
      `pre-flight (starting policy, ${onPolicy.tasks} training tasks): synthetic ${percent(onPolicy.syntheticSuccess.rate)} vs real ${percent(onPolicy.realSuccess.rate)}, synthetic successes that replay as real ${onPolicy.precision.reallySucceeded}/${onPolicy.precision.replayed}, teacher-forced recall ${percent(onPolicy.trueSuccessRecall)} of ${onPolicy.realSuccesses}, false success ${percent(onPolicy.falseSuccessRate)}`,
    );
  }
  if (report.trusted) {
    lines.push('pre-flight: the synthetic environment passes every check');
  } else {
    lines.push(
      'pre-flight: the synthetic environment cannot be trusted on this domain:',
      ...report.problems.map((problem) => `  - ${problem}`),
    );
  }
  return lines;
}
