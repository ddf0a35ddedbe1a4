/**
 * A household agent written the ordinary way with the Vercel AI SDK (`ai` 7, Node >= 22): a model, a system
 * prompt, tools, and `generateText`'s own tool loop. Nothing here knows about DreamGym:
 * `train.ts` gives it a model whose calls are captured and tools backed by an ALFWorld
 * environment, and trains the model it calls.
 */
import { generateText, type LanguageModel, stepCountIs, type ToolSet } from 'ai';

export const SYSTEM_PROMPT =
  'You are a household robot. Use the act tool, one action at a time, until the task is done.';

/** Works on `task` with `tools` until the model stops calling them; returns its last words. */
export async function solveTask(
  task: string,
  { model, tools, maxSteps = 30 }: { model: LanguageModel; tools: ToolSet; maxSteps?: number },
): Promise<string> {
  const { text } = await generateText({
    model,
    system: SYSTEM_PROMPT,
    prompt: task,
    tools,
    toolChoice: 'required',
    stopWhen: stepCountIs(maxSteps),
    maxOutputTokens: 64,
  });
  return text;
}
