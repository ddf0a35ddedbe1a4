/**
 * The experience model every door of the CLI hands out (`train`, `eval`, `fidelity`, `serve`
 * in one process and in its `--workers` replicas): {@link createExperienceModel} builds it, and
 * the learned outcome judge is composed here and nowhere else. A door that built its own
 * model would serve the retrieval model's neighbour vote, which pays a policy for steps the
 * real environment never rewards (see docs/ARCHITECTURE.md, "When is synthetic experience
 * good enough?").
 */
import {
  type DomainAdapter,
  type ExperienceModel,
  JudgedExperienceModel,
  OutcomeJudge,
  RetrievalExperienceModel,
  type Trajectory,
} from '@dreamgym/core';
import { type OfflinePreflight, preflightOffline } from '@dreamgym/core/eval';
import {
  type ExperiencePromptFormat,
  GroundedHybridExperienceModel,
  learnActionRefusal,
  type OutcomeJudgeOptions,
  ReasoningExperienceModel,
  type TokenCounter,
  WorldMemory,
} from '@dreamgym/core/experience';
import type { ChatModel } from '@dreamgym/core/models';

/** Which parts {@link ExperienceGrounding.learn} learns. */
export interface ExperienceGroundingOptions {
  /**
   * Learn the `OutcomeJudge` that decides every synthetic step's outcome. Default true;
   * `false` leaves the outcome to the model (the retrieved neighbours' vote, the LLM's answer).
   */
  outcomeJudge?: boolean;
  /** Learn the `WorldMemory` of the trajectories' worlds for the retrieval model. Default true. */
  worldMemory?: boolean;
}

/** The parts only {@link createExperienceModel} reads. */
interface GroundingParts {
  retrieval: RetrievalExperienceModel;
  /**
   * The reward rule where the offline episodes end with graded rewards (between failure's 0
   * and success's 1): model mode, so a judged failed ending earns the model's partial reward.
   */
  gradedReward: { reward?: { mode: 'model' } };
  outcomeJudge: OutcomeJudge | undefined;
  /** How the outcome judge was trained (for the pre-flight's held-out copy). */
  judgeOptions?: OutcomeJudgeOptions;
}

let partsOf: (grounding: ExperienceGrounding) => GroundingParts;

/**
 * What a domain's experience models are grounded in, learned once from its offline
 * trajectories: the retrieval model (with the world memory) and the outcome judge. Its parts
 * are private on purpose: the retrieval model alone pays by its neighbours' vote, so no door
 * can serve it; {@link createExperienceModel} composes them into a servable model.
 */
export class ExperienceGrounding {
  /** The domain the parts were learned for. */
  readonly adapter: DomainAdapter;
  readonly #parts: GroundingParts;

  static {
    partsOf = (grounding) => grounding.#parts;
  }

  private constructor(adapter: DomainAdapter, parts: GroundingParts) {
    this.adapter = adapter;
    this.#parts = parts;
  }

  /**
   * Learns the parts from `trajectories` (successes and failures). Every call learns new
   * parts, so a model that learns from one run's real episodes (`ExperienceModel.learn`) is
   * not the model another run starts from.
   */
  static learn(
    adapter: DomainAdapter,
    trajectories: readonly Trajectory[],
    options: ExperienceGroundingOptions = {},
    log: (message: string) => void = () => {},
  ): ExperienceGrounding {
    const parseAction = (text: string) => adapter.parseAction(text);
    const worldMemory =
      (options.worldMemory ?? true)
        ? WorldMemory.fromTrajectories(trajectories, { parseAction })
        : undefined;
    if (worldMemory) {
      log(
        `world memory: ${worldMemory.size} first outcomes of one-entity actions in ${worldMemory.worlds} worlds`,
      );
    }
    // Graded endings (WebShop's attribute match): the partial reward the data carries is
    // kept on the endings the judge fails, where it is the neighbours' mean.
    const gradedEndings = trajectories.filter((trajectory) => {
      const last = trajectory.steps.at(-1);
      return last !== undefined && last.reward > 0 && last.reward < 1;
    }).length;
    const gradedReward = gradedEndings > 0 ? { reward: { mode: 'model' as const } } : {};
    if (gradedEndings > 0) {
      log(
        `rewards: ${gradedEndings} offline episodes end with a partial reward, so a synthetic episode judged to end in failure earns its neighbours' mean reward`,
      );
    }
    const retrieval = new RetrievalExperienceModel({
      parseAction,
      ...gradedReward,
      ...(adapter.experienceHints ? { hints: adapter.experienceHints } : {}),
      ...(worldMemory ? { worldMemory } : {}),
    });
    let outcomeJudge: OutcomeJudge | undefined;
    let judgeOptions: OutcomeJudgeOptions | undefined;
    if (options.outcomeJudge ?? true) {
      const refusal = learnActionRefusal(adapter, trajectories);
      log(
        `action refusal: the candidate actions hold ${refusal.listed} of ${refusal.steps} offline actions${refusal.refuseUnlisted ? `, so an unlisted action is refused and answered ${refusal.answer.kind === 'unchanged' ? 'with the state unchanged' : JSON.stringify(refusal.answer.text)} (${refusal.answerSource === 'data' ? 'learned from the data' : refusal.answerSource === 'hint' ? "the adapter's hint" : 'the default: the data shows no failed action'})` : ', too few to refuse what they do not list'}`,
      );
      judgeOptions = { parseAction, refusal };
      outcomeJudge = OutcomeJudge.train(trajectories, judgeOptions);
      if (outcomeJudge) {
        const { steps, doneSteps, successSteps, counterfactuals } = outcomeJudge.summary;
        log(
          `outcome judge: learned from ${steps} offline steps (${doneSteps} ended an episode, ${successSteps} with success) and ${counterfactuals} counterfactual negatives`,
        );
      } else {
        // Said out loud: without a judge the neighbours' vote pays, which RL exploits.
        log(
          'outcome judge: none, no offline episode ended; outcomes are the experience model\'s own (add offline data with endings, e.g. --offline or "exploration")',
        );
      }
    }
    return new ExperienceGrounding(adapter, {
      retrieval,
      gradedReward,
      outcomeJudge,
      ...(outcomeJudge && judgeOptions ? { judgeOptions } : {}),
    });
  }

  /**
   * The offline part of the pre-flight check: a judge trained as this one was, on
   * `trajectories` less a held-out fifth of their tasks, teacher-forced on that fifth.
   * Undefined without a judge (`outcomeJudge: false`, or no offline episode ended) or when the
   * data is too small to hold any task out.
   */
  preflight(trajectories: readonly Trajectory[]): OfflinePreflight | undefined {
    const { judgeOptions } = this.#parts;
    if (judgeOptions === undefined) return undefined;
    return preflightOffline(trajectories, (train) => OutcomeJudge.train(train, judgeOptions));
  }

  /** Whether the models built on it have their outcomes judged by a learned `OutcomeJudge`. */
  get judged(): boolean {
    return this.#parts.outcomeJudge !== undefined;
  }
}

/** Which experience model {@link createExperienceModel} builds. */
export type ExperienceModelChoice =
  /** Retrieval over the replay buffer's transitions, no LLM. */
  | { kind: 'embedded' }
  /** The reasoning LLM (`llm`), or the LLM grounded by retrieval (`hybrid`). */
  | {
      kind: 'llm' | 'hybrid';
      /** The LLM (in process, or behind an OpenAI-compatible server). */
      chat: ChatModel;
      /** Prompt and answer format. Default the standard one. */
      format?: ExperiencePromptFormat;
      /** Sampling temperature. Default the chat model's. */
      temperature?: number;
      /** Exact token counter of the LLM, for prompt budgets. */
      countTokens?: TokenCounter;
    };

/**
 * The experience model `choice` names on `grounding`, its outcomes judged by the grounding's
 * outcome judge (unless `ExperienceGroundingOptions.outcomeJudge` was false): the one way the
 * CLI builds an experience model.
 */
export function createExperienceModel(
  grounding: ExperienceGrounding,
  choice: ExperienceModelChoice,
): ExperienceModel {
  const { adapter } = grounding;
  const { retrieval, outcomeJudge, gradedReward } = partsOf(grounding);
  let model: ExperienceModel = retrieval;
  if (choice.kind !== 'embedded') {
    const reasoning = new ReasoningExperienceModel({
      chat: choice.chat,
      environmentDescription: adapter.prompts.environmentDescription,
      ...gradedReward,
      ...(choice.format ? { format: choice.format } : {}),
      ...(choice.temperature === undefined ? {} : { temperature: choice.temperature }),
      ...(choice.countTokens ? { countTokens: choice.countTokens } : {}),
    });
    model =
      choice.kind === 'hybrid'
        ? new GroundedHybridExperienceModel({
            retrieval,
            reasoning,
            parseAction: (text) => adapter.parseAction(text),
          })
        : reasoning;
  }
  if (!outcomeJudge) return model;
  return new JudgedExperienceModel(model, outcomeJudge, {
    ...gradedReward,
    ...(adapter.goalCheck ? { goalCheck: (step) => adapter.goalCheck!(step) } : {}),
  });
}

/** The embedded experience model of {@link embeddedExperienceModel}, and what it is grounded in. */
export interface EmbeddedExperienceModel {
  /** Retrieval, its outcomes judged by the learned outcome judge unless it was switched off. */
  experienceModel: ExperienceModel;
  /** The parts it was built from, for {@link createExperienceModel}. */
  grounding: ExperienceGrounding;
}

/**
 * The embedded experience model `setUpDomain` builds, learned afresh from `trajectories`
 * ({@link ExperienceGrounding.learn}, then {@link createExperienceModel}).
 */
export function embeddedExperienceModel(
  adapter: DomainAdapter,
  trajectories: readonly Trajectory[],
  options: ExperienceGroundingOptions = {},
  log: (message: string) => void = () => {},
): EmbeddedExperienceModel {
  const grounding = ExperienceGrounding.learn(adapter, trajectories, options, log);
  return { experienceModel: createExperienceModel(grounding, { kind: 'embedded' }), grounding };
}
