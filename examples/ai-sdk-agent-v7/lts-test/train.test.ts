/**
 * The AI SDK 7 agent of `agent.ts`, imported as is, trained in the synthetic ALFWorld by both of
 * the example's scripts at once (`checkAgentTraining` says what is checked): `train.ts` captures
 * its calls through the provider's `fetch`, `train-with-middleware.ts` through
 * `captureMiddleware`, which `ai` 7 calls with its `v4` values. Their episodes take turns in one
 * training iteration, and after the update an episode of each script reaches the new adapter.
 * Runs under the project's LTS Node (`vitest.lts.config.ts`).
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkAgentTraining } from '../../agent-training.test-support.js';
import * as agent from '../agent.js';
import { playEpisode as playThroughFetch } from '../train.js';
import { playEpisode as playThroughMiddleware } from '../train-with-middleware.js';

describe('an AI SDK 7 agent trained in DreamGym, unchanged', () => {
  it('runs on ai 7 and @ai-sdk/openai-compatible 3 under Node >= 22', () => {
    const require = createRequire(resolve(import.meta.dirname, '../agent.ts'));
    expect(require('ai/package.json').version).toMatch(/^7\./);
    expect(require('@ai-sdk/openai-compatible/package.json').version).toMatch(/^3\./);
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(22);
  });

  it('captures its calls through fetch and through the middleware, updates the adapter, and its later calls reach the new adapter', async () => {
    await checkAgentTraining({
      agentFile: resolve(import.meta.dirname, '../agent.ts'),
      agent,
      exports: ['SYSTEM_PROMPT', 'solveTask'],
      plays: [playThroughFetch, playThroughMiddleware],
    });
  });
});
