/**
 * Trains the AI SDK 7 agent of `agent.ts`, unchanged, as `train.ts` does, but records its calls
 * with the AI SDK's own extension point: the model is wrapped with `captureMiddleware`
 * (`wrapLanguageModel`). `ai` 7 hands the middleware its `v4` call options and results, whose
 * fields the capture reads are those of `ai` 6's `v3`.
 *
 *   .tools/node-lts/bin/node --import tsx examples/ai-sdk-agent-v7/train-with-middleware.ts
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
  await trainFromCommandLine('ai-sdk-agent-v7-middleware', playEpisode);
}
