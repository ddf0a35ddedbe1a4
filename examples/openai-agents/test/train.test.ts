/**
 * The OpenAI Agents JS agent of `agent.ts`, imported as is, trained in the synthetic ALFWorld
 * (`checkAgentTraining` says what is checked).
 */
import { resolve } from 'node:path';
import { describe, it } from 'vitest';
import { checkAgentTraining } from '../../agent-training.test-support.js';
import * as agent from '../agent.js';
import { playEpisode } from '../train.js';

describe('an OpenAI Agents JS agent trained in DreamGym, unchanged', () => {
  it('captures its calls, updates the adapter, its later calls reach the new adapter, and a restart resumes', async () => {
    await checkAgentTraining({
      agentFile: resolve(import.meta.dirname, '../agent.ts'),
      agent,
      exports: ['INSTRUCTIONS', 'solveTask'],
      plays: [playEpisode],
      resume: true,
    });
  }, 600_000);
});
