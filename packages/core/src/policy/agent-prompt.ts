/**
 * The one agent prompt: what `LlmPolicy`, `ChatModelPolicy` and the trainer exporters show a
 * model for a decision, so an LLM trained on exported experience (TRL, verl, ART) acts under
 * the prompt it learned, and behaviour cloning, re-scoring and acting agree token for token.
 *
 * Built only from what a policy sample holds (the task, the current observation, the actions
 * taken so far, the candidates), so the prompt of any recorded decision can be rebuilt exactly.
 *
 * system: the domain's description and agent instructions, then the answer format;
 * user:   the task, the previous actions, the current observation, the admissible actions;
 * answer: `<action>ACTION</action>` (`tagged`), free reasoning then that block (`reasoned`),
 *         or the bare action (`plain`).
 */

import type { Observation, Task } from '../mdp/schemas.js';
import type { ChatMessage } from '../models/chat-model.js';

/** How the model writes its action. */
export type AgentAnswerFormat = 'tagged' | 'reasoned' | 'plain';

/** Options of the agent prompt. */
export interface AgentPromptOptions {
  /** The domain's `prompts.agentInstructions` (its action grammar and an example). */
  agentInstructions: string;
  /** The domain's `prompts.environmentDescription`, shown first when given. */
  environmentDescription?: string;
  /** Most recent actions shown. Default 5. */
  historyWindow?: number;
  /**
   * `tagged` (default): exactly one `<action>...</action>` block; `reasoned`: think step by
   * step first, then the block (for chat models that reason); `plain`: the action alone.
   */
  answerFormat?: AgentAnswerFormat;
  /** List the admissible actions in the prompt. Default true. */
  showCandidates?: boolean;
  /** Replaces the whole system message. */
  systemPrompt?: string;
}

const ANSWER_INSTRUCTIONS: Record<AgentAnswerFormat, string> = {
  tagged: 'Reply with exactly one action inside <action></action> and nothing else.',
  reasoned:
    'Think step by step about what to do next, then write exactly one action inside <action></action>. Write nothing after the closing tag.',
  plain: 'Reply with exactly one action and nothing else.',
};

/** The answer format a prompt asks for: `options.answerFormat`, else `tagged`. */
export function agentAnswerFormat(options: AgentPromptOptions): AgentAnswerFormat {
  return options.answerFormat ?? 'tagged';
}

/** The chat messages of one decision. */
export function buildAgentMessages(
  task: Task,
  observation: Observation,
  previousActions: readonly string[],
  candidates: readonly string[],
  options: AgentPromptOptions,
): ChatMessage[] {
  const system =
    options.systemPrompt ??
    [
      options.environmentDescription,
      options.agentInstructions,
      ANSWER_INSTRUCTIONS[agentAnswerFormat(options)],
    ]
      .filter((part): part is string => Boolean(part))
      .join('\n');
  const window = options.historyWindow ?? 5;
  const recent = previousActions.slice(Math.max(0, previousActions.length - window));
  const lines = [`Task: ${task.instruction}`];
  if (previousActions.length > 0) {
    const skipped = previousActions.length - recent.length;
    lines.push(`Previous actions: ${skipped > 0 ? '... ' : ''}${recent.join('; ')}`);
  }
  lines.push(`Observation: ${observation.text}`);
  if ((options.showCandidates ?? true) && candidates.length > 0) {
    lines.push(`Admissible actions: ${candidates.join('; ')}`);
  }
  return [
    { role: 'system', content: system },
    { role: 'user', content: lines.join('\n') },
  ];
}

/** The answer that states `action`: what the model should write, and what behaviour cloning teaches. */
export function formatAgentAnswer(action: string, format: AgentAnswerFormat = 'tagged'): string {
  return format === 'plain' ? action : `<action>${action}</action>`;
}

/** The action an answer states, or undefined when it states none. */
export function parseAgentAnswer(
  text: string,
  format: AgentAnswerFormat = 'tagged',
): string | undefined {
  return locateAgentAnswer(text, format)?.action;
}

/**
 * The action an answer states, trimmed, with its character range in `text` (so the log-
 * probabilities of its tokens can be summed): for `tagged` and `reasoned`, the last complete
 * non-empty `<action>...</action>` block; for `plain`, the first non-empty line. Undefined
 * when the answer states none.
 */
export function locateAgentAnswer(
  text: string,
  format: AgentAnswerFormat = 'tagged',
): { action: string; start: number; end: number } | undefined {
  if (format === 'plain') {
    const match = /\S[^\n]*/.exec(text);
    if (!match) return undefined;
    const action = match[0].trimEnd();
    return { action, start: match.index, end: match.index + action.length };
  }
  let found: { action: string; start: number; end: number } | undefined;
  for (const match of text.matchAll(/<action>([\s\S]*?)<\/action>/gi)) {
    const inner = match[1]!;
    const action = inner.trim();
    if (action === '') continue;
    const start = match.index! + match[0].indexOf('>') + 1 + inner.indexOf(action);
    found = { action, start, end: start + action.length };
  }
  return found;
}
