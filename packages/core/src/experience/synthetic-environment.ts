/**
 * `SyntheticEnvironment`: an `Environment` whose transitions come from an experience
 * model grounded by a replay buffer, for one domain adapter. The agent steps the model,
 * not the real environment.
 */
import type { DomainAdapter, ParsedAction } from '../adapter.js';
import {
  ActionParseError,
  ConfigError,
  EnvironmentError,
  EnvironmentStateError,
} from '../errors.js';
import type { Environment } from '../mdp/environment.js';
import type { Observation, Step, StepResult, Task } from '../mdp/schemas.js';
import { candidateActionsAt } from '../policy/policy.js';
import type {
  RetrievalFilter,
  ScoredTransition,
  TransitionRetriever,
} from '../replay/retriever.js';
import type { ExperienceModel } from './experience-model.js';
import {
  applyRewardRule,
  type RewardRule,
  type RewardRuleInput,
  rewardRuleOf,
} from './outcome-reward.js';

/** Options of {@link SyntheticEnvironment}. */
export interface SyntheticEnvironmentOptions {
  /** M_exp: predicts each transition. */
  model: ExperienceModel;
  /** The replay buffer the demonstrations D_k are retrieved from. */
  retriever: TransitionRetriever;
  /** The domain: action grammar, candidate actions, name. */
  adapter: Pick<DomainAdapter, 'name' | 'parseAction' | 'candidateActions'>;
  /** Demonstrations retrieved per step (k). `0` ablates retrieval. Default 4. */
  k?: number;
  /** Give the model the episode's history. `false` ablates it. Default `true`. */
  useHistory?: boolean;
  /** Steps after which the episode ends (`done` and `truncated`). Default 50. */
  maxSteps?: number;
  /**
   * The reward rule that turns each prediction into r_{t+1}, applied here and nowhere else.
   * Default: the model's own `rewardRule`, else the outcome reward (1 on a successful final
   * step, else 0).
   */
  reward?: RewardRuleInput;
  /**
   * Reward of an action outside the grammar: 0 or negative, added to the rule's failure
   * reward (the one sign convention for penalties, as in `ChatModelPolicy` and the loop's
   * config). Default 0.
   */
  invalidActionPenalty?: number;
  /** Observation text for an action outside the grammar. Default: `Nothing happens.` and why. */
  invalidActionObservation?: (action: string, error: ActionParseError) => string;
  /** Restricts retrieval beyond the adapter's domain (sources, tasks...). */
  filter?: RetrievalFilter;
  /** Put the instruction in retrieval queries (for buffers that embed it). Default `true`. */
  queryWithInstruction?: boolean;
}

/**
 * The DreamGym synthetic environment. It can fork ({@link SyntheticEnvironment.fork}): a copy
 * in the current state plays on from there, which real environments cannot do.
 */
export class SyntheticEnvironment implements Environment {
  private readonly model: ExperienceModel;
  private readonly retriever: TransitionRetriever;
  private readonly adapter: SyntheticEnvironmentOptions['adapter'];
  private readonly options: SyntheticEnvironmentOptions;
  private readonly k: number;
  private readonly maxSteps: number;
  private readonly rule: RewardRule;
  private task: Task | undefined;
  private state: Observation | undefined;
  private history: Step[] = [];
  private done = false;
  private closed = false;

  constructor(options: SyntheticEnvironmentOptions) {
    this.k = options.k ?? 4;
    this.maxSteps = options.maxSteps ?? 50;
    if (!Number.isInteger(this.k) || this.k < 0) {
      throw new ConfigError(`SyntheticEnvironment: k must be an integer >= 0, got ${this.k}.`, {
        field: 'k',
      });
    }
    if (!Number.isInteger(this.maxSteps) || this.maxSteps < 1) {
      throw new ConfigError(
        `SyntheticEnvironment: maxSteps must be a positive integer, got ${this.maxSteps}.`,
        {
          field: 'maxSteps',
        },
      );
    }
    const penalty = options.invalidActionPenalty ?? 0;
    if (!(Number.isFinite(penalty) && penalty <= 0)) {
      throw new ConfigError(
        `SyntheticEnvironment: invalidActionPenalty must be zero or negative (it is added to the reward), got ${penalty}.`,
        { field: 'invalidActionPenalty' },
      );
    }
    this.model = options.model;
    this.rule = rewardRuleOf(options.model, options.reward);
    this.retriever = options.retriever;
    this.adapter = options.adapter;
    this.options = options;
  }

  /** The steps of the current episode so far. */
  get steps(): readonly Step[] {
    return this.history;
  }

  async reset(task: Task): Promise<Observation> {
    this.ensureOpen('reset');
    let initial = task.initialObservation;
    if (initial === undefined) {
      if (!this.model.initialState) {
        throw new EnvironmentError(
          `Task ${task.id} has no initialObservation and experience model ${this.model.id} cannot synthesise one. Give the task an initialObservation.`,
        );
      }
      const demos = await this.retriever.search(
        { state: { text: task.instruction }, action: '', instruction: task.instruction },
        Math.max(this.k, 64),
        this.filter(),
      );
      initial = await this.model.initialState({ task, demos });
    }
    this.task = task;
    this.history = [];
    this.done = false;
    this.state = this.withActions(initial, []);
    return this.state;
  }

  async step(action: string): Promise<StepResult> {
    this.ensureOpen('step');
    if (!this.task || !this.state) throw new EnvironmentStateError('step() before reset().');
    if (this.done) throw new EnvironmentStateError('step() after the episode ended; call reset().');
    const task = this.task;
    const state = this.state;
    const stepIndex = this.history.length;
    let parsed: ParsedAction;
    try {
      parsed = this.adapter.parseAction(action);
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      return this.finishInvalid(action, error, state, stepIndex);
    }

    const demos: ScoredTransition[] =
      this.k === 0
        ? []
        : await this.retriever.search(
            {
              state,
              action: parsed.text,
              ...(this.options.queryWithInstruction === false
                ? {}
                : { instruction: task.instruction }),
            },
            this.k,
            this.filter(),
          );
    const history = this.options.useHistory === false ? [] : this.history;
    const prediction = await this.model.predict({
      task,
      history,
      state,
      action: parsed.text,
      demos,
    });

    // The one place a synthetic step's reward is decided: the reward rule on the prediction.
    const outcome = applyRewardRule(prediction, this.rule);
    const step: Step = {
      observation: state,
      action: parsed.text,
      reward: outcome.reward,
      done: outcome.done,
      reasoning: prediction.reasoning,
    };
    const truncated = !outcome.done && stepIndex + 1 >= this.maxSteps;
    this.history.push(step);
    const observation = this.withActions(prediction.observation, this.history);
    // A predicted state with nothing to act on ends the episode, unsuccessful (the model's
    // "Nothing happens." on a web page, whose state mapper finds no element in it): no policy
    // could take the next step.
    const done = outcome.done || truncated || observation.actions!.length === 0;
    step.done = done;
    this.state = observation;
    this.done = done;
    return {
      observation,
      reward: outcome.reward,
      done,
      truncated,
      info: {
        ...prediction.info,
        success: outcome.success,
        // A model that refused the action (the domain would not admit it) changed nothing.
        invalidAction: prediction.info?.refused === true,
        reasoning: prediction.reasoning,
        demoIds: demos.map((demo) => demo.transition.id),
        experienceModel: this.model.id,
      },
    };
  }

  /**
   * A new environment in this one's current state: the same task (a curriculum's generated
   * task included), the same state and history, the same experience model, replay buffer and
   * world. Each steps on alone: neither sees the other's later steps. Before `reset` the fork
   * is unstarted too; after `done` it is ended too.
   */
  async fork(): Promise<SyntheticEnvironment> {
    this.ensureOpen('fork');
    const fork = new SyntheticEnvironment(this.options);
    fork.task = this.task;
    fork.state = this.state;
    fork.history = this.history.slice();
    fork.done = this.done;
    return fork;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.task = undefined;
    this.state = undefined;
    this.history = [];
  }

  private finishInvalid(
    action: string,
    error: ActionParseError,
    state: Observation,
    stepIndex: number,
  ): StepResult {
    const text =
      this.options.invalidActionObservation?.(action, error) ?? `Nothing happens. ${error.message}`;
    const reward = this.rule.failureReward + (this.options.invalidActionPenalty ?? 0);
    const truncated = stepIndex + 1 >= this.maxSteps;
    this.history.push({ observation: state, action, reward, done: truncated });
    // The world is unchanged: the next state is the same place with the same actions.
    const observation: Observation = { ...state, text };
    this.state = observation;
    this.done = truncated;
    return {
      observation,
      reward,
      done: truncated,
      truncated,
      info: {
        success: false,
        invalidAction: true,
        demoIds: [],
        experienceModel: this.model.id,
      },
    };
  }

  private withActions(observation: Observation, history: readonly Step[]): Observation {
    if (observation.actions !== undefined && observation.actions.length > 0) return observation;
    const actions = candidateActionsAt(observation, history, (state, steps) =>
      this.adapter.candidateActions(state, steps),
    );
    return { ...observation, actions: [...actions] };
  }

  private filter(): RetrievalFilter {
    return { domain: this.adapter.name, ...this.options.filter };
  }

  private ensureOpen(method: string): void {
    if (this.closed)
      throw new EnvironmentStateError(`${method}() on a closed SyntheticEnvironment.`);
  }
}
