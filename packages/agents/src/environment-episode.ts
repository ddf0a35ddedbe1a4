/**
 * `EnvironmentEpisode`: one episode of a DreamGym environment (synthetic or real, any
 * adapter) played through a tool: the agent calls `act` with an action in the domain's
 * grammar and reads back what followed. The reward and the end come from the environment;
 * `reportReward` is for agents whose outcome is judged outside it.
 */
import type { DomainAdapter, Environment, Observation, Task } from '@dreamgym/core';

/** The `act` tool every framework binding exposes, described from the adapter. */
export interface ActToolDescription {
  name: 'act';
  /** What the tool does and the domain's action grammar (the adapter's agent instructions). */
  description: string;
  /** What the `action` argument holds. */
  actionDescription: string;
}

/** One step the agent took through the tool. */
export interface EpisodeStep {
  action: string;
  observation: string;
  reward: number;
  /**
   * The action did not parse in the domain's grammar (the environment was not stepped), or the
   * environment flagged it invalid.
   */
  invalid: boolean;
}

/** The `act` tool's description for a domain. */
export function actToolDescription(
  adapter: Pick<DomainAdapter, 'name' | 'prompts'>,
): ActToolDescription {
  return {
    name: 'act',
    description: `Take one action in the ${adapter.name} environment and read what follows. ${adapter.prompts.agentInstructions}`,
    actionDescription: `One action, written exactly as the environment's grammar says (for example one of the admissible actions it lists).`,
  };
}

/** One episode of `environment` on `task`, played through the `act` tool. */
export class EnvironmentEpisode {
  readonly steps: EpisodeStep[] = [];
  /** Sum of the environment's rewards, or the reported reward when `reportReward` was called. */
  reward = 0;
  done = false;
  /** The environment said the task was achieved. */
  success = false;
  /** The first observation, what the agent is told at the start. */
  readonly start: Observation;
  private readonly onEnd: () => void;

  private constructor(
    readonly task: Task,
    readonly tool: ActToolDescription,
    private readonly environment: Environment,
    private readonly adapter: Pick<DomainAdapter, 'parseAction'>,
    start: Observation,
    private readonly maxSteps: number,
    onEnd: () => void,
  ) {
    this.start = start;
    this.onEnd = onEnd;
  }

  /**
   * Resets `environment` on `task`. `onEnd` is called once when the episode ends (the
   * environment says done, or `maxSteps` actions were taken).
   */
  static async begin(options: {
    environment: Environment;
    task: Task;
    adapter: Pick<DomainAdapter, 'name' | 'prompts' | 'parseAction'>;
    maxSteps: number;
    onEnd?: () => void;
  }): Promise<EnvironmentEpisode> {
    const start = await options.environment.reset(options.task);
    return new EnvironmentEpisode(
      options.task,
      actToolDescription(options.adapter),
      options.environment,
      options.adapter,
      start,
      options.maxSteps,
      options.onEnd ?? (() => {}),
    );
  }

  /** What the agent reads first: the task and the first observation. */
  get prompt(): string {
    return `${this.task.instruction}\n\n${describe(this.start)}`;
  }

  /** The `act` tool's body: takes `action`, answers with what the agent observes. */
  async act(action: string): Promise<string> {
    if (this.done) return 'The episode is over: no more actions are taken.';
    const text = action.trim();
    let parsed: string;
    try {
      parsed = this.adapter.parseAction(text).text;
    } catch (error) {
      const observation = `Invalid action: ${(error as Error).message}`;
      this.record({ action: text, observation, reward: 0, invalid: true });
      return observation;
    }
    const result = await this.environment.step(parsed);
    this.reward += result.reward;
    const observation = describe(result.observation);
    this.record({
      action: parsed,
      observation,
      reward: result.reward,
      invalid: result.info.invalidAction === true,
    });
    if (result.done) {
      this.success = result.info.success === true || (!result.truncated && result.reward > 0);
      this.end();
    }
    return this.done ? `${observation}\n(The episode has ended.)` : observation;
  }

  /** Sets the episode's reward from outside (a judge, a user's rating) and ends it. */
  reportReward(reward: number, success = reward > 0): void {
    this.reward = reward;
    this.success = success;
    this.end();
  }

  private record(step: EpisodeStep): void {
    this.steps.push(step);
    if (this.steps.length >= this.maxSteps) this.end();
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    this.onEnd();
  }
}

/** An observation as the agent reads it: the text, then the admissible actions where listed. */
function describe(observation: Observation): string {
  const actions = observation.actions;
  if (!actions || actions.length === 0) return observation.text;
  return `${observation.text}\nAdmissible actions: ${actions.join(', ')}`;
}
