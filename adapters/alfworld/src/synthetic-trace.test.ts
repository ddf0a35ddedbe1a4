/**
 * The synthetic ALFWorld environment plays the same episodes as before its speed-ups (the
 * experience benchmark's issue-53 pass: memoised name patterns, instruction-word sets and
 * single-lookup memos): 600 seeded steps over the stored expert games come out step for step
 * as the code at 5af7854 played them. A change that means to alter what the retrieval model
 * predicts changes the digest: then say so and record the new one.
 */
import * as core from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { loadExpertSplit } from './expert-split.test-support.js';
import { syntheticTrace } from './synthetic-trace.test-support.js';

/** The digest of the walk as core at 5af7854 (before the speed-ups) played it. */
const BEFORE_SPEED_UPS = 'a8f817fcb3985dcc7f11b07050449122f26247abf8e8857796e27d8b76857820';

describe('the synthetic ALFWorld environment', () => {
  it('plays the same episodes, step for step, as the code before its speed-ups', async () => {
    const { train, heldOut, buffer } = await loadExpertSplit();
    await buffer.close();
    const trace = await syntheticTrace(core, train, heldOut, 600);
    expect(trace).toEqual({ digest: BEFORE_SPEED_UPS, episodes: 21, steps: 600 });
  }, 120_000);
});
