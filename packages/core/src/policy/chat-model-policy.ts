/**
 * `ChatModelPolicy`: an LLM behind the `ChatModel` interface (any OpenAI-compatible server)
 * acting under the agent prompt (`agent-prompt.ts`, the one `LlmPolicy` and the exporters
 * use): by default it thinks, then writes one action in an `<action>...</action>` block. Returns the parsed action and, when the server gives token
 * log-probabilities, the sum of the action tokens' log-probabilities. Outputs without an
 * action block, or with an action outside the admissible list or the domain grammar, are
 * counted and handled as configured: a reward penalty and a fallback action.
 */
import { ConfigError } from '../errors.js';
import type { Observation } from '../mdp/schemas.js';
import type { ChatModel, TokenLogprob } from '../models/chat-model.js';
import { type AgentPromptOptions, buildAgentMessages, locateAgentAnswer } from './agent-prompt.js';
import {
  candidateActionsOf,
  type Policy,
  type PolicyContext,
  type PolicyDecision,
} from './policy.js';

/**
 * What to send to the environment when the model's output is invalid:
 * - `skip`: the model's text as it is (the raw output when no action block was found), so the
 *   environment answers with its own "invalid action" observation and the step is spent;
 * - `first-candidate`: the first admissible action;
 * - `{ action }`: this configured default action.
 */
export type InvalidAnswerFallback = 'skip' | 'first-candidate' | { action: string };

/** Options of {@link ChatModelPolicy}; `answerFormat` defaults to `reasoned` here. */
export interface ChatModelPolicyOptions extends AgentPromptOptions {
  model: ChatModel;
  /** Sampling temperature. Default 1 (on-policy sampling for RL). */
  temperature?: number;
  /** Upper bound on generated tokens. Default 512. */
  maxTokens?: number;
  /** Ask the server for token log-probabilities. Default true. */
  logprobs?: boolean;
  /**
   * The domain grammar (`DomainAdapter.parseAction`): an action it rejects is invalid, and one it
   * accepts is replaced by its canonical `text`. Without it, only the admissible list is checked.
   */
  parseAction?: (text: string) => { text: string };
  /**
   * Accept actions outside the admissible list / candidates when the grammar accepts them
   * (free-text actions such as `search[...]`). Default false.
   */
  allowActionsOutsideCandidates?: boolean;
  /** Added to the step's reward when the output is invalid (<= 0). Default -0.1. */
  invalidAnswerPenalty?: number;
  /** What to do with an invalid output. Default `skip`. */
  invalidAnswerFallback?: InvalidAnswerFallback;
  /** Identifies the policy. Default `chat:<model id>`. */
  id?: string;
}

/** Counters of a {@link ChatModelPolicy}. */
export interface ChatModelPolicyStats {
  /** Decisions made. */
  decisions: number;
  /** Outputs that state no action (no `<action>` block, or an empty `plain` answer). */
  unparsable: number;
  /** Outputs whose action was not admissible or not in the grammar. */
  invalid: number;
  /** Decisions whose action log-probability was known. */
  withLogprob: number;
}

function normalise(action: string): string {
  return action.trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * Sum of the log-probabilities of the tokens that overlap characters [start, end) of the
 * text the tokens spell; undefined when the tokens do not spell `text`.
 */
export function spanLogprob(
  text: string,
  tokens: readonly TokenLogprob[],
  start: number,
  end: number,
): number | undefined {
  let offset = 0;
  let sum = 0;
  let any = false;
  for (const { token, logprob } of tokens) {
    const tokenEnd = offset + token.length;
    if (text.slice(offset, tokenEnd) !== token) return undefined;
    if (tokenEnd > start && offset < end) {
      sum += logprob;
      any = true;
    }
    offset = tokenEnd;
  }
  return offset === text.length && any ? sum : undefined;
}

/** An LLM policy. */
export class ChatModelPolicy implements Policy {
  readonly id: string;
  private readonly counters: ChatModelPolicyStats = {
    decisions: 0,
    unparsable: 0,
    invalid: 0,
    withLogprob: 0,
  };

  constructor(private readonly options: ChatModelPolicyOptions) {
    const penalty = options.invalidAnswerPenalty ?? -0.1;
    if (!(penalty <= 0) || !Number.isFinite(penalty)) {
      throw new ConfigError(
        'invalidAnswerPenalty must be zero or negative (it is added to the reward).',
        {
          field: 'invalidAnswerPenalty',
        },
      );
    }
    this.id = options.id ?? `chat:${options.model.id}`;
  }

  /** Decisions, unparsable and invalid outputs so far. */
  stats(): ChatModelPolicyStats {
    return { ...this.counters };
  }

  async act(observation: Observation, context: PolicyContext): Promise<PolicyDecision> {
    const format = this.options.answerFormat ?? 'reasoned';
    const candidates = candidateActionsOf(observation, context.candidates);
    const messages = buildAgentMessages(
      context.task,
      observation,
      context.history.map((step) => step.action),
      candidates,
      { ...this.options, answerFormat: format },
    );
    const wantLogprobs = this.options.logprobs ?? true;
    const response = await this.options.model.complete({
      messages,
      temperature: this.options.temperature ?? 1,
      maxTokens: this.options.maxTokens ?? 512,
      logprobs: wantLogprobs,
      ...(context.random ? { seed: context.random.nextUint32() & 0x7fffffff } : {}),
      ...(context.signal ? { signal: context.signal } : {}),
    });
    this.counters.decisions += 1;
    const info: Record<string, unknown> = { messages, output: response.text };
    const extracted = locateAgentAnswer(response.text, format);
    if (!extracted) {
      this.counters.unparsable += 1;
      return this.invalid(
        response.text,
        candidates,
        { ...info, unparsable: true },
        format === 'plain' ? 'empty answer' : 'no <action> block',
      );
    }
    let action = extracted.action;
    if (this.options.parseAction) {
      try {
        action = this.options.parseAction(action).text;
      } catch (error) {
        this.counters.invalid += 1;
        return this.invalid(extracted.action, candidates, info, (error as Error).message);
      }
    }
    if (candidates.length > 0 && !this.options.allowActionsOutsideCandidates) {
      const match = candidates.find((candidate) => normalise(candidate) === normalise(action));
      if (match === undefined) {
        this.counters.invalid += 1;
        return this.invalid(extracted.action, candidates, info, 'not an admissible action');
      }
      action = match;
    }
    const logprob = response.logprobs
      ? spanLogprob(response.text, response.logprobs, extracted.start, extracted.end)
      : undefined;
    if (logprob !== undefined) this.counters.withLogprob += 1;
    return { action, ...(logprob === undefined ? {} : { logprob }), info };
  }

  private invalid(
    text: string,
    candidates: readonly string[],
    info: Record<string, unknown>,
    reason: string,
  ): PolicyDecision {
    const fallback = this.options.invalidAnswerFallback ?? 'skip';
    let action = text;
    if (fallback === 'first-candidate' && candidates.length > 0) action = candidates[0]!;
    else if (typeof fallback === 'object') action = fallback.action;
    return {
      action,
      rewardPenalty: this.options.invalidAnswerPenalty ?? -0.1,
      info: {
        ...info,
        invalidAction: true,
        invalidReason: reason,
        fallback: typeof fallback === 'object' ? 'default' : fallback,
      },
    };
  }
}
