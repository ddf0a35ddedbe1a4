/**
 * The AI SDK agent of `agent.ts`, imported as is, trained in the synthetic ALFWorld with its
 * calls recorded by `captureMiddleware` instead of the provider's `fetch`
 * (`checkAgentTraining` says what is checked). The one example trained for two iterations:
 * the second trains on calls the first adapter answered (AgentTrainer's hand-over, the same
 * code for every example), and after it an episode's calls, made through the middleware, went
 * to the second adapter with their tokens.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkAgentTraining } from '../../agent-training.test-support.js';
import * as agent from '../agent.js';
import { playEpisode } from '../train-with-middleware.js';

describe('an AI SDK agent trained in DreamGym through the capture middleware', () => {
  it('captures its calls, updates the adapter, and its later calls reach the new adapter', async () => {
    await checkAgentTraining({
      agentFile: resolve(import.meta.dirname, '../agent.ts'),
      agent,
      exports: ['SYSTEM_PROMPT', 'solveTask'],
      play: playEpisode,
      iterations: 2,
      afterTraining: async ({ trainer, domain }) => {
        const episode = await trainer.playEpisode(domain.seedTasks[0]!);
        expect(episode.calls.length).toBeGreaterThan(0);
        for (const call of episode.calls) {
          expect(call.model).toBe(trainer.servedModel);
          expect(call.completionTokenIds!.length).toBeGreaterThan(0);
        }
      },
    });
  }, 600_000);
});
