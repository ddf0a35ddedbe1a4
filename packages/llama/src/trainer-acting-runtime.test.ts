/**
 * `actOn: 'trainer'` on the real model and worker: the policy samples in the torch worker, on
 * the weights it learns, so the log-probabilities it acts with are the ones the trainer
 * computes for the same decision (generated sequences and score selection alike), and an
 * update changes the next decision with nothing exported.
 */
import { SeededRandom } from '@dreamgym/core';
import type { PolicySample } from '@dreamgym/core/policy';
import { corridorTask } from '@dreamgym/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmPolicy } from './llm-policy.js';
import { corridorLlmPolicy } from './llm-policy.test-support.js';
import type { LlmDecisionRecord } from './llm-policy-options.js';

let policy: LlmPolicy;
beforeAll(async () => {
  policy = await corridorLlmPolicy({
    actOn: 'trainer',
    actionSelection: 'generate',
    maxTokens: 16,
  });
}, 120_000);
afterAll(async () => {
  await policy?.close();
}, 60_000);

const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 3 });
const observation = {
  text: 'You are in room 1. You see a key.',
  actions: ['go left', 'go right', 'take key'],
};
const sample = (decision: { action: string; info?: Record<string, unknown> }): PolicySample => ({
  task,
  observation,
  previousActions: [],
  candidates: observation.actions,
  action: decision.action,
  decisionInfo: decision.info,
});

describe('LlmPolicy acting on the trainer (actOn: trainer, real model)', () => {
  it('samples in the worker with the log-probabilities the trainer computes', async () => {
    const decision = await policy.act(observation, {
      task,
      history: [],
      greedy: false,
      random: new SeededRandom(5),
    });
    const record = decision.info?.llm as LlmDecisionRecord;
    expect(record.kind).toBe('sequence');
    expect(record.kind === 'sequence' && record.completion.length).toBeGreaterThan(0);
    const [trainer] = await policy.logprobs([sample(decision)]);
    expect(decision.logprob).toBeDefined();
    expect(Math.abs(trainer! - decision.logprob!)).toBeLessThan(1e-3);
    expect(policy.stats().exports).toBe(0);
  }, 120_000);

  it('scores candidates with the same softmax the update uses, and learns with no export', async () => {
    const scoring = await corridorLlmPolicy({
      actOn: 'trainer',
      actionSelection: 'score',
    });
    try {
      const context = { task, history: [], greedy: true, random: new SeededRandom(1) };
      const before = await scoring.act(observation, context);
      const [trainer] = await scoring.logprobs([sample(before)]);
      expect(Math.abs(trainer! - before.logprob!)).toBeLessThan(1e-4);
      const take = (candidate: { info?: Record<string, unknown> }) =>
        (candidate.info!.candidateLogprobs as number[])[2]!;
      const teach = sample({ action: 'take key' });
      await scoring.imitate([teach, teach, teach, teach], {
        miniBatchSize: 2,
        learningRate: 5e-3,
        random: new SeededRandom(2),
      });
      const after = await scoring.act(observation, context);
      expect(take(after)).toBeGreaterThan(take(before));
      expect(scoring.stats().exports).toBe(0);
    } finally {
      await scoring.close();
    }
  }, 180_000);
});
