/**
 * The agent prompt template shared by `ChatModelPolicy` and the trainer exporters, so the
 * prompts an LLM is trained on (TRL, verl, ART exports) are the prompts it acts under.
 *
 * system: the domain's agent instructions and the answer format;
 * user:   the task, the recent history, the current observation, the admissible actions.
 * The model thinks, then writes exactly one action in an `<action>...</action>` block.
 */

import type { Observation, Step, Task } from '../mdp/schemas.js';
import type { ChatMessage } from '../models/chat-model.js';

/** Options of the agent prompt. */
export interface AgentPromptOptions {
  /** The domain's `prompts.agentInstructions` (action grammar and an example). */
  agentInstructions: string;
  /** The domain's `prompts.environmentDescription`, shown before the instructions when given. */
  environmentDescription?: string;
  /** Most recent steps shown in the prompt. Default 5. */
  historyWindow?: number;
  /** Tag of the action block. Default `action`. */
  actionTag?: string;
}

/** The chat messages of one decision. */
export function buildAgentMessages(
  task: Task,
  history: readonly Step[],
  observation: Observation,
  candidates: readonly string[],
  options: AgentPromptOptions,
): ChatMessage[] {
  const tag = options.actionTag ?? 'action';
  const window = options.historyWindow ?? 5;
  const system = [
    options.environmentDescription,
    options.agentInstructions,
    `Think step by step about what to do next, then write exactly one action inside <${tag}></${tag}>, e.g. <${tag}>ACTION</${tag}>. Write nothing after the closing tag.`,
  ]
    .filter((part): part is string => Boolean(part))
    .join('\n\n');
  const recent = history.slice(Math.max(0, history.length - window));
  const lines = [`Task: ${task.instruction}`];
  if (recent.length > 0) {
    lines.push('', `Recent history (last ${recent.length} of ${history.length} steps):`);
    recent.forEach((step, offset) => {
      const index = history.length - recent.length + offset + 1;
      lines.push(`${index}. Observation: ${step.observation.text}`, `   Action: ${step.action}`);
    });
  }
  lines.push('', `Current observation: ${observation.text}`);
  if (candidates.length > 0) {
    lines.push('', 'Admissible actions:', ...candidates.map((action) => `- ${action}`));
  }
  lines.push('', `Your next action, in <${tag}></${tag}>:`);
  return [
    { role: 'system', content: system },
    { role: 'user', content: lines.join('\n') },
  ];
}

/** The canonical completion for `action`: what the model should have written. */
export function formatAgentAction(action: string, actionTag = 'action'): string {
  return `<${actionTag}>${action}</${actionTag}>`;
}

/**
 * The action inside the last complete `<tag>...</tag>` block of `text`, trimmed, with the
 * character range of the trimmed action; undefined when there is none or it is empty.
 */
export function extractTaggedAction(
  text: string,
  actionTag = 'action',
): { action: string; start: number; end: number } | undefined {
  const escaped = actionTag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`<${escaped}>([\\s\\S]*?)</${escaped}>`, 'gi');
  let found: { action: string; start: number; end: number } | undefined;
  for (const match of text.matchAll(pattern)) {
    const inner = match[1]!;
    const action = inner.trim();
    if (action === '') continue;
    const start = match.index! + match[0].indexOf('>') + 1 + inner.indexOf(action);
    found = { action, start, end: start + action.length };
  }
  return found;
}
