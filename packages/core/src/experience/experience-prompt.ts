/**
 * The reasoning experience model's prompt (the paper's M_exp input): the domain's world
 * description, the task, the top-k retrieved transitions as grounding examples, the
 * interaction history within a token budget, the current state and the action. The
 * model answers with its reasoning first, then the next state and the outcome.
 */
import { z } from 'zod';
import type { ChatMessage } from '../models/chat-model.js';
import type { ExperienceInput, InitialStateInput } from './experience-model.js';
import {
  estimateTokens,
  type HistoryWindow,
  selectHistoryWindow,
  type TokenCounter,
} from './history-window.js';

/** The structured answer of the reasoning experience model for one transition. */
export const ExperienceStepOutputSchema = z.object({
  /** R_t: what the action does in this state and why, written before the outcome. */
  reasoning: z.string(),
  /** s_{t+1}, written as the environment would write it. */
  nextState: z.string().min(1),
  /** True when the episode ends after this action (task accomplished or failed for good). */
  done: z.boolean(),
  /** True when the task is accomplished. */
  success: z.boolean(),
  /** The reward the model judges; used only by the `model` reward rule. */
  reward: z.number(),
});
/** The validated answer of one transition. */
export type ExperienceStepOutput = z.infer<typeof ExperienceStepOutputSchema>;

/** The structured answer when synthesising an initial state. */
export const InitialStateOutputSchema = z.object({
  reasoning: z.string(),
  /** s_0: the environment's first observation for the task. */
  initialState: z.string().min(1),
});

/** Budgets of the prompt parts, in tokens of `countTokens`. */
export interface PromptBudget {
  /** Tokens for the interaction history; the oldest steps are dropped first. Default 2 000. */
  historyTokens?: number;
  /** Tokens for the retrieved demonstrations; the least similar are dropped first. Default 1 500. */
  demoTokens?: number;
  /** Token counter. Default {@link estimateTokens} (characters / 4). */
  countTokens?: TokenCounter;
}

/** The messages of one prediction and what was left out to fit the budget. */
export interface ExperiencePrompt {
  messages: ChatMessage[];
  history: HistoryWindow;
  /** Ids of the demonstrations shown, most similar first. */
  demoIds: string[];
}

const OUTPUT_INSTRUCTIONS = `Answer with one JSON object and nothing else:
{"reasoning": "<what the action does in the current state and why>", "nextState": "<the environment's next observation, in its own words and format>", "done": <true if the episode ends now>, "success": <true if the task is accomplished>, "reward": <1 on the final successful step, else 0>}
Write the reasoning first. Stay consistent with the history: places and objects keep what the episode already showed unless an action changed them. An action that cannot work in this state leaves it unchanged, and the environment says so.`;

function systemMessage(environmentDescription: string): ChatMessage {
  return {
    role: 'system',
    content: `You are the experience model of a training environment: you predict, step by step, what the real environment would answer to the agent's actions.\n\nThe environment:\n${environmentDescription}\n\n${OUTPUT_INSTRUCTIONS}`,
  };
}

/** Builds the prediction prompt for one transition. */
export function buildExperiencePrompt(
  environmentDescription: string,
  input: ExperienceInput,
  budget: PromptBudget = {},
): ExperiencePrompt {
  const countTokens = budget.countTokens ?? estimateTokens;
  const parts: string[] = [`Task: ${input.task.instruction}`];
  const demoIds: string[] = [];
  let demoTokens = 0;
  const demoLines: string[] = [];
  for (const { transition } of input.demos) {
    const block = `Example ${demoIds.length + 1} (task: ${transition.instruction})\nState: ${transition.state.text}\nAction: ${transition.action}\nNext state: ${transition.nextState.text}\nDone: ${transition.done}, reward: ${transition.reward}`;
    const cost = countTokens(block);
    if (demoTokens + cost > (budget.demoTokens ?? 1500)) break;
    demoTokens += cost;
    demoIds.push(transition.id);
    demoLines.push(block);
  }
  if (demoLines.length > 0) {
    parts.push(`Similar transitions of the real environment:\n\n${demoLines.join('\n\n')}`);
  }
  const history = selectHistoryWindow(
    input.history,
    input.state.text,
    budget.historyTokens ?? 2000,
    countTokens,
  );
  if (history.lines.length > 0 || history.dropped > 0) {
    const omitted = history.dropped > 0 ? ` (${history.dropped} earlier steps omitted)` : '';
    parts.push(`Interaction history, oldest first${omitted}:\n${history.lines.join('\n')}`);
  }
  parts.push(`Current state:\n${input.state.text}`);
  parts.push(`Action: ${input.action}`);
  return {
    messages: [
      systemMessage(environmentDescription),
      { role: 'user', content: parts.join('\n\n') },
    ],
    history,
    demoIds,
  };
}

/** Builds the prompt that synthesises an initial state for a task without one. */
export function buildInitialStatePrompt(
  environmentDescription: string,
  input: InitialStateInput,
): ChatMessage[] {
  const examples = input.demos
    .filter((demo) => demo.transition.stepIndex === 0)
    .map(
      (demo, index) =>
        `Example ${index + 1} (task: ${demo.transition.instruction})\nInitial state: ${demo.transition.state.text}`,
    );
  return [
    {
      role: 'system',
      content: `You are the experience model of a training environment. Write the first observation the environment shows at the start of an episode of the given task, in the environment's own format, consistent with the task (the objects and places it needs exist).\n\nThe environment:\n${environmentDescription}\n\nAnswer with one JSON object: {"reasoning": "...", "initialState": "..."}`,
    },
    {
      role: 'user',
      content: `${examples.length > 0 ? `Initial states of similar tasks:\n\n${examples.join('\n\n')}\n\n` : ''}Task: ${input.task.instruction}`,
    },
  ];
}
