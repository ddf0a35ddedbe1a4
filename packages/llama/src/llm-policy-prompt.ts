/**
 * The prompt and answer format of {@link LlmPolicy}. Built only from what a `PolicySample`
 * holds (task, observation, the actions taken so far, candidates), so the prompt a policy
 * acted under can be rebuilt exactly for behaviour cloning and re-scoring.
 *
 * system: the domain's description and agent instructions, and the answer format;
 * user:   the task, the previous actions, the current observation, the admissible actions;
 * answer: `<action>ACTION</action>` (`tagged`) or the bare action (`plain`).
 */
import type { Observation, Task } from '@dreamgym/core';
import type { ChatMessage } from '@dreamgym/core/models';
import { extractTaggedAction, formatAgentAction } from '@dreamgym/core/policy';

/** How the policy writes its action. */
export type LlmActionFormat = 'tagged' | 'plain';

/** Options of the LLM policy's prompt. */
export interface LlmPolicyPromptOptions {
  /** The domain's `prompts.agentInstructions` (its action grammar and an example). */
  agentInstructions: string;
  /** The domain's `prompts.environmentDescription`, shown first when given. */
  environmentDescription?: string;
  /** Most recent actions shown. Default 5. */
  historyWindow?: number;
  /** `tagged` (default): `<action>...</action>`; `plain`: the action alone. */
  actionFormat?: LlmActionFormat;
  /** List the admissible actions in the prompt. Default true. */
  showCandidates?: boolean;
  /** Replaces the whole system message. */
  systemPrompt?: string;
}

/** The chat messages of one decision. */
export function buildLlmPolicyMessages(
  task: Task,
  observation: Observation,
  previousActions: readonly string[],
  candidates: readonly string[],
  options: LlmPolicyPromptOptions,
): ChatMessage[] {
  const format = options.actionFormat ?? 'tagged';
  const answer =
    format === 'tagged'
      ? 'Reply with exactly one action inside <action></action> and nothing else.'
      : 'Reply with exactly one action and nothing else.';
  const system =
    options.systemPrompt ??
    [options.environmentDescription, options.agentInstructions, answer]
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

/** The answer that states `action`: what the policy writes, and what behaviour cloning teaches. */
export function formatLlmPolicyAnswer(action: string, format: LlmActionFormat = 'tagged'): string {
  return format === 'tagged' ? formatAgentAction(action) : action;
}

/** The action an answer states, or undefined when it states none. */
export function parseLlmPolicyAnswer(
  text: string,
  format: LlmActionFormat = 'tagged',
): string | undefined {
  if (format === 'tagged') return extractTaggedAction(text)?.action;
  const line = text
    .split('\n')
    .map((part) => part.trim())
    .find((part) => part !== '');
  return line === undefined || line === '' ? undefined : line;
}
