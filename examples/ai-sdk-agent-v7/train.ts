/**
 * Trains the AI SDK 7 agent of `agent.ts`, unchanged, in DreamGym's synthetic ALFWorld
 * (`../alfworld-agent-training.ts`), as `../ai-sdk-agent/train.ts` does for `ai` 6: its model
 * is an `@ai-sdk/openai-compatible` 3 provider whose `fetch` is the capture's, its tools the
 * episode's. `ai` 7 needs Node >= 22: run it with the project's LTS Node (`bash
 * scripts/setup.sh node` fetches it).
 *
 *   .tools/node-lts/bin/node --import tsx examples/ai-sdk-agent-v7/train.ts --iterations 3
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { aiSdkTools } from '@dreamgym/agents/ai-sdk';
import { type PlayEpisode, trainFromCommandLine } from '../alfworld-agent-training.js';
import { solveTask } from './agent.js';

/** One episode of the agent: `solveTask` with a captured model and the episode's tools. */
export const playEpisode: PlayEpisode = async (episode, endpoint, maxSteps) => {
  const provider = createOpenAICompatible({ name: 'dreamgym', ...endpoint });
  await solveTask(episode.prompt, {
    model: provider(endpoint.model),
    tools: aiSdkTools(episode),
    maxSteps: maxSteps + 1,
  });
};

if (import.meta.url === `file://${process.argv[1]}`) {
  await trainFromCommandLine('ai-sdk-agent-v7', playEpisode);
}
