/**
 * `JudgedExperienceModel`: any experience model whose outcome (reward and termination) comes
 * from an {@link OutcomeJudge} learned from real successes and failures. The wrapped model
 * still writes the reasoning and the next state; the judge decides whether the episode ends
 * and whether the task is accomplished, one way for the embedded, LLM and hybrid models. A
 * step the domain would not admit (the judge's `refusal`) is answered as the real environment
 * answers it, without asking the wrapped model: no change, no reward. Where the domain has a
 * goal check (`DomainAdapter.goalCheck`), its verdict on a step overrides the judge's.
 */
import type { GoalCheckInput } from '../mdp/goal-check.js';
import type { Observation, Trajectory } from '../mdp/schemas.js';
import { refusalObservation, refuses } from './action-refusal.js';
import type {
  ExperienceInput,
  ExperienceModel,
  ExperiencePrediction,
  InitialStateInput,
} from './experience-model.js';
import type { OutcomeJudge } from './outcome-judge.js';
import type { RewardRuleInput } from './outcome-reward.js';

/** An experience model whose outcomes are judged by a learned {@link OutcomeJudge}. */
export class JudgedExperienceModel implements ExperienceModel {
  readonly id: string;
  /** The model that writes reasoning and next states. */
  readonly base: ExperienceModel;
  /** The judge of every step's outcome. */
  readonly judge: OutcomeJudge;
  /** The reward rule the synthetic environment applies (the given one, else the base model's). */
  readonly rewardRule?: RewardRuleInput;
  private readonly goalCheck: ((step: GoalCheckInput) => boolean | undefined) | undefined;
  readonly initialState?: (input: InitialStateInput) => Promise<Observation>;

  /**
   * @param base the model whose next states are kept.
   * @param judge the learned outcome judge.
   * @param options.reward the reward rule the synthetic environment applies to the judged
   *   outcome (default: the base model's, else outcome reward, 1 on the successful final
   *   step). In `model` mode (offline data with graded endings) a judged failed ending earns
   *   the base model's reward: partial credit.
   * @param options.goalCheck the domain's goal check (`DomainAdapter.goalCheck`): `true` ends
   *   the step's episode with success, `false` refuses a success, `undefined` leaves the step
   *   to the judge.
   */
  constructor(
    base: ExperienceModel,
    judge: OutcomeJudge,
    options: {
      reward?: RewardRuleInput;
      goalCheck?: (step: GoalCheckInput) => boolean | undefined;
    } = {},
  ) {
    this.base = base;
    this.judge = judge;
    this.id = `${base.id}+judge`;
    const rewardRule = options.reward ?? base.rewardRule;
    if (rewardRule !== undefined) this.rewardRule = rewardRule;
    this.goalCheck = options.goalCheck;
    if (base.initialState) this.initialState = (input) => base.initialState!(input);
  }

  /** The wrapped model and the judge both learn from real trajectories (sim-to-real's). */
  learn(trajectories: readonly Trajectory[]): void {
    this.base.learn?.(trajectories);
    this.judge.learn(trajectories);
  }

  async predict(input: ExperienceInput): Promise<ExperiencePrediction> {
    const { refusal } = this.judge;
    if (refusal && refuses(refusal, input.state, input.action)) {
      // The real environment would not admit it: no change, no reward, its own answer.
      return {
        reasoning: 'The action is not among the admissible actions of this state: nothing changes.',
        observation: refusalObservation(refusal, input.state),
        done: false,
        success: false,
        info: { refused: true },
      };
    }
    const prediction = await this.base.predict(input);
    const verdict = this.judge.judge(input);
    const goal = this.goalCheck?.({
      task: input.task,
      history: input.history,
      action: input.action,
      nextState: prediction.observation,
    });
    // The domain's check settles the step: accomplished ends it with success; surely not
    // accomplished refuses a success the judge saw (the episode goes on).
    const judged =
      goal === undefined
        ? verdict
        : goal
          ? { done: true, success: true }
          : { done: verdict.done && !verdict.success, success: false };
    // The base model's reward is kept (for `model` mode) only where the judged episode ends in
    // failure: the partial credit of a graded ending (a purchase matching some of the
    // attributes). A judged success earns the success reward, and a step the judge does not
    // end earns nothing, whatever the neighbours voted.
    const { reward: baseReward, ...rest } = prediction;
    return {
      ...rest,
      done: judged.done,
      success: judged.success,
      ...(judged.done && !judged.success && baseReward !== undefined ? { reward: baseReward } : {}),
      info: {
        ...prediction.info,
        outcomeJudge: {
          doneProbability: verdict.doneProbability,
          successProbability: verdict.successProbability,
          baseDone: prediction.done,
          baseSuccess: prediction.success,
          ...(goal === undefined ? {} : { goalCheck: goal }),
        },
      },
    };
  }
}
