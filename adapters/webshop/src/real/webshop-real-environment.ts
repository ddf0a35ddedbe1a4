/**
 * The real WebShop {@link Environment}: one environment of a running WebShop server that
 * speaks the AgentGym WebShop protocol. Actions outside the grammar or not on the page are
 * answered locally (the page does not change), as WebShop itself ignores them.
 */
import {
  ActionParseError,
  ConfigError,
  type Environment,
  EnvironmentError,
  EnvironmentStateError,
  type Observation,
  type ParsedAction,
  parseOptions,
  type StepResult,
  type Task,
} from '@dreamgym/core';
import { ASIN_PATTERN, checkWebshopAction, WEBSHOP_BUTTONS } from '../action-grammar.js';
import { normalizeWebshopInstruction } from '../datasets/human-goals.js';
import { parseWebshopPage } from '../pages/parse-page.js';
import type { WebshopPage } from '../pages/webshop-page.js';
import { webshopPageToObservation } from '../state-mapper.js';
import {
  type WebshopRealOptions,
  type WebshopRealOptionsInput,
  WebshopRealOptionsSchema,
} from './options.js';
import {
  type WebshopAvailableActionsAnswer,
  WebshopConnectionError,
  WebshopProtocolClient,
  WebshopServerAnswerError,
} from './protocol-client.js';

/**
 * The server goal a task is played on: `task.meta.sessionId` when set (the server's own goal
 * index), else `task.meta.goalIndex` (the index in `human_goals.json`, which the loaders set).
 *
 * @throws ConfigError for a generated task or one that names no goal.
 */
export function webshopSessionOf(task: Task): number {
  if (task.origin === 'generated') {
    throw new ConfigError(
      `Task ${task.id} is a generated curriculum task: a WebShop server plays only its own goals (seed tasks from loadWebshopGoalTasks, with meta.goalIndex).`,
      { field: 'task.origin' },
    );
  }
  const session = task.meta.sessionId ?? task.meta.goalIndex;
  if (typeof session !== 'number' || !Number.isInteger(session) || session < 0) {
    throw new ConfigError(
      `Task ${task.id} names no WebShop goal: expected task.meta.goalIndex (its index in human_goals.json) or task.meta.sessionId (the server's goal index); got ${JSON.stringify(session)}.`,
      { field: 'task.meta.goalIndex' },
    );
  }
  return session;
}

interface Episode {
  task: Task;
  done: boolean;
  steps: number;
  page: WebshopPage;
  available: WebshopAvailableActionsAnswer;
  observation: Observation;
  query?: string;
  asin?: string;
  selected: Record<string, string>;
  /** Set when the server lost the episode: every later step rethrows it. */
  lost?: EnvironmentError;
}

/** The real WebShop environment. Create it with {@link connectWebshopReal}. */
export class WebshopRealEnvironment implements Environment {
  private closed = false;
  private episode: Episode | undefined;

  private constructor(
    private readonly options: WebshopRealOptions,
    private readonly client: WebshopProtocolClient,
    private environmentId: number,
  ) {}

  /** Checks that the server answers, and opens an environment on it. */
  static async connect(input: WebshopRealOptionsInput = {}): Promise<WebshopRealEnvironment> {
    const options = parseOptions(WebshopRealOptionsSchema, input, 'WebShop real-environment');
    const fromEnvironment = process.env.DREAMGYM_WEBSHOP_URL?.trim();
    const url = options.url ?? (fromEnvironment ? fromEnvironment : undefined);
    if (url === undefined) {
      throw new ConfigError(
        'The real WebShop environment is a running WebShop server (AgentGym protocol): pass url (e.g. http://127.0.0.1:36001) or set DREAMGYM_WEBSHOP_URL. The WebShop catalogue and search engine do not ship with @dreamgym/webshop; see its README to start the server. Without one, train and evaluate on the synthetic environment (dreamgym train --eval-env synthetic).',
        { field: 'url' },
      );
    }
    const client = new WebshopProtocolClient(url, options.requestTimeoutMs, options);
    await client.health();
    return new WebshopRealEnvironment(options, client, await client.create());
  }

  /** Base URL of the server. */
  get url(): string {
    return this.client.baseUrl;
  }

  /** The server's id of this environment (`env_idx`). */
  get environmentIndex(): number {
    return this.environmentId;
  }

  private assertOpen(method: string): void {
    if (this.closed) {
      throw new EnvironmentStateError(
        `${method}() on a closed WebShop environment: connect a new one.`,
      );
    }
  }

  /** Whether the server still knows our environment (it forgets all of them on a restart). */
  private async environmentKnown(): Promise<boolean> {
    try {
      return (await this.client.listEnvironments()).includes(this.environmentId);
    } catch {
      return false;
    }
  }

  private readPage(
    observation: string,
    available: WebshopAvailableActionsAnswer,
    tracked: { query?: string; asin?: string; selected: Record<string, string> },
  ): WebshopPage {
    return parseWebshopPage(observation, this.options.observationMode, {
      clickables: available.clickables,
      hasSearchBar: available.has_search_bar,
      ...(tracked.query === undefined ? {} : { query: tracked.query }),
      ...(tracked.asin === undefined ? {} : { asin: tracked.asin }),
      selected: tracked.selected,
    });
  }

  async reset(task: Task): Promise<Observation> {
    this.assertOpen('reset');
    const session = webshopSessionOf(task);
    this.episode = undefined;
    let start: string;
    try {
      start = await this.client.reset(this.environmentId, session);
    } catch (error) {
      if (!(error instanceof WebshopServerAnswerError) || (await this.environmentKnown())) {
        throw this.explainReset(error, task, session);
      }
      // The server restarted and forgot our environment: open another and try once more.
      this.environmentId = await this.client.create();
      start = await this.client.reset(this.environmentId, session).catch((again: unknown) => {
        throw this.explainReset(again, task, session);
      });
    }
    const available = await this.client.availableActions(this.environmentId);
    const page = this.readPage(start, available, { selected: {} });
    if (this.options.checkInstruction && page.instruction !== undefined) {
      const server = normalizeWebshopInstruction(page.instruction);
      const wanted = normalizeWebshopInstruction(task.instruction);
      if (server !== wanted) {
        throw new EnvironmentError(
          `The WebShop server's goal ${session} is "${page.instruction}", but task ${task.id} says "${task.instruction}": the server's goal order differs from human_goals.json (AgentGym's fork lists price variants of each instruction). Give the task meta.sessionId with the server's goal index, or connect with checkInstruction: false.`,
        );
      }
    }
    const observation = webshopPageToObservation(page, page.instruction ?? task.instruction);
    this.episode = { task, done: false, steps: 0, page, available, observation, selected: {} };
    return observation;
  }

  private explainReset(error: unknown, task: Task, session: number): unknown {
    if (error instanceof WebshopServerAnswerError && error.status >= 500) {
      return new EnvironmentError(
        `The WebShop server could not start goal ${session} for task ${task.id}: ${error.message}. The server may have fewer goals than that, or it failed; see its log.`,
        { cause: error },
      );
    }
    return error;
  }

  async step(action: string): Promise<StepResult> {
    this.assertOpen('step');
    const episode = this.episode;
    if (episode === undefined) {
      throw new EnvironmentStateError('step() before reset(): start an episode with reset(task).');
    }
    if (episode.lost) throw episode.lost;
    if (episode.done) {
      throw new EnvironmentStateError(
        `step() after the episode of task ${episode.task.id} ended (done): call reset(task) to start another.`,
      );
    }
    episode.steps += 1;
    const truncated = episode.steps >= this.options.maxSteps;
    let parsed: ParsedAction;
    try {
      parsed = checkWebshopAction(action, {
        hasSearchBar: episode.available.has_search_bar,
        clickables: episode.available.clickables,
      });
    } catch (error) {
      if (!ActionParseError.isInstance(error)) throw error;
      episode.done = truncated;
      return {
        observation: {
          ...episode.observation,
          text: `Nothing happens. ${error.message}\n\n${episode.observation.text}`,
        },
        reward: 0,
        done: truncated,
        truncated,
        info: { success: false, invalidAction: true, score: 0, page: episode.page.kind },
      };
    }

    let answer: Awaited<ReturnType<WebshopProtocolClient['step']>>;
    let available: WebshopAvailableActionsAnswer;
    try {
      answer = await this.client.step(this.environmentId, parsed.text);
      available = answer.done
        ? { has_search_bar: false, clickables: [] }
        : await this.client.availableActions(this.environmentId);
    } catch (error) {
      if (
        error instanceof WebshopConnectionError ||
        (error instanceof WebshopServerAnswerError && !(await this.environmentKnown()))
      ) {
        // We cannot know what the server did with the action: the episode cannot go on.
        episode.lost = new EnvironmentError(
          `The WebShop server lost the episode of task ${episode.task.id} at step ${episode.steps} (${(error as Error).message}). Call reset() to play again.`,
          { cause: error },
        );
        throw episode.lost;
      }
      throw error;
    }

    this.track(episode, parsed);
    const page = this.readPage(answer.state, available, episode);
    const score = answer.done ? answer.reward : 0;
    if (page.kind === 'done' && page.score === undefined && answer.done) page.score = score;
    const observation = webshopPageToObservation(
      page,
      page.instruction ?? episode.task.instruction,
    );
    const success = answer.done && score >= 1;
    const done = answer.done || truncated;
    Object.assign(episode, { page, available, observation, done });
    return {
      observation,
      reward: this.options.reward === 'score' ? answer.reward : success ? 1 : 0,
      done,
      truncated: !answer.done && truncated,
      info: { success, invalidAction: false, score, page: page.kind },
    };
  }

  /** Follows what the action did to the query, the product and the chosen options. */
  private track(episode: Episode, parsed: ParsedAction): void {
    const value = parsed.args[0]!;
    if (parsed.type === 'search') {
      episode.query = value;
      episode.asin = undefined;
      episode.selected = {};
      return;
    }
    if (value === WEBSHOP_BUTTONS.backToSearch) {
      episode.query = undefined;
      episode.asin = undefined;
      episode.selected = {};
    } else if (ASIN_PATTERN.test(value) && episode.page.kind === 'results') {
      episode.asin = value;
    } else if (episode.page.kind === 'item') {
      const option = (episode.page.options ?? []).find((candidate) =>
        candidate.values.some((entry) => entry.toLowerCase() === value.toLowerCase()),
      );
      if (option) episode.selected = { ...episode.selected, [option.name]: value };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.episode = undefined;
    await this.client.close(this.environmentId).catch(() => undefined);
  }
}
