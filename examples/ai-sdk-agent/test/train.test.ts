/**
 * The AI SDK agent of `agent.ts`, imported as is, trained in the synthetic ALFWorld by both of
 * the example's scripts at once (`checkAgentTraining` says what is checked): `train.ts` captures
 * its calls through the provider's `fetch`, `train-with-middleware.ts` through
 * `captureMiddleware` (`wrapLanguageModel`). Their episodes take turns in one training of two
 * iterations, the second learning from calls the first adapter answered; after each update an
 * episode of each script reaches the new adapter (the capture's `model`, rewritten in the
 * request by the `fetch` capture, sent through the provider's options by the middleware).
 */
import { resolve } from 'node:path';
import { describe, it } from 'vitest';
import { checkAgentTraining } from '../../agent-training.test-support.js';
import * as agent from '../agent.js';
import { playEpisode as playThroughFetch } from '../train.js';
import { playEpisode as playThroughMiddleware } from '../train-with-middleware.js';

describe('an AI SDK agent trained in DreamGym, unchanged', () => {
  it('captures its calls through fetch and through the middleware, updates the adapter, and its later calls reach the new adapter', async () => {
    await checkAgentTraining({
      agentFile: resolve(import.meta.dirname, '../agent.ts'),
      agent,
      exports: ['SYSTEM_PROMPT', 'solveTask'],
      plays: [playThroughFetch, playThroughMiddleware],
      iterations: 2,
    });
  }, 600_000);
});
