/**
 * `ReasoningExperienceModel`: the paper's experience model over any `ChatModel`. It
 * prompts with the domain description, task, retrieved demonstrations, history window,
 * state and action, and reads back reasoning, next state and outcome as JSON validated
 * by zod. Malformed answers are retried; when every attempt fails, the step ends the
 * episode safely (done, reward 0, `info.experienceModelFailure`) so training goes on.
 */
import { z } from 'zod';
import { ModelError, ModelOutputError } from '../errors.js';
import type { Observation } from '../mdp/schemas.js';
import type { ChatModel } from '../models/chat-model.js';
import { parseOptions } from '../parse-options.js';
import { type ExperiencePromptFormat, standardExperienceFormat } from './experience-format.js';
import type {
  ExperienceInput,
  ExperienceModel,
  ExperiencePrediction,
  InitialStateInput,
} from './experience-model.js';
import {
  buildInitialStatePrompt,
  InitialStateOutputSchema,
  type PromptBudget,
} from './experience-prompt.js';
import type { RewardRuleInput } from './outcome-reward.js';

/** Options of {@link ReasoningExperienceModel}. */
export interface ReasoningExperienceModelOptions extends PromptBudget {
  /** The LLM behind an OpenAI-compatible server (or any `ChatModel`). */
  chat: ChatModel;
  /** What the environment is and how its states look: the adapter's `prompts.environmentDescription`. */
  environmentDescription: string;
  /** Requests per step before giving up on malformed output (at least 1). Default 3. */
  maxAttempts?: number;
  /**
   * Also count `ModelError`s (the server failed after the client's own retries) as
   * failed attempts that end the episode safely. Default `false`: they are thrown, since
   * a server that is down is a configuration problem, not a bad sample.
   */
  endEpisodeOnModelError?: boolean;
  /**
   * The reward rule the synthetic environment applies to this model's predictions (its
   * `rewardRule`). Default: outcome reward (1 on a successful final step).
   */
  reward?: RewardRuleInput;
  /** Sampling temperature. Default: the chat model's. */
  temperature?: number;
  /** Upper bound on generated tokens per answer. Default: the format's (1 024 for the standard one). */
  maxTokens?: number;
  /**
   * The prompt and answer format. Default {@link standardExperienceFormat}; small models
   * (SmolLM2-135M) want `compactExperienceFormat()`.
   */
  format?: ExperiencePromptFormat;
}

const OptionsSchema = z.object({
  environmentDescription: z.string().min(1, 'environmentDescription must describe the environment'),
  maxAttempts: z.number().int().min(1).default(3),
  historyTokens: z.number().int().nonnegative().optional(),
  demoTokens: z.number().int().nonnegative().optional(),
  maxTokens: z.number().int().positive().optional(),
});

/** The LLM-backed experience model. */
export class ReasoningExperienceModel implements ExperienceModel {
  readonly id: string;
  private readonly options: ReasoningExperienceModelOptions;
  private readonly maxAttempts: number;
  private readonly maxTokens: number;
  readonly rewardRule?: RewardRuleInput;
  private readonly format: ExperiencePromptFormat;

  constructor(options: ReasoningExperienceModelOptions) {
    const parsed = parseOptions(OptionsSchema, options, 'ReasoningExperienceModel');
    this.options = options;
    this.maxAttempts = parsed.maxAttempts;
    this.format = options.format ?? standardExperienceFormat;
    this.maxTokens = parsed.maxTokens ?? this.format.maxTokens;
    if (options.reward !== undefined) this.rewardRule = options.reward;
    this.id = `reasoning:${options.chat.id}`;
  }

  /** The request options both calls share: token limit, temperature when set, abort signal. */
  private samplingOptions(signal: AbortSignal | undefined) {
    return {
      maxTokens: this.maxTokens,
      ...(this.options.temperature === undefined ? {} : { temperature: this.options.temperature }),
      ...(signal ? { signal } : {}),
    };
  }

  async predict(input: ExperienceInput): Promise<ExperiencePrediction> {
    const prompt = this.format.build(this.options.environmentDescription, input, this.options);
    const failures: string[] = [];
    for (let attempt = 1; attempt <= this.maxAttempts; attempt += 1) {
      try {
        const response = await this.options.chat.completeStructured({
          messages: prompt.messages,
          schema: this.format.schema,
          schemaName: 'experience_step',
          ...this.samplingOptions(input.signal),
        });
        const output = this.format.read(response.value);
        const outcome = { done: output.done, success: output.success, reward: output.reward };
        const observation: Observation = { text: output.nextState };
        return {
          reasoning: output.reasoning,
          observation,
          ...outcome,
          info: {
            attempts: attempt,
            structuredMode: response.mode,
            promptDemoIds: prompt.demoIds,
            historyStepsDropped: prompt.history.dropped,
            ...(failures.length > 0 ? { repairedFailures: failures } : {}),
          },
        };
      } catch (error) {
        if (input.signal?.aborted) throw error;
        const counted =
          ModelOutputError.isInstance(error) ||
          (this.options.endEpisodeOnModelError === true && ModelError.isInstance(error));
        if (!counted) throw error;
        failures.push((error as Error).message);
      }
    }
    // Every attempt failed: end the episode without a reward rather than invent a state.
    return {
      reasoning: `The experience model failed ${failures.length} times; the episode ends here.`,
      observation: { text: input.state.text },
      done: true,
      success: false,
      info: {
        experienceModelFailure: true,
        attempts: failures.length,
        failures,
        promptDemoIds: prompt.demoIds,
      },
    };
  }

  /**
   * Writes an initial state for a task without one, from the examples among `demos`
   * (transitions at step 0). Throws `ModelOutputError` when every attempt is malformed.
   */
  async initialState(input: InitialStateInput): Promise<Observation> {
    const messages = buildInitialStatePrompt(this.options.environmentDescription, input);
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.maxAttempts; attempt += 1) {
      try {
        const response = await this.options.chat.completeStructured({
          messages,
          schema: InitialStateOutputSchema,
          schemaName: 'initial_state',
          ...this.samplingOptions(input.signal),
        });
        return { text: response.value.initialState };
      } catch (error) {
        if (!ModelOutputError.isInstance(error) || input.signal?.aborted) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }
}
