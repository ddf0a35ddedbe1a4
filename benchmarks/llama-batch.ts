/**
 * What `LlamaChatModel`'s default `batchSize` (63 tokens a decode) costs and buys, side by
 * side in one process against node-llama-cpp's 512:
 * - reproducibility: the same continuations scored from an empty KV cache (the whole prompt,
 *   over 64 tokens, in one decode) and with the system prompt already cached (only the short
 *   rest evaluated): the largest |difference| of a continuation's log-probability;
 * - speed: prompt evaluation tokens/s on ALFWorld-sized prompts (about 500 tokens each, no
 *   KV-cache reuse between them), alternating the two settings so machine load hits both.
 *
 * Run (after `npm run build`): npx tsx benchmarks/llama-batch.ts [--runs 4]
 * Writes benchmarks/results/llama-batch.json.
 */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LlamaChatModel } from '@dreamgym/llama';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '4' } } });
const runs = Number(values.runs);
const resultsFile = resolve(import.meta.dirname, 'results/llama-batch.json');

const room =
  'You are in the middle of a room. Looking quickly around you, you see a cabinet 1, a cabinet 2, a countertop 1, a drawer 1, a fridge 1, a garbagecan 1, a microwave 1, a shelf 1, a sink 1, and a toaster 1. ';
const system = {
  role: 'system' as const,
  content: `You predict the next observation of a household text game. ${room}`,
};
const continuations = ['You open the fridge 1.', 'Nothing happens.', 'You pick up the apple 1.'];

async function reproducibility(batchSize: number): Promise<number> {
  const model = await LlamaChatModel.load({ model: 'local', concurrency: 2, batchSize });
  try {
    const messages = [system, { role: 'user' as const, content: 'Action: open fridge 1' }];
    const cold = await model.scoreContinuations({ messages, continuations });
    // Another request caches the system prompt; the same one then evaluates only its rest.
    const other = [system, { role: 'user' as const, content: 'Action: look' }];
    const fresh = await LlamaChatModel.load({ model: 'local', concurrency: 1, batchSize });
    try {
      await fresh.scoreContinuations({ messages: other, continuations });
      const warm = await fresh.scoreContinuations({ messages, continuations });
      return Math.max(
        ...cold.scores.map((score, index) => Math.abs(score.logprob - warm.scores[index]!.logprob)),
      );
    } finally {
      await fresh.dispose();
    }
  } finally {
    await model.dispose();
  }
}

async function promptSpeed(model: LlamaChatModel, run: number): Promise<number> {
  const started = performance.now();
  let tokens = 0;
  for (let prompt = 0; prompt < 3; prompt += 1) {
    // A distinct first line: nothing of the prompt is in the KV cache.
    const messages = [
      { role: 'user' as const, content: `Game ${run}-${prompt}.\n${room.repeat(6)}` },
    ];
    const result = await model.scoreContinuations({ messages, continuations: ['Nothing.'] });
    tokens += result.usage.promptTokens;
  }
  return tokens / ((performance.now() - started) / 1000);
}

const settings = [63, 512] as const;
const models = new Map<number, LlamaChatModel>();
for (const batchSize of settings) {
  models.set(batchSize, await LlamaChatModel.load({ model: 'local', concurrency: 1, batchSize }));
}
const speeds = new Map<number, number[]>(settings.map((batchSize) => [batchSize, []]));
for (let run = 0; run < runs; run += 1) {
  const order = run % 2 === 0 ? settings : [...settings].reverse();
  for (const batchSize of order) {
    speeds.get(batchSize)!.push(await promptSpeed(models.get(batchSize)!, run));
  }
}
for (const model of models.values()) await model.dispose();

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const figures = [];
for (const batchSize of settings) {
  const difference = await reproducibility(batchSize);
  const tokensPerSecond = median(speeds.get(batchSize)!);
  figures.push({
    batchSize,
    promptTokensPerSecond: Number(tokensPerSecond.toFixed(1)),
    largestScoreDifference: difference,
  });
  console.log(
    `batchSize ${batchSize}: prompt ${tokensPerSecond.toFixed(1)} tok/s (median of ${runs}), score cold vs cached prefix differs by up to ${difference.toFixed(6)} nats`,
  );
}
const ratio = figures[0]!.promptTokensPerSecond / figures[1]!.promptTokensPerSecond;
console.log(`prompt speed at 63 relative to 512: ${ratio.toFixed(3)}`);
await writeFile(
  resultsFile,
  `${JSON.stringify(
    {
      benchmark: 'llama-batch',
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, loadAverage: loadavg() },
      model: 'SmolLM2-135M-Instruct Q4_1, threads 1',
      runs,
      settings: figures,
      promptSpeedRatio63to512: Number(ratio.toFixed(3)),
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${resultsFile}`);
