/**
 * `@dreamgym/agents/openai-agents`: a DreamGym episode as OpenAI Agents JS tools
 * (`@openai/agents`), for an agent's own `run(agent, input)`:
 *
 * ```ts
 * const agent = new Agent({ name: 'Household', instructions, tools: openAIAgentsTools(episode), model });
 * await run(agent, episode.prompt);
 * ```
 */
import { type Tool, tool } from '@openai/agents';
import { z } from 'zod';
import type { EnvironmentEpisode } from './environment-episode.js';

/** The episode as Agents JS function tools: `[act]`, each call one step of the environment. */
export function openAIAgentsTools(episode: EnvironmentEpisode): Tool[] {
  return [
    tool({
      name: episode.tool.name,
      description: episode.tool.description,
      parameters: z.object({ action: z.string().describe(episode.tool.actionDescription) }),
      execute: ({ action }) => episode.act(action),
    }),
  ];
}

export { CaptureTraceProcessor, type SkippedSpan } from './openai-agents-tracing.js';
