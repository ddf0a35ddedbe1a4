/**
 * Trains the OpenAI Agents JS agent of `agent.ts`, unchanged, in DreamGym's synthetic ALFWorld
 * (`../alfworld-agent-training.ts`): its client is an `openai` client whose `fetch` is the
 * capture's, its tools the episode's.
 *
 *   npx tsx examples/openai-agents/train.ts --iterations 3
 */
import { openAIAgentsTools } from '@dreamgym/agents/openai-agents';
import { setTracingDisabled } from '@openai/agents';
import OpenAI from 'openai';
import { type PlayEpisode, trainFromCommandLine } from '../alfworld-agent-training.js';
import { solveTask } from './agent.js';

// Traces would go to OpenAI's platform; the capture records what training needs.
setTracingDisabled(true);

/** One episode of the agent: `solveTask` with a captured client and the episode's tools. */
export const playEpisode: PlayEpisode = async (episode, endpoint, maxSteps) => {
  const client = new OpenAI({ baseURL: endpoint.baseURL, apiKey: 'local', fetch: endpoint.fetch });
  await solveTask(episode.prompt, {
    client,
    model: endpoint.model,
    tools: openAIAgentsTools(episode),
    maxTurns: maxSteps + 1,
  });
};

if (import.meta.url === `file://${process.argv[1]}`) {
  await trainFromCommandLine('openai-agents', playEpisode);
}
