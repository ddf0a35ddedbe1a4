/**
 * Prompt formats of the reasoning experience model: how one transition's input becomes chat
 * messages, which JSON the model answers with, and how that answer reads as an outcome.
 * The same format writes the prompts of the experience-model SFT set (`annotate/`), so a
 * fine-tuned model is asked exactly as it was trained.
 *
 * - {@link standardExperienceFormat}: the full prompt for capable models (default).
 * - {@link compactExperienceFormat}: for small models (SmolLM2-135M): tight budgets, the top-k
 *   demonstrations as action -> outcome pairs, the parts ordered so consecutive steps of an
 *   episode share their prompt prefix (KV-cache reuse), and a schema whose strings are
 *   bounded, with a short reasoning field first.
 */
import { z } from 'zod';
import type { ChatMessage } from '../models/chat-model.js';
import type { ExperienceInput } from './experience-model.js';
import {
  buildExperiencePrompt,
  type ExperiencePrompt,
  type ExperienceStepOutput,
  ExperienceStepOutputSchema,
  type PromptBudget,
} from './experience-prompt.js';
import { estimateTokens, selectHistoryWindow, type TokenCounter } from './history-window.js';

/** A prompt format of the reasoning experience model. */
export interface ExperiencePromptFormat<S extends z.ZodType = z.ZodType> {
  /** Names the format in logs and SFT metadata (`standard`, `compact`). */
  readonly name: string;
  /** The answer's schema; its JSON Schema is sent as `response_format` (a grammar locally). */
  readonly schema: S;
  /** Upper bound on answer tokens this format needs. */
  readonly maxTokens: number;
  /** The messages of one prediction. */
  build(
    environmentDescription: string,
    input: ExperienceInput,
    budget: PromptBudget,
  ): ExperiencePrompt;
  /** The answer as the model's outcome. */
  read(value: z.output<S>): ExperienceStepOutput;
  /** The answer the model should have written for a known outcome (the SFT target), as JSON text. */
  target(outcome: ExperienceTarget): string;
}

/** A known outcome and its reasoning: what an SFT example teaches. */
export interface ExperienceTarget {
  reasoning: string;
  nextState: string;
  done: boolean;
  success: boolean;
  reward: number;
}

/** The full prompt and schema of {@link buildExperiencePrompt}. */
export const standardExperienceFormat: ExperiencePromptFormat<typeof ExperienceStepOutputSchema> = {
  name: 'standard',
  schema: ExperienceStepOutputSchema,
  maxTokens: 1024,
  build: (description, input, budget) => buildExperiencePrompt(description, input, budget),
  read: (value) => value,
  target: (outcome) =>
    JSON.stringify({
      reasoning: outcome.reasoning,
      nextState: outcome.nextState,
      done: outcome.done,
      success: outcome.success,
      reward: outcome.reward,
    }),
};

/** Options of {@link compactExperienceFormat}. */
export interface CompactExperienceFormatOptions {
  /** Longest reasoning, in characters. Default 160 (one or two sentences). */
  reasoningChars?: number;
  /** Longest next state, in characters. Default 700. */
  nextStateChars?: number;
  /** Demonstrations shown at most (the most similar first). Default 3. */
  demos?: number;
  /**
   * Tokens of the environment description kept (cut at a line end). Default 640. 0 leaves
   * it out: a model fine-tuned on the domain (experience-model SFT) knows it, and every
   * prompt gets hundreds of tokens shorter.
   */
  descriptionTokens?: number;
  /** Tokens of the history when the budget gives none. Default 384. */
  historyTokens?: number;
  /** Tokens of the demonstrations when the budget gives none. Default 256. */
  demoTokens?: number;
  /** Tokens of the current state kept (its start). Default 256. */
  stateTokens?: number;
}

/** Cuts `text` to at most `tokens` tokens, at a line end where possible. */
function fitToTokens(text: string, tokens: number, count: TokenCounter): string {
  if (count(text) <= tokens) return text;
  const lines = text.split('\n');
  const kept: string[] = [];
  for (const line of lines) {
    if (count([...kept, line].join('\n')) > tokens) break;
    kept.push(line);
  }
  if (kept.length > 0) return kept.join('\n');
  // One long line: keep the characters that fit (a counter may not be linear, so shrink).
  let end = Math.min(text.length, tokens * 4);
  while (end > 0 && count(text.slice(0, end)) > tokens) end = Math.floor(end * 0.9);
  return `${text.slice(0, end)}...`;
}

/** The answer schema of {@link compactExperienceFormat}. */
export type CompactExperienceOutputSchema = z.ZodObject<{
  reasoning: z.ZodString;
  nextState: z.ZodString;
  done: z.ZodBoolean;
  success: z.ZodBoolean;
}>;

/**
 * The small-model format. Its answer is
 * `{"reasoning": "<= reasoningChars", "nextState": "<= nextStateChars", "done": bool, "success": bool}`;
 * the reward is 1 on a successful final step, else 0 (the outcome reward rule).
 */
export function compactExperienceFormat(
  options: CompactExperienceFormatOptions = {},
): ExperiencePromptFormat<CompactExperienceOutputSchema> {
  const reasoningChars = options.reasoningChars ?? 160;
  const nextStateChars = options.nextStateChars ?? 700;
  const maxDemos = options.demos ?? 3;
  const schema: CompactExperienceOutputSchema = z.object({
    /** R_t, short: what the action does here and why. */
    reasoning: z.string().max(reasoningChars),
    /** s_{t+1}, in the environment's own words. */
    nextState: z.string().min(1).max(nextStateChars),
    done: z.boolean(),
    success: z.boolean(),
  });
  const instructions = `Predict what the environment answers to the agent's action. Reply with JSON: {"reasoning": "<one short sentence: what the action does here>", "nextState": "<the environment's exact next observation>", "done": <true if the episode ends now>, "success": <true if the task is now accomplished>}. Write observations in the environment's fixed phrasings, like the examples; an action that cannot work here gives "Nothing happens.".`;
  return {
    name: 'compact',
    schema,
    // Bounded strings: at most one token per character, plus the JSON around them.
    maxTokens: Math.ceil((reasoningChars + nextStateChars) / 2) + 48,
    build(description, input, budget) {
      const count = budget.countTokens ?? estimateTokens;
      const descriptionTokens = options.descriptionTokens ?? 640;
      const about =
        descriptionTokens > 0 ? `${fitToTokens(description, descriptionTokens, count)}\n\n` : '';
      const system: ChatMessage = {
        role: 'system',
        content: `You are the world model of a text environment.\n\n${about}${instructions}`,
      };
      // Task and history first: the next step of the episode extends this prefix.
      const parts: string[] = [`Task: ${input.task.instruction}`];
      const history = selectHistoryWindow(
        input.history,
        input.state.text,
        budget.historyTokens ?? options.historyTokens ?? 384,
        count,
      );
      if (history.lines.length > 0) {
        const omitted = history.dropped > 0 ? ` (${history.dropped} earlier steps omitted)` : '';
        parts.push(`History${omitted}:\n${history.lines.join('\n')}`);
      }
      const demoBudget = budget.demoTokens ?? options.demoTokens ?? 256;
      const demoIds: string[] = [];
      const demoLines: string[] = [];
      let demoTokens = 0;
      for (const { transition } of input.demos) {
        if (demoIds.length >= maxDemos) break;
        const line = `> ${transition.action}\n${transition.nextState.text}${transition.done ? ` [episode ends${transition.reward > 0 ? ', success' : ''}]` : ''}`;
        const cost = count(line);
        if (demoTokens + cost > demoBudget) continue;
        demoTokens += cost;
        demoIds.push(transition.id);
        demoLines.push(line);
      }
      if (demoLines.length > 0) {
        parts.push(`Examples from similar situations:\n${demoLines.join('\n')}`);
      }
      parts.push(
        `Current state:\n${fitToTokens(input.state.text, options.stateTokens ?? 256, count)}`,
      );
      parts.push(`Action: ${input.action}`);
      return {
        messages: [system, { role: 'user', content: parts.join('\n\n') }],
        history,
        demoIds,
      };
    },
    read: (value) => ({ ...value, reward: value.done && value.success ? 1 : 0 }),
    target: (outcome) =>
      JSON.stringify({
        reasoning: outcome.reasoning.slice(0, reasoningChars),
        nextState: outcome.nextState.slice(0, nextStateChars),
        done: outcome.done,
        success: outcome.success,
      }),
  };
}
