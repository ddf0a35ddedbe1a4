/**
 * The teacher's prompt for a reasoning trace R*: the experience model's own context (task,
 * recent history, state, action) plus the outcome that really followed, and the request to
 * write the reasoning that leads from the state and action to that outcome, as the
 * experience model should write it before knowing the answer.
 */
import { z } from 'zod';
import {
  estimateTokens,
  selectHistoryWindow,
  type TokenCounter,
} from '../experience/history-window.js';
import type { Step, Transition } from '../mdp/schemas.js';
import type { ChatMessage } from '../models/chat-model.js';

/** Options of {@link buildTeacherPrompt}. */
export interface TeacherPromptOptions {
  /** Longest reasoning, in characters. Default 200. */
  maxReasoningChars?: number;
  /** Tokens of history shown. Default 300. */
  historyTokens?: number;
  countTokens?: TokenCounter;
}

/** The teacher's answer. */
export function teacherOutputSchema(maxReasoningChars = 200) {
  return z.object({
    /** R*: one or two sentences on what the action does in this state and why it leads to the outcome. */
    reasoning: z.string().min(1).max(maxReasoningChars),
  });
}

/** The messages asking for the reasoning of one transition. */
export function buildTeacherPrompt(
  environmentDescription: string,
  transition: Pick<
    Transition,
    'instruction' | 'state' | 'action' | 'nextState' | 'done' | 'reward'
  >,
  history: readonly Step[],
  options: TeacherPromptOptions = {},
): ChatMessage[] {
  const maxChars = options.maxReasoningChars ?? 200;
  const window = selectHistoryWindow(
    history,
    transition.state.text,
    options.historyTokens ?? 300,
    options.countTokens ?? estimateTokens,
  );
  const outcome = transition.done
    ? transition.reward > 0
      ? 'The episode then ended with success.'
      : 'The episode then ended without success.'
    : 'The episode went on.';
  const parts = [
    `Task: ${transition.instruction}`,
    ...(window.lines.length > 0 ? [`History:\n${window.lines.join('\n')}`] : []),
    `Current state:\n${transition.state.text}`,
    `Action: ${transition.action}`,
    `What the environment answered:\n${transition.nextState.text}\n${outcome}`,
  ];
  return [
    {
      role: 'system',
      content: `You explain the dynamics of a text environment.\n\n${environmentDescription}\n\nGiven a state, an action and the environment's real answer, write the reasoning that predicts that answer from the state and the action alone: what the action does here and why it leads to this outcome. One or two sentences, at most ${maxChars} characters, without copying the answer word for word. Reply with JSON: {"reasoning": "..."}\n\nExample: in a state where the agent stands at a closed box 1, the action "open box 1" answered "You open the box 1. The box 1 is open. In it, you see a key 2." has the reasoning "The box 1 is closed and within reach, so opening it works and shows what it holds."`,
    },
    { role: 'user', content: parts.join('\n\n') },
  ];
}
