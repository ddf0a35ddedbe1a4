/**
 * A household agent written the ordinary way with OpenAI Agents JS: an `Agent` with
 * instructions, a model and tools, played by `run`. Nothing here knows about DreamGym:
 * `train.ts` gives it an OpenAI client whose calls are captured, tools backed by an ALFWorld
 * environment, and trains the model it calls.
 */
import { Agent, OpenAIChatCompletionsModel, run, type Tool } from '@openai/agents';
import type OpenAI from 'openai';

export const INSTRUCTIONS =
  'You are a household robot. Use the act tool, one action at a time, until the task is done.';

/** Works on `task` with `tools` until the model stops calling them; returns its last words. */
export async function solveTask(
  task: string,
  {
    client,
    model,
    tools,
    maxTurns = 30,
  }: { client: OpenAI; model: string; tools: Tool[]; maxTurns?: number },
): Promise<string | undefined> {
  const agent = new Agent({
    name: 'Household robot',
    instructions: INSTRUCTIONS,
    model: new OpenAIChatCompletionsModel(client, model),
    modelSettings: { toolChoice: 'required', maxTokens: 64 },
    resetToolChoice: false,
    tools,
  });
  const result = await run(agent, task, { maxTurns });
  return result.finalOutput;
}
