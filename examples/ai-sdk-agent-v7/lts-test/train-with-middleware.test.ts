/**
 * The AI SDK 7 agent of `agent.ts`, imported as is, trained in the synthetic ALFWorld with its
 * calls recorded by `captureMiddleware` instead of the provider's `fetch`
 * (`checkAgentTraining` says what is checked: after the update, an episode's calls, made
 * through the middleware, went to the new adapter with their tokens). Runs under the
 * project's LTS Node (`vitest.lts.config.ts`).
 */
import { resolve } from 'node:path';
import { describe, it } from 'vitest';
import { checkAgentTraining } from '../../agent-training.test-support.js';
import * as agent from '../agent.js';
import { playEpisode } from '../train-with-middleware.js';

describe('an AI SDK 7 agent trained in DreamGym through the capture middleware', () => {
  it('captures its calls, updates the adapter, and its later calls reach the new adapter', async () => {
    await checkAgentTraining({
      agentFile: resolve(import.meta.dirname, '../agent.ts'),
      agent,
      exports: ['SYSTEM_PROMPT', 'solveTask'],
      play: playEpisode,
    });
  });
});
