/**
 * `@dreamgym/agents/ai-sdk`: a DreamGym episode as Vercel AI SDK tools (`ai` 6 and 7), for
 * an agent's own `generateText` / `streamText` / `Agent` loop:
 *
 * ```ts
 * const { text } = await generateText({ model, tools: aiSdkTools(episode), prompt: episode.prompt });
 * ```
 *
 * The tool is a plain AI SDK tool object (description, zod input schema, `execute`), so no
 * particular `ai` version is imported here.
 */
import { z } from 'zod';
import type { EnvironmentEpisode } from './environment-episode.js';

/** The `act` tool of an AI SDK tool set. */
export interface AiSdkActTool {
  description: string;
  inputSchema: z.ZodObject<{ action: z.ZodString }>;
  execute: (input: { action: string }) => Promise<string>;
}

/** The episode as an AI SDK tool set: `{ act }`, each call one step of the environment. */
export function aiSdkTools(episode: EnvironmentEpisode): { act: AiSdkActTool } {
  return {
    act: {
      description: episode.tool.description,
      inputSchema: z.object({ action: z.string().describe(episode.tool.actionDescription) }),
      execute: ({ action }) => episode.act(action),
    },
  };
}

export { type CaptureMiddleware, captureMiddleware } from './ai-sdk-middleware.js';
