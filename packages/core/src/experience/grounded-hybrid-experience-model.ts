/**
 * `GroundedHybridExperienceModel`: an LLM experience model held to what the episode and the
 * real data show. The retrieval model (entity transfer from the nearest real transitions,
 * episode consistency, labelled outcomes) predicts first; the LLM is consulted where that
 * grounding is weak, and its answer is kept only when it does not contradict the episode:
 * - a place the episode already showed is recalled, never re-imagined;
 * - a next state naming things (`cabinet 7`) that neither the task, the episode so far, the
 *   action nor the grounded prediction mention is a hallucination;
 * - a next state that ignores the action's own arguments, or repeats the current state
 *   word for word, where the grounded prediction does neither, is off;
 * - a failed or malformed LLM answer falls back to the grounded prediction, so it never
 *   ends the episode.
 * Reward and termination come from the labelled neighbours whenever there are any.
 */
import type { ParsedAction } from '../adapter.js';
import { EnvironmentError } from '../errors.js';
import type {
  ExperienceInput,
  ExperienceModel,
  ExperiencePrediction,
  InitialStateInput,
} from './experience-model.js';
import { mentionsEntity } from './listing.js';
import type { RewardRuleInput } from './outcome-reward.js';

/** When the LLM is asked. */
export type HybridConsultPolicy = 'always' | 'uncertain';

/** Options of {@link GroundedHybridExperienceModel}. */
export interface GroundedHybridExperienceModelOptions {
  /** The grounding model: usually a `RetrievalExperienceModel` over the same replay buffer. */
  retrieval: ExperienceModel;
  /** The LLM model: usually a `ReasoningExperienceModel`. */
  reasoning: ExperienceModel;
  /** The domain's action grammar, to read the action's arguments. Default: words ending in a number. */
  parseAction?: (text: string) => ParsedAction;
  /**
   * `uncertain` (default): ask the LLM only when the grounded prediction does not come from
   * the episode's history and less than `minSupport` of the retrieved transitions support
   * it; `always`: ask it at every step that is not a recollection.
   */
  consult?: HybridConsultPolicy;
  /** Share of the retrieved transitions that must agree for the grounded prediction to stand alone. Default 0.5. */
  minSupport?: number;
  /** Entity names in texts: a word followed by a number (`apple 1`). */
  entityPattern?: RegExp;
  /** Identifies the model. Default `hybrid:<reasoning id>`. */
  id?: string;
}

/** Why an LLM answer was overruled. */
export type HybridContradiction =
  | 'unknown-entity'
  | 'ignores-action'
  | 'repeats-state'
  | 'llm-failed';

const DEFAULT_ENTITY = /\b([a-z]+) (\d+)\b/gi;

function entitiesOf(text: string, pattern: RegExp): Set<string> {
  const found = new Set<string>();
  for (const match of text.matchAll(
    new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`),
  )) {
    found.add(match[0].toLowerCase().replace(/\s+/g, ' '));
  }
  return found;
}

function normalize(text: string): string {
  return text.trim().replace(/\s+/g, ' ').toLowerCase();
}

/** The grounded-hybrid experience model. */
export class GroundedHybridExperienceModel implements ExperienceModel {
  readonly id: string;
  /** The retrieval model's reward rule: both parts are grounded in the same data. */
  readonly rewardRule?: RewardRuleInput;
  private readonly options: GroundedHybridExperienceModelOptions;
  private readonly consult: HybridConsultPolicy;
  private readonly minSupport: number;
  private readonly entityPattern: RegExp;
  private readonly counters: Record<string, number> = {};

  constructor(options: GroundedHybridExperienceModelOptions) {
    this.options = options;
    this.consult = options.consult ?? 'uncertain';
    this.minSupport = options.minSupport ?? 0.5;
    this.entityPattern = options.entityPattern ?? DEFAULT_ENTITY;
    this.id = options.id ?? `hybrid:${options.reasoning.id}`;
    const rewardRule = options.retrieval.rewardRule ?? options.reasoning.rewardRule;
    if (rewardRule !== undefined) this.rewardRule = rewardRule;
  }

  /** How the predictions so far were made: `history`, `grounded`, `llm`, and each overruling reason. */
  stats(): Record<string, number> {
    return { ...this.counters };
  }

  private count(key: string): void {
    this.counters[key] = (this.counters[key] ?? 0) + 1;
  }

  async predict(input: ExperienceInput): Promise<ExperiencePrediction> {
    const grounded = await this.options.retrieval.predict(input);
    const predictedBy = grounded.info?.predictedBy;
    if (predictedBy === 'history') {
      this.count('history');
      return this.grounded(grounded, 'history');
    }
    const supporting = grounded.info?.supportingDemoIds;
    const support =
      Array.isArray(supporting) && input.demos.length > 0
        ? supporting.length / input.demos.length
        : 0;
    if (
      this.consult === 'uncertain' &&
      predictedBy === 'neighbours' &&
      support >= this.minSupport
    ) {
      this.count('grounded');
      return this.grounded(grounded, 'grounded', { support });
    }
    const llm = await this.options.reasoning.predict(input);
    if (llm.info?.experienceModelFailure === true) {
      this.count('llm-failed');
      return this.grounded(grounded, 'overruled', {
        support,
        contradictions: ['llm-failed'],
        llmFailures: llm.info.failures,
      });
    }
    const contradictions = this.contradictions(
      input,
      llm.observation.text,
      grounded.observation.text,
    );
    if (contradictions.length > 0) {
      for (const reason of contradictions) this.count(reason);
      return this.grounded(grounded, 'overruled', {
        support,
        contradictions,
        llmNextState: llm.observation.text,
        llmReasoning: llm.reasoning,
      });
    }
    this.count('llm');
    // The labelled neighbours know the outcome better than a guess, where there are any.
    const outcome = predictedBy === 'neighbours' ? grounded : llm;
    return {
      reasoning: llm.reasoning,
      observation: llm.observation,
      ...(outcome.reward === undefined ? {} : { reward: outcome.reward }),
      done: outcome.done,
      success: outcome.success,
      info: {
        ...llm.info,
        hybrid: 'llm',
        support,
        outcomeFrom: predictedBy === 'neighbours' ? 'neighbours' : 'llm',
        groundedNextState: grounded.observation.text,
      },
    };
  }

  /** Why `text` (the LLM's next state) contradicts the episode; empty when it does not. */
  contradictions(
    input: ExperienceInput,
    text: string,
    groundedText: string,
  ): HybridContradiction[] {
    const found: HybridContradiction[] = [];
    const known = [
      input.task.instruction,
      input.state.text,
      input.action,
      groundedText,
      ...input.history.flatMap((step) => [step.observation.text, step.action]),
    ].join('\n');
    const knownEntities = entitiesOf(known, this.entityPattern);
    for (const entity of entitiesOf(text, this.entityPattern)) {
      if (!knownEntities.has(entity)) {
        found.push('unknown-entity');
        break;
      }
    }
    const args = this.actionArguments(input.action);
    if (
      args.length > 0 &&
      !args.some((argument) => mentionsEntity(text, argument)) &&
      args.some((argument) => mentionsEntity(groundedText, argument))
    ) {
      found.push('ignores-action');
    }
    if (
      normalize(text) === normalize(input.state.text) &&
      normalize(groundedText) !== normalize(text)
    ) {
      found.push('repeats-state');
    }
    return found;
  }

  /** Synthesises s_0 from the grounding model where it can, else from the LLM. */
  async initialState(input: InitialStateInput) {
    const retrieval = this.options.retrieval;
    if (retrieval.initialState) {
      try {
        return await retrieval.initialState(input);
      } catch (error) {
        if (!this.options.reasoning.initialState) throw error;
      }
    }
    if (!this.options.reasoning.initialState) {
      throw new EnvironmentError(
        `${this.id}: neither the grounding nor the LLM model can synthesise an initial state for task ${input.task.id}; give the task an \`initialObservation\`.`,
      );
    }
    return this.options.reasoning.initialState(input);
  }

  private actionArguments(action: string): string[] {
    if (this.options.parseAction) {
      try {
        return [...this.options.parseAction(action).args];
      } catch {
        return [];
      }
    }
    return [...entitiesOf(action, this.entityPattern)];
  }

  private grounded(
    prediction: ExperiencePrediction,
    how: 'history' | 'grounded' | 'overruled',
    extra: Record<string, unknown> = {},
  ): ExperiencePrediction {
    return { ...prediction, info: { ...prediction.info, hybrid: how, ...extra } };
  }
}
