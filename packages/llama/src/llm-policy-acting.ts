/**
 * How an `LlmPolicy` acts, in one of two ways:
 * - `generate` (default): the model writes its answer; the action is parsed with the answer
 *   format and the domain's grammar. Invalid outputs (no action, outside the grammar or the
 *   admissible list, cut by the token limit) are counted, get `invalidAnswerPenalty` (zero or
 *   negative, added to the step's reward) and the configured fallback action. log pi is the sum
 *   of the sampled tokens' log-probabilities, and each token's is kept for the update's
 *   token-level importance ratios.
 * - `score`: the admissible actions are scored by their likelihood as answers and one is
 *   sampled from the softmax over them; log pi is that softmax's log-probability. Never invalid.
 */
import {
  ConfigError,
  type Observation,
  type PolicyContext,
  type PolicyDecision,
} from '@dreamgym/core';
import type { ChatMessage } from '@dreamgym/core/models';
import {
  agentAnswerFormat,
  buildAgentMessages,
  candidateActionsOf,
  formatAgentAnswer,
  parseAgentAnswer,
} from '@dreamgym/core/policy';
import type { LlmDecisionRecord, LlmPolicyOptions, LlmPolicyStats } from './llm-policy-options.js';

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function normaliseAction(action: string): string {
  return action.trim().replace(/\s+/g, ' ').toLowerCase();
}

/** The acting side of an LLM policy: prompts, generation or scoring, and the decision. */
export class LlmPolicyActor {
  /** Decisions in flight, and since when one has been (for `actSeconds`). */
  private acting = 0;
  private actingSince = 0;

  /** `counters`: the policy's, whose decision counts and acting time this updates. */
  constructor(
    private readonly options: LlmPolicyOptions,
    private readonly counters: LlmPolicyStats,
  ) {}

  /** How this step is decided: `auto` scores where there are candidates. */
  private selection(candidates: readonly string[]): 'generate' | 'score' {
    const selection = this.options.actionSelection ?? 'auto';
    if (selection !== 'auto') return selection;
    return candidates.length > 0 ? 'score' : 'generate';
  }

  async act(observation: Observation, context: PolicyContext): Promise<PolicyDecision> {
    if (this.acting++ === 0) this.actingSince = performance.now();
    try {
      const candidates = candidateActionsOf(observation, context.candidates);
      const previous = context.history.map((step) => step.action);
      const messages = buildAgentMessages(
        context.task,
        observation,
        previous,
        candidates,
        this.options.prompt,
      );
      this.counters.decisions += 1;
      return this.selection(candidates) === 'score'
        ? await this.choose(messages, candidates, context)
        : await this.write(messages, candidates, context);
    } finally {
      if (--this.acting === 0) {
        this.counters.actSeconds += (performance.now() - this.actingSince) / 1000;
      }
    }
  }

  /** `generate`: the model writes its answer. */
  private async write(
    messages: ChatMessage[],
    candidates: readonly string[],
    context: PolicyContext,
  ): Promise<PolicyDecision> {
    const { runtime } = this.options;
    const format = agentAnswerFormat(this.options.prompt);
    const generation = await runtime.generate({
      messages,
      maxTokens: this.options.maxTokens ?? 64,
      temperature: context.greedy ? 0 : (this.options.temperature ?? 1),
      ...(context.random ? { seed: context.random.nextUint32() & 0x7fffffff } : {}),
      stop: format === 'tagged' ? ['</action>'] : ['\n'],
      ...(context.signal ? { signal: context.signal } : {}),
    });
    // The prompt as the engine evaluated it where it says so (a server's own tokenisation).
    const prompt = generation.promptTokens ?? (await runtime.promptTokens(messages));
    let record: LlmDecisionRecord | undefined;
    if (generation.tokens.length > 0) {
      record = {
        kind: 'sequence',
        prompt,
        completion: generation.tokens.map((token) => token.id),
        behaviour: generation.tokens.map((token) => token.logprob),
      };
    } else if (runtime.endOfTurn !== '') {
      // The model ended its turn at once: that end token is what it chose.
      record = {
        kind: 'sequence',
        prompt,
        completion: await runtime.tokenize(runtime.endOfTurn),
        behaviour: null,
      };
    }
    const logprob =
      record?.kind === 'sequence' && record.behaviour ? sum(record.behaviour) : undefined;
    // What the policy saw and wrote, exactly: exporters write these, never a rebuilt prompt.
    const info: Record<string, unknown> = {
      messages,
      output: generation.text,
      ...(record ? { llm: record } : {}),
    };
    const base = { ...(logprob === undefined ? {} : { logprob }) };
    // Generation stops on `</action>` and the runtime cuts it off the text: put it back.
    const answer =
      format === 'tagged' && !generation.text.includes('</action>')
        ? `${generation.text}</action>`
        : generation.text;
    const stated =
      generation.finishReason === 'length' ? undefined : parseAgentAnswer(answer, format);
    if (stated === undefined) {
      this.counters.unparsable += 1;
      return this.invalid(generation.text, candidates, base, {
        ...info,
        unparsable: true,
        invalidReason:
          generation.finishReason === 'length'
            ? `cut by the token limit (maxTokens ${this.options.maxTokens ?? 64})`
            : 'no action in the answer',
      });
    }
    let action = stated;
    if (this.options.parseAction) {
      try {
        action = this.options.parseAction(action).text;
      } catch (error) {
        this.counters.invalid += 1;
        return this.invalid(stated, candidates, base, {
          ...info,
          invalidReason: (error as Error).message,
        });
      }
    }
    if (candidates.length > 0 && !this.options.allowActionsOutsideCandidates) {
      const match = candidates.find(
        (candidate) => normaliseAction(candidate) === normaliseAction(action),
      );
      if (match === undefined) {
        this.counters.invalid += 1;
        return this.invalid(stated, candidates, base, {
          ...info,
          invalidReason: 'not an admissible action',
        });
      }
      action = match;
    }
    return { action, ...base, info };
  }

  private invalid(
    text: string,
    candidates: readonly string[],
    base: { logprob?: number },
    info: Record<string, unknown>,
  ): PolicyDecision {
    const fallback = this.options.invalidAnswerFallback ?? 'skip';
    let action = text;
    if (fallback === 'first-candidate' && candidates.length > 0) action = candidates[0]!;
    else if (typeof fallback === 'object') action = fallback.action;
    return {
      action,
      ...base,
      rewardPenalty: this.options.invalidAnswerPenalty ?? -0.1,
      info: {
        ...info,
        invalidAction: true,
        fallback: typeof fallback === 'object' ? 'default' : fallback,
      },
    };
  }

  /** `score`: a softmax over the candidates' likelihoods as answers. */
  private async choose(
    messages: ChatMessage[],
    candidates: readonly string[],
    context: PolicyContext,
  ): Promise<PolicyDecision> {
    if (candidates.length === 0) {
      throw new ConfigError(
        `No candidate actions at a step of task ${context.task.id}: actionSelection "score" chooses among the observation's actions or the adapter's candidateActions.`,
        { field: 'candidates' },
      );
    }
    const { runtime } = this.options;
    const continuations = candidates.map((candidate) => this.answerText(candidate));
    const [prompt, scores] = await Promise.all([
      runtime.promptTokens(messages),
      runtime.score({
        messages,
        continuations,
        ...(context.signal ? { signal: context.signal } : {}),
      }),
    ]);
    const sums = scores.map((tokens) => sum(tokens));
    const max = Math.max(...sums);
    const normaliser = max + Math.log(sum(sums.map((value) => Math.exp(value - max))));
    const logProbabilities = sums.map((value) => value - normaliser);
    let index = 0;
    if (context.greedy) {
      for (let other = 1; other < logProbabilities.length; other += 1) {
        if (logProbabilities[other]! > logProbabilities[index]!) index = other;
      }
    } else {
      const random = context.random ?? this.options.random;
      index = random.weightedIndex(logProbabilities.map((value) => Math.exp(value)));
    }
    const record: LlmDecisionRecord = {
      kind: 'choice',
      prompt,
      candidates: await Promise.all(continuations.map((text) => runtime.tokenize(text))),
      choice: index,
      behaviour: logProbabilities[index]!,
    };
    return {
      action: candidates[index]!,
      logprob: logProbabilities[index]!,
      info: {
        messages,
        output: formatAgentAnswer(candidates[index]!, agentAnswerFormat(this.options.prompt)),
        llm: record,
        candidateLogprobs: logProbabilities,
      },
    };
  }

  /** The answer text of `action` as a complete turn (for scoring and cloning). */
  private answerText(action: string): string {
    return `${formatAgentAnswer(action, agentAnswerFormat(this.options.prompt))}${this.options.runtime.endOfTurn}`;
  }
}
