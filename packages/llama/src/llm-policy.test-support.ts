/**
 * Test support (not exported): an `LlmPolicy` on the embedded SmolLM2-135M-Instruct with
 * LoRA on its top layers, the setting that keeps a CPU update to seconds.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeededRandom } from '@dreamgym/core';
import { createCorridorAdapter } from '@dreamgym/core/testing';
import { LlamaPolicyRuntime } from './llama-policy-runtime.js';
import { LlmPolicy } from './llm-policy.js';
import type { LlmPolicyOptions } from './llm-policy-options.js';
import type { LlmRuntime } from './llm-runtime.js';

/**
 * The real runtime with a switch that caps the answer length, so a test can make the model's
 * answers run into the token limit (unparsable outputs) on demand.
 */
export class CappedRuntime implements LlmRuntime {
  /** When set, generation stops after this many tokens. */
  cap: number | undefined;
  constructor(readonly inner: LlamaPolicyRuntime) {}
  get id() {
    return this.inner.id;
  }
  get modelPath() {
    return this.inner.modelPath;
  }
  get endOfTurn() {
    return this.inner.endOfTurn;
  }
  get weightFormat() {
    return this.inner.weightFormat;
  }
  promptTokens(messages: Parameters<LlmRuntime['promptTokens']>[0]) {
    return this.inner.promptTokens(messages);
  }
  tokenize(text: string) {
    return this.inner.tokenize(text);
  }
  generate(request: Parameters<LlmRuntime['generate']>[0]) {
    return this.inner.generate(
      this.cap === undefined ? request : { ...request, maxTokens: this.cap },
    );
  }
  score(request: Parameters<LlmRuntime['score']>[0]) {
    return this.inner.score(request);
  }
  loadWeights(weights: Parameters<LlmRuntime['loadWeights']>[0]) {
    return this.inner.loadWeights(weights);
  }
  close() {
    return this.inner.close();
  }
}

/** The embedded model as a policy runtime, sized for tests. */
export function testRuntime(): Promise<LlamaPolicyRuntime> {
  return LlamaPolicyRuntime.load({ model: 'local', contextSize: 512, concurrency: 2, threads: 1 });
}

/** A corridor LLM policy; `overrides` replace any option. */
export async function corridorLlmPolicy(
  overrides: Partial<LlmPolicyOptions> = {},
): Promise<LlmPolicy> {
  const adapter = createCorridorAdapter();
  const runtime = overrides.runtime ?? (await testRuntime());
  return LlmPolicy.create({
    runtime,
    prompt: {
      agentInstructions: adapter.prompts.agentInstructions,
      environmentDescription: adapter.prompts.environmentDescription,
    },
    parseAction: (text) => adapter.parseAction(text),
    // The tests of generation's invalid outputs need generation where candidates exist.
    actionSelection: 'generate',
    trainer: {
      lora: { rank: 8, topLayers: 2 },
      learningRate: 2e-3,
      seed: 1,
      backend: { threads: 1 },
    },
    workDirectory: await mkdtemp(join(tmpdir(), 'dreamgym-llm-policy-')),
    random: new SeededRandom(1),
    ...overrides,
  });
}
