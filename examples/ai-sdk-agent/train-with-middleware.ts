/**
 * Trains the AI SDK agent of `agent.ts`, unchanged, as `train.ts` does, but records its calls
 * with the AI SDK's own extension point instead of the provider's `fetch`: the model is wrapped
 * with `captureMiddleware` (`wrapLanguageModel`). The records, the episode's end and the
 * adapter hand-over (the capture's `model`, sent through the provider's options) are the same.
 *
 *   npx tsx examples/ai-sdk-agent/train-with-middleware.ts --iterations 3
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { aiSdkTools, captureMiddleware } from '@dreamgym/agents/ai-sdk';
import { wrapLanguageModel } from 'ai';
import { type PlayEpisode, trainFromCommandLine } from '../alfworld-agent-training.js';
import { solveTask } from './agent.js';

/** One episode of the agent: `solveTask` with a model wrapped by the capture's middleware. */
export const playEpisode: PlayEpisode = async (episode, endpoint, maxSteps) => {
  const provider = createOpenAICompatible({ name: 'dreamgym', baseURL: endpoint.baseURL });
  const model = wrapLanguageModel({
    model: provider(endpoint.model),
    middleware: captureMiddleware(endpoint.capture),
  });
  await solveTask(episode.prompt, { model, tools: aiSdkTools(episode), maxSteps: maxSteps + 1 });
};

if (import.meta.url === `file://${process.argv[1]}`) {
  await trainFromCommandLine('ai-sdk-agent-middleware', playEpisode);
}
