/**
 * Experience-model fidelity: replays held-out real trajectories step by step with
 * teacher forcing (the real state, action and history at every step) and compares the
 * model's predictions with what really followed: next-state exact match and token F1,
 * reward accuracy and error (estimates of the paper's eps_R = sup |R - R_hat|), terminal
 * agreement, and the two figures that say whether the model pays for what reality refuses
 * (false-success rate, true-success recall), overall and per action type, with the worst
 * disagreements kept for reading.
 */
import type { DomainAdapter } from '../adapter.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { applyRewardRule, rewardRuleOf } from '../experience/outcome-reward.js';
import type { Trajectory } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import type { RetrievalFilter, TransitionRetriever } from '../replay/retriever.js';
import { exactMatch, tokenF1 } from './text-similarity.js';

/** Agreement figures over a set of steps. */
export interface FidelityFigures {
  /** Steps evaluated. */
  steps: number;
  /** Share of steps whose predicted next state equals the real one (whitespace-normalised). */
  exactMatch: number;
  /** Mean token F1 of predicted against real next states. */
  tokenF1: number;
  /** Share of steps whose predicted reward is within `rewardTolerance` of the real one. */
  rewardAccuracy: number;
  /** Mean |r - r_hat|. */
  rewardMeanAbsoluteError: number;
  /** max |r - r_hat| over the steps: the empirical eps_R. */
  rewardMaxAbsoluteError: number;
  /** Share of steps whose predicted `done` equals the real one. */
  terminalAgreement: number;
  /** Among real final steps, the share predicted final (recall of termination). */
  terminalRecall: number;
  /** Among steps predicted final, the share really final (precision of termination). */
  terminalPrecision: number;
  /**
   * Share of steps the model predicts as a successful end (`done` with `success` or a positive
   * reward) where the real episode did not end successfully there: how often the model pays
   * for an action reality refuses.
   */
  falseSuccessRate: number;
  /** Among real successful final steps, the share the model also predicts as a successful end. */
  trueSuccessRecall: number;
  /** Real successful final steps (the denominator of `trueSuccessRecall`). */
  realSuccesses: number;
}

/** Why a step is among the worst disagreements, most serious first. */
export type DisagreementKind = 'false-success' | 'missed-success' | 'mismatch';

/** One teacher-forced step where the model's prediction and reality part. */
export interface StepDisagreement {
  /** `false-success`: predicted a successful end reality did not give; `missed-success`: the reverse; `mismatch`: next state, reward or `done` differ. */
  kind: DisagreementKind;
  /** The trajectory the step belongs to. */
  trajectoryId: string;
  /** The task's id. */
  taskId: string;
  /** The task's instruction. */
  instruction: string;
  /** Index t of the step within its trajectory. */
  stepIndex: number;
  /** a_t as the model was given it (canonical where the grammar parses it). */
  action: string;
  /** `adapter.parseAction(action).type`, `unparsed` outside the grammar. */
  actionType: string;
  /** s_t's text. */
  state: string;
  /** s_{t+1}'s text as it really was. */
  realNextState: string;
  /** s_{t+1}'s text as the model predicted it. */
  predictedNextState: string;
  /** r_{t+1} as it really was. */
  realReward: number;
  /** r_{t+1} as the model predicted it. */
  predictedReward: number;
  /** Whether the episode really ended after the step. */
  realDone: boolean;
  /** Whether the model predicted the episode to end. */
  predictedDone: boolean;
  /** Token F1 of the predicted against the real next state. */
  tokenF1: number;
}

/** The fidelity report: overall and per action type. */
export interface FidelityReport {
  /** Every step evaluated. */
  overall: FidelityFigures;
  /** Keyed by `adapter.parseAction(action).type` (`unparsed` for actions outside the grammar). */
  byActionType: Record<string, FidelityFigures>;
  /** Trajectories replayed. */
  trajectories: number;
  /**
   * Up to `keepDisagreements` steps where prediction and reality part: false successes first,
   * then missed successes, then the lowest next-state token F1 (ties in replay order).
   */
  worstDisagreements: StepDisagreement[];
}

/** Options of {@link evaluateExperienceModel}. */
export interface EvaluateExperienceModelOptions {
  /** Where demonstrations come from; held-out trajectories must not be in it. */
  retriever?: TransitionRetriever;
  /** The domain: its grammar groups steps by action type and names the retrieval domain. */
  adapter: Pick<DomainAdapter, 'name' | 'parseAction'>;
  /** Demonstrations per step. Default 4 (0 without a retriever). */
  k?: number;
  /** Extra retrieval restrictions. */
  filter?: RetrievalFilter;
  /** Give the model the real history. Default `true`. */
  useHistory?: boolean;
  /** |r - r_hat| up to which a reward counts as correct. Default 0.5 (outcome rewards are 0 or 1). */
  rewardTolerance?: number;
  /** Stop after this many steps (the figures then cover a prefix of the trajectories). */
  maxSteps?: number;
  /** How many of the worst disagreements the report keeps. Default 0. */
  keepDisagreements?: number;
  /** Called after each trajectory with steps done so far, for progress output. */
  onProgress?: (stepsDone: number) => void;
}

interface Tally {
  steps: number;
  exact: number;
  f1: number;
  rewardCorrect: number;
  rewardError: number;
  rewardMax: number;
  terminalAgree: number;
  realFinal: number;
  predictedFinal: number;
  bothFinal: number;
  falseSuccess: number;
  realSuccess: number;
  bothSuccess: number;
}

function emptyTally(): Tally {
  return {
    steps: 0,
    exact: 0,
    f1: 0,
    rewardCorrect: 0,
    rewardError: 0,
    rewardMax: 0,
    terminalAgree: 0,
    realFinal: 0,
    predictedFinal: 0,
    bothFinal: 0,
    falseSuccess: 0,
    realSuccess: 0,
    bothSuccess: 0,
  };
}

function ratio(numerator: number, denominator: number): number {
  return denominator === 0 ? 0 : numerator / denominator;
}

/** Turns counts into the reported figures. */
function summarizeFidelity(tally: Tally): FidelityFigures {
  return {
    steps: tally.steps,
    exactMatch: ratio(tally.exact, tally.steps),
    tokenF1: ratio(tally.f1, tally.steps),
    rewardAccuracy: ratio(tally.rewardCorrect, tally.steps),
    rewardMeanAbsoluteError: ratio(tally.rewardError, tally.steps),
    rewardMaxAbsoluteError: tally.rewardMax,
    terminalAgreement: ratio(tally.terminalAgree, tally.steps),
    terminalRecall: ratio(tally.bothFinal, tally.realFinal),
    terminalPrecision: ratio(tally.bothFinal, tally.predictedFinal),
    falseSuccessRate: ratio(tally.falseSuccess, tally.steps),
    trueSuccessRecall: ratio(tally.bothSuccess, tally.realSuccess),
    realSuccesses: tally.realSuccess,
  };
}

const KIND_ORDER: Record<DisagreementKind, number> = {
  'false-success': 0,
  'missed-success': 1,
  mismatch: 2,
};

/** Most serious first: the kind, then the lower next-state F1; a stable sort keeps replay order. */
function bySeriousness(a: StepDisagreement, b: StepDisagreement): number {
  return KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || a.tokenF1 - b.tokenF1;
}

/**
 * Replays `trajectories` through `model` with teacher forcing and reports how closely its
 * predictions follow reality. Steps without a recorded next state (the last step of a
 * trajectory without `finalObservation`) are skipped.
 */
export async function evaluateExperienceModel(
  model: ExperienceModel,
  trajectories: Iterable<Trajectory> | AsyncIterable<Trajectory>,
  options: EvaluateExperienceModelOptions,
): Promise<FidelityReport> {
  const k = options.retriever ? (options.k ?? 4) : 0;
  const tolerance = options.rewardTolerance ?? 0.5;
  const keep = options.keepDisagreements ?? 0;
  const rule = rewardRuleOf(model);
  const disagreements: StepDisagreement[] = [];
  const overall = emptyTally();
  const byType = new Map<string, Tally>();
  let replayed = 0;
  for await (const trajectory of trajectories) {
    if (options.maxSteps !== undefined && overall.steps >= options.maxSteps) break;
    replayed += 1;
    const trajectoryId = trajectory.id ?? trajectory.task.id;
    for (const transition of trajectoryToTransitions(trajectory, { trajectoryId })) {
      if (options.maxSteps !== undefined && overall.steps >= options.maxSteps) break;
      let type = 'unparsed';
      let action = transition.action;
      try {
        const parsed = options.adapter.parseAction(transition.action);
        type = parsed.type;
        action = parsed.text;
      } catch {
        // Real data may hold actions the engine refused; they are evaluated as given.
      }
      const demos =
        k > 0 && options.retriever
          ? await options.retriever.search(
              { state: transition.state, action, instruction: transition.instruction },
              k,
              {
                domain: options.adapter.name,
                ...options.filter,
                excludeTrajectoryIds: [
                  ...(options.filter?.excludeTrajectoryIds ?? []),
                  trajectoryId,
                ],
              },
            )
          : [];
      const history =
        options.useHistory === false ? [] : trajectory.steps.slice(0, transition.stepIndex);
      const prediction = await model.predict({
        task: trajectory.task,
        history,
        state: transition.state,
        action,
        demos,
      });
      // What the synthetic environment would make of the prediction: its reward rule, once.
      const outcome = applyRewardRule(prediction, rule);
      const tally = byType.get(type) ?? emptyTally();
      byType.set(type, tally);
      const error = Math.abs(outcome.reward - transition.reward);
      const exact = exactMatch(prediction.observation.text, transition.nextState.text);
      const f1 = tokenF1(prediction.observation.text, transition.nextState.text);
      // Success as the rollout collector judges it: the trajectory's outcome on its final
      // step (else a positive final reward); the model's `success` flag, else its reward.
      const realSuccess =
        transition.done && (transition.trajectorySuccess ?? transition.reward > 0);
      const predictedSuccess = outcome.done && (outcome.success || outcome.reward > 0);
      for (const target of [overall, tally]) {
        target.steps += 1;
        if (exact) target.exact += 1;
        target.f1 += f1;
        if (error <= tolerance) target.rewardCorrect += 1;
        target.rewardError += error;
        target.rewardMax = Math.max(target.rewardMax, error);
        if (outcome.done === transition.done) target.terminalAgree += 1;
        if (transition.done) target.realFinal += 1;
        if (outcome.done) target.predictedFinal += 1;
        if (transition.done && outcome.done) target.bothFinal += 1;
        if (predictedSuccess && !realSuccess) target.falseSuccess += 1;
        if (realSuccess) target.realSuccess += 1;
        if (realSuccess && predictedSuccess) target.bothSuccess += 1;
      }
      const kind: DisagreementKind | undefined =
        predictedSuccess && !realSuccess
          ? 'false-success'
          : realSuccess && !predictedSuccess
            ? 'missed-success'
            : !exact || error > tolerance || outcome.done !== transition.done
              ? 'mismatch'
              : undefined;
      if (keep > 0 && kind !== undefined) {
        disagreements.push({
          kind,
          trajectoryId,
          taskId: trajectory.task.id,
          instruction: trajectory.task.instruction,
          stepIndex: transition.stepIndex,
          action,
          actionType: type,
          state: transition.state.text,
          realNextState: transition.nextState.text,
          predictedNextState: prediction.observation.text,
          realReward: transition.reward,
          predictedReward: outcome.reward,
          realDone: transition.done,
          predictedDone: outcome.done,
          tokenF1: f1,
        });
        // Trimmed now and then rather than kept whole: a long evaluation has many thousands.
        if (disagreements.length >= 2 * keep) {
          disagreements.sort(bySeriousness);
          disagreements.length = keep;
        }
      }
    }
    options.onProgress?.(overall.steps);
  }
  const byActionType: Record<string, FidelityFigures> = {};
  for (const [type, tally] of [...byType.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    byActionType[type] = summarizeFidelity(tally);
  }
  disagreements.sort(bySeriousness);
  return {
    overall: summarizeFidelity(overall),
    byActionType,
    trajectories: replayed,
    worstDisagreements: disagreements.slice(0, keep),
  };
}
