/**
 * The ALFWorld LLM policy's prompt, shared by the LLM experiment (`alfworld-llm.ts`) and the
 * behaviour-cloning set it trains from on a GPU (`llm-bc-set.ts`), so the weights trained on
 * one are evaluated under exactly the prompt they learned.
 *
 * `compact` (the default): a two-sentence system message and the last 3 actions, which keeps
 * prompts near 400 tokens; `full`: the adapter's own description and instructions.
 */

import type { AgentPromptOptions } from '@dreamgym/core/policy';
import type { DomainSetup } from '@dreamgym/run';

/** The prompt styles the experiment offers. */
export type AlfworldLlmPromptStyle = 'compact' | 'full';

const COMPACT_INSTRUCTIONS =
  'You are a household robot in ALFWorld. Each turn, choose one of the admissible commands to make progress on the task. Reply with exactly one command inside <action></action>.';

/** The policy's prompt options for `style`. */
export function alfworldLlmPrompt(
  setup: Pick<DomainSetup, 'adapter'>,
  style: AlfworldLlmPromptStyle,
): AgentPromptOptions {
  if (style === 'full') {
    return {
      agentInstructions: setup.adapter.prompts.agentInstructions,
      environmentDescription: setup.adapter.prompts.environmentDescription,
      historyWindow: 5,
    };
  }
  return { agentInstructions: '', systemPrompt: COMPACT_INSTRUCTIONS, historyWindow: 3 };
}
