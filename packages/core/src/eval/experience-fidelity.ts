/**
 * Experience-model fidelity: replays held-out real trajectories step by step with
 * teacher forcing (the real state, action and history at every step) and compares the
 * model's predictions with what really followed: next-state exact match and token F1,
 * reward accuracy and error (estimates of the paper's eps_R = sup |R - R_hat|), and
 * terminal agreement, overall and per action type.
 */
import type { DomainAdapter } from '../adapter.js';
import type { ExperienceModel } from '../experience/experience-model.js';
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
}

/** The fidelity report: overall and per action type. */
export interface FidelityReport {
  overall: FidelityFigures;
  /** Keyed by `adapter.parseAction(action).type` (`unparsed` for actions outside the grammar). */
  byActionType: Record<string, FidelityFigures>;
  /** Trajectories replayed. */
  trajectories: number;
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
  };
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
      const tally = byType.get(type) ?? emptyTally();
      byType.set(type, tally);
      const error = Math.abs(prediction.reward - transition.reward);
      for (const target of [overall, tally]) {
        target.steps += 1;
        if (exactMatch(prediction.observation.text, transition.nextState.text)) target.exact += 1;
        target.f1 += tokenF1(prediction.observation.text, transition.nextState.text);
        if (error <= tolerance) target.rewardCorrect += 1;
        target.rewardError += error;
        target.rewardMax = Math.max(target.rewardMax, error);
        if (prediction.done === transition.done) target.terminalAgree += 1;
        if (transition.done) target.realFinal += 1;
        if (prediction.done) target.predictedFinal += 1;
        if (transition.done && prediction.done) target.bothFinal += 1;
      }
    }
    options.onProgress?.(overall.steps);
  }
  const byActionType: Record<string, FidelityFigures> = {};
  for (const [type, tally] of [...byType.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    byActionType[type] = summarizeFidelity(tally);
  }
  return { overall: summarizeFidelity(overall), byActionType, trajectories: replayed };
}
