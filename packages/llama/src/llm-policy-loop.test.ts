/**
 * The DreamGym loop trains an `LlmPolicy` end to end (real SmolLM2-135M acting through
 * `dreamgym model serve`'s OpenAI-compatible API, new weights handed over as PEFT adapters;
 * the real torch worker for updates) on small corridors, and a run killed mid-way resumes
 * from its checkpoint to the same metrics and weights as an uninterrupted run (llama.cpp
 * results do not depend on batching, so seeded acting reproduces). In-process acting's
 * export and reload are tested in `llm-policy.test.ts`. Whether training raises the
 * policy's success is measured by `benchmarks/llm-policy.ts`, not here: on two tiny iterations
 * its direction depends on the seed.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { IterationMetrics } from '@dreamgym/core';
import type { PolicySample } from '@dreamgym/core/policy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaChatModel } from './llama-chat-model.js';
import {
  corridorDemonstrations,
  corridorLlmLoop,
  smallCorridorTasks,
  startChild,
} from './llm-policy-loop.test-support.js';
import { type LlamaServer, startLlamaServer } from './openai-server.js';

let directory: string;
let model: LlamaChatModel;
let server: LlamaServer;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-llm-loop-'));
  model = await LlamaChatModel.load({ model: 'local', contextSize: 1024, concurrency: 2 });
  server = await startLlamaServer({ model, maxBodyBytes: 4 << 20 });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await model?.dispose();
  await rm(directory, { recursive: true, force: true });
});

/** float32 tensors of a safetensors file, by name. */
async function readSafetensors(file: string): Promise<Map<string, Float32Array>> {
  const bytes = await readFile(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.toString('utf8', 8, 8 + headerLength)) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const tensors = new Map<string, Float32Array>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    expect(entry.dtype).toBe('F32');
    const [start, end] = entry.data_offsets;
    const slice = bytes.subarray(8 + headerLength + start, 8 + headerLength + end);
    tensors.set(name, new Float32Array(Uint8Array.from(slice).buffer));
  }
  return tensors;
}

/** Decisions where one action is clearly right: take the key, open the door. */
function keyAndDoorSamples(): PolicySample[] {
  const [first, second] = smallCorridorTasks();
  return [
    {
      task: first!,
      observation: {
        text: 'You walk to room 1. You are in room 1. You see a key.',
        actions: ['go left', 'go right', 'take key'],
      },
      previousActions: [],
      candidates: ['go left', 'go right', 'take key'],
      action: 'take key',
    },
    {
      task: second!,
      observation: {
        text: 'You walk to room 1. You are in room 1. You see a door. You carry the key.',
        actions: ['go left', 'go right', 'open door'],
      },
      previousActions: [],
      candidates: ['go left', 'go right', 'open door'],
      action: 'open door',
    },
  ];
}

function withoutTimings(metrics: readonly IterationMetrics[]) {
  return metrics.map(({ seconds: _, ...rest }) => rest);
}

let reference: { metrics: IterationMetrics[]; weights: Map<string, Float32Array> } | undefined;

describe.sequential('DreamGym loop with an LlmPolicy on the corridor', () => {
  it('trains: every iteration updates the LoRA weights and generation acts on them', async () => {
    const { loop, policy } = await corridorLlmLoop(
      join(directory, 'reference'),
      {},
      {},
      server.baseURL,
    );
    try {
      const key = keyAndDoorSamples();
      const before = await policy.logprobs(key);
      const result = await loop.run();
      const after = await policy.logprobs(key);
      const stats = policy.stats();
      console.log(
        `corridor LLM loop: log pi(take key, open door) ${before.map((v) => v.toFixed(3))} -> ${after.map((v) => v.toFixed(3))}; synthetic success by iteration ${result.metrics.map((m) => m.successRate.toFixed(2))}; behaviour mismatch ${result.metrics.map((m) => (m.update.behaviourMismatch ?? 0).toFixed(4))}; exports ${stats.exports} (${stats.exportSeconds.toFixed(1)} s export, ${stats.reloadSeconds.toFixed(1)} s reload), update ${stats.updateSeconds.toFixed(1)} s, acting ${stats.actSeconds.toFixed(1)} s`,
      );
      expect(result.metrics).toHaveLength(2);
      expect(stats.updates).toBe(2);
      expect(stats.lastUpdate?.gradientSteps).toBeGreaterThan(0);
      for (const record of result.metrics) {
        expect(Number.isFinite(record.update.loss)).toBe(true);
        // The server (Q4_1 + an f16 adapter) acted on the weights the trainer (fp32) updated: had the second
        // iteration acted on stale weights, its behaviour log-probabilities would be far off.
        expect(record.update.behaviourMismatch).toBeGreaterThan(0);
        expect(record.update.behaviourMismatch).toBeLessThan(0.2);
      }
      expect(stats.exports).toBe(1);
      after.forEach((value, index) => {
        expect(value).not.toBe(before[index]);
      });
      await policy.saveState(join(directory, 'reference-state'));
      reference = {
        metrics: result.metrics,
        weights: await readSafetensors(join(directory, 'reference-state', 'weights.safetensors')),
      };
    } finally {
      await policy.close();
    }
  }, 900_000);

  it('resumes after the run is killed mid-way, to the same metrics and weights', async () => {
    expect(reference).toBeDefined();
    const crashed = join(directory, 'crashed');
    const child = await startChild(
      resolve(import.meta.dirname, 'llm-policy-loop-child.test-support.ts'),
      [crashed, server.baseURL],
    );
    await new Promise<void>((resolveLine, reject) => {
      let buffered = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        if (/^iteration 1$/m.test(buffered)) resolveLine();
      });
      child.once('exit', (code) =>
        reject(new Error(`the child exited (${code}) before iteration 1`)),
      );
    });
    child.kill('SIGKILL');
    await new Promise((resolveExit) => child.once('exit', resolveExit));

    const { loop, policy } = await corridorLlmLoop(crashed, {}, {}, server.baseURL);
    try {
      const resumed = await loop.run({ resume: true });
      await policy.saveState(join(directory, 'resumed-state'));
      const weights = await readSafetensors(
        join(directory, 'resumed-state', 'weights.safetensors'),
      );
      const metrics = withoutTimings(resumed.metrics);
      const expected = withoutTimings(reference!.metrics);
      expect(metrics.map((m) => m.successRate)).toEqual(expected.map((m) => m.successRate));
      expect(metrics.map((m) => m.episodes)).toEqual(expected.map((m) => m.episodes));
      let largest = 0;
      expect([...weights.keys()].sort()).toEqual([...reference!.weights.keys()].sort());
      for (const [name, values] of weights) {
        const other = reference!.weights.get(name)!;
        for (let index = 0; index < values.length; index += 1) {
          largest = Math.max(largest, Math.abs(values[index]! - other[index]!));
        }
      }
      console.log(`resumed vs uninterrupted LoRA weights: max |diff| ${largest}`);
      expect(largest).toBeLessThan(1e-4);
    } finally {
      await policy.close();
    }
  }, 900_000);

  it('warm-starts by behaviour cloning: the held-out demonstrations become likelier', async () => {
    const { loop, policy } = await corridorLlmLoop(
      join(directory, 'warm-start'),
      { demonstrations: await corridorDemonstrations(smallCorridorTasks(), 2) },
      {
        iterations: 0,
        warmStart: { behaviourCloning: { epochs: 2, miniBatchSize: 8, heldOutShare: 0.5 } },
      },
    );
    try {
      const { warmStart } = await loop.run();
      console.log(
        `LLM policy behaviour cloning: held-out NLL ${warmStart!.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${warmStart!.bestHeldOutNegativeLogLikelihood.toFixed(3)} (epoch ${warmStart!.bestEpoch}, ${warmStart!.trainSamples} train samples)`,
      );
      expect(warmStart!.heldOutTasks).toBe(1);
      expect(warmStart!.trainSamples).toBeGreaterThan(0);
      expect(warmStart!.bestHeldOutNegativeLogLikelihood).toBeLessThan(
        warmStart!.initialHeldOutNegativeLogLikelihood,
      );
    } finally {
      await policy.close();
    }
  }, 600_000);
});
