/**
 * `LlmPolicy` on the real embedded model with the real torch worker (one policy for the file:
 * starting one takes seconds): the `TrainablePolicy` contract, acting with the tokens and
 * log-probabilities the update needs, invalid outputs counted and penalised, updated weights
 * reaching generation (and the behaviour/trainer mismatch), and a crash of the worker.
 * `actionSelection: 'score'` runs in the corridor loop test.
 */
import { SeededRandom, TrainerBackendError } from '@dreamgym/core';
import { buildAgentMessages, formatAgentAnswer, type PolicySample } from '@dreamgym/core/policy';
import {
  corridorConformanceSamples,
  corridorTask,
  createCorridorAdapter,
} from '@dreamgym/core/testing';
import { describeTrainablePolicyConformance } from '@dreamgym/core/testing/vitest';
import { resolvePpoLossOptions } from '@dreamgym/core/training';
import { afterAll, describe, expect, it } from 'vitest';
import type { LlmPolicy } from './llm-policy.js';
import { CappedRuntime, corridorLlmPolicy, testRuntime } from './llm-policy.test-support.js';
import type { LlmDecisionRecord } from './llm-policy-options.js';

let runtime: CappedRuntime | undefined;
let created: Promise<LlmPolicy> | undefined;
/** The file's one policy: generate mode, LoRA on the top 2 layers. */
function sharedPolicy(): Promise<LlmPolicy> {
  created ??= (async () => {
    runtime = new CappedRuntime(await testRuntime());
    return corridorLlmPolicy({ runtime, invalidAnswerPenalty: -0.25 });
  })();
  return created;
}
afterAll(async () => {
  await (await created)?.close();
}, 120_000);

describeTrainablePolicyConformance(
  'LlmPolicy (generate, LoRA on the top 2 layers, SmolLM2-135M)',
  { createPolicy: sharedPolicy, closePolicy: async () => {} },
  { timeout: 300_000 },
);

const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 3 });
const observation = {
  text: 'You walk to room 1. You are in room 1. You see a key.',
  actions: ['go left', 'go right', 'take key'],
};
const history = [
  { observation: { text: 'You enter the corridor.' }, action: 'go right', reward: 0, done: false },
];

function sampleOf(action: string, decisionInfo?: Record<string, unknown>): PolicySample {
  return {
    task,
    observation,
    previousActions: ['go right'],
    candidates: observation.actions,
    action,
    ...(decisionInfo ? { decisionInfo } : {}),
  };
}

describe.sequential('LlmPolicy acting and learning', () => {
  it('keeps the sampled tokens and their log-probabilities; answers cut by the token limit are penalised', async () => {
    const policy = await sharedPolicy();
    const decision = await policy.act(observation, { task, history, random: new SeededRandom(4) });
    const record = decision.info!.llm as LlmDecisionRecord;
    expect(record.kind).toBe('sequence');
    if (record.kind === 'sequence') {
      expect(record.completion.length).toBeGreaterThan(0);
      expect(record.behaviour).toHaveLength(record.completion.length);
      expect(decision.logprob).toBeCloseTo(
        record.behaviour!.reduce((a, b) => a + b, 0),
        6,
      );
    }
    const valid = decision.rewardPenalty === undefined;
    expect(valid).toBe(observation.actions.includes(decision.action));

    const before = policy.stats();
    runtime!.cap = 2;
    const cut = [];
    try {
      for (const seed of [5, 6]) {
        cut.push(await policy.act(observation, { task, history, random: new SeededRandom(seed) }));
      }
    } finally {
      runtime!.cap = undefined;
    }
    const after = policy.stats();
    expect(after.decisions - before.decisions).toBe(2);
    expect(after.unparsable - before.unparsable).toBe(2);
    for (const decision of cut) {
      expect(decision.rewardPenalty).toBe(-0.25);
      expect(decision.info!.invalidAction).toBe(true);
      expect(String(decision.info!.invalidReason)).toMatch(/token limit/);
      expect((decision.info!.llm as { completion: number[] }).completion).toHaveLength(2);
    }
    // Invalid outputs train like any other: under a negative advantage their tokens go down.
    const samples = cut.map((decision) => sampleOf(decision.action, decision.info));
    const logprobs = await policy.logprobs(samples);
    await policy.update(
      { samples, advantages: [-1, -1], behaviourLogprobs: cut.map((d) => d.logprob!) },
      { epochs: 2, loss: resolvePpoLossOptions(), maxGradNorm: 1, random: new SeededRandom(5) },
    );
    const lowered = await policy.logprobs(samples);
    lowered.forEach((value, index) => {
      expect(value).toBeLessThan(logprobs[index]!);
    });
  }, 300_000);

  it('an update reaches generation (export, reload): llama.cpp then scores the advantaged answer higher', async () => {
    const policy = await sharedPolicy();
    await policy.ensureServed();
    const adapter = createCorridorAdapter();
    const messages = buildAgentMessages(task, observation, ['go right'], observation.actions, {
      agentInstructions: adapter.prompts.agentInstructions,
      environmentDescription: adapter.prompts.environmentDescription,
    });
    const answer = `${formatAgentAnswer('take key')}${runtime!.endOfTurn}`;
    /** log pi(take key) as generation (llama.cpp, the weights it serves) computes it. */
    const served = async () =>
      (await runtime!.score({ messages, continuations: [answer] }))[0]!.reduce((a, b) => a + b, 0);
    const servedBefore = await served();
    const samples = observation.actions.map((action) => sampleOf(action));
    const before = await policy.logprobs(samples);
    await policy.update(
      // Zero-mean, as GRPO's are: the answer format's tokens, shared by the three answers,
      // get no net push, so only the action's own tokens move.
      { samples, advantages: [-1, -1, 2], behaviourLogprobs: before },
      { epochs: 4, loss: resolvePpoLossOptions(), maxGradNorm: 1, random: new SeededRandom(2) },
    );
    const trainer = await policy.logprobs(samples);
    expect(trainer[2]).toBeGreaterThan(before[2]!);
    const exports = policy.stats().exports;
    const decision = await policy.act(observation, { task, history, greedy: true });
    expect(policy.stats().exports).toBe(exports + 1);
    const servedAfter = await served();
    console.log(
      `log pi(take key): trainer ${before[2]!.toFixed(3)} -> ${trainer[2]!.toFixed(3)}, llama.cpp ${servedBefore.toFixed(3)} -> ${servedAfter.toFixed(3)}`,
    );
    expect(servedAfter).toBeGreaterThan(servedBefore);
    // The mismatch the next update reports: llama.cpp (Q4_1 base + LoRA adapter) vs the
    // trainer's fp32 weights, on the tokens generation sampled.
    const metrics = await policy.update(
      {
        samples: [sampleOf(decision.action, decision.info)],
        advantages: [0],
        behaviourLogprobs: [decision.logprob!],
      },
      { epochs: 1, loss: resolvePpoLossOptions(), random: new SeededRandom(3) },
    );
    const details = policy.stats().lastUpdate!;
    console.log(
      `behaviour vs trainer: sequence |diff| ${metrics.behaviourMismatch.toFixed(4)}, per token mean ${details.tokenMismatch!.toFixed(4)} max ${details.maxTokenMismatch!.toFixed(4)}`,
    );
    expect(metrics.behaviourMismatch).toBeGreaterThan(0);
    expect(metrics.behaviourMismatch).toBeLessThan(0.5);
  }, 600_000);

  it('a killed worker fails the next request with a TrainerBackendError that says so', async () => {
    const policy = await sharedPolicy();
    policy.backend.kill('SIGKILL');
    const error = await policy.logprobs(corridorConformanceSamples()).catch((caught) => caught);
    expect(TrainerBackendError.isInstance(error)).toBe(true);
    expect(String(error.message)).toMatch(
      /^logprobs: The trainer worker .* was killed by SIGKILL unexpectedly/,
    );
  }, 60_000);
});
