/**
 * The LLM policy in the DreamGym loop (issue 12): where an iteration's time goes, what a
 * weight sync costs, and how far generation's log-probabilities are from the trainer's.
 *
 * 1. Loop: the DreamGym loop on small corridors with an `LlmPolicy` (SmolLM2-135M-Instruct,
 *    llama.cpp for acting, the torch worker for updates). Seconds per iteration split into
 *    generation (acting), update (the worker's clipped policy-gradient step), GGUF export,
 *    runtime reload, and the rest (experience model, environments, bookkeeping).
 * 2. Weight sync: export and reload seconds and file sizes for each export type (a LoRA
 *    adapter over the Q4_1 base; the merged model as f16, q8_0, f32).
 * 3. Mismatch: per-token and per-answer |log pi_behaviour - log pi_trainer| on answers the
 *    runtime sampled, for the base model and for each export type after an update. Generation
 *    runs on the quantised Q4_1 base (plus the adapter), the trainer on its fp32
 *    dequantisation, so the ratio is not 1 even before the first gradient step.
 *
 * Run: `npm run llm-policy -w dreamgym-benchmarks` (`-- --iterations 3 --selection score
 * --top-layers 2 --device cpu --threads 2 --prompts 8 --tasks-per-iteration 3
 * --rollouts-per-task 4 --max-steps 8 --note TEXT`). Writes benchmarks/results/llm-policy.json.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DreamGymLoop,
  HashingEmbedder,
  ReplayBuffer,
  RetrievalExperienceModel,
  SeededRandom,
  type Task,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { buildAgentMessages, type PolicySample } from '@dreamgym/core/policy';
import { corridorTask, createCorridorAdapter, playCorridor } from '@dreamgym/core/testing';
import { resolvePpoLossOptions } from '@dreamgym/core/training';
import {
  LlamaPolicyRuntime,
  type LlmDecisionRecord,
  LlmPolicy,
  type LlmPolicyStats,
} from '../packages/llama/src/index.js';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '3' },
    selection: { type: 'string', default: 'score' },
    'top-layers': { type: 'string', default: '2' },
    device: { type: 'string', default: 'cpu' },
    threads: { type: 'string', default: '2' },
    prompts: { type: 'string', default: '8' },
    'export-types': { type: 'string', default: 'lora,f16,q8_0,f32' },
    'tasks-per-iteration': { type: 'string', default: '3' },
    'rollouts-per-task': { type: 'string', default: '4' },
    'max-steps': { type: 'string', default: '8' },
    /** Free text stored in the result (e.g. why the scale was reduced). */
    note: { type: 'string' },
  },
});
const tasksPerIteration = Number(values['tasks-per-iteration']);
const rolloutsPerTask = Number(values['rollouts-per-task']);
const maxSteps = Number(values['max-steps']);
const benchmarkStarted = performance.now();
const iterations = Number(values.iterations);
const selection = values.selection as 'score' | 'generate';
const topLayers = Number(values['top-layers']);
const threads = Number(values.threads);
const promptCount = Number(values.prompts);
const exportTypes = values['export-types']!.split(',') as ('lora' | 'f16' | 'q8_0' | 'f32')[];
const log = (message: string) =>
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-llm-policy-bench-'));
const adapter = createCorridorAdapter();
const load = { start: loadavg() };

function tasks(): Task[] {
  return [
    corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 }),
    corridorTask({ length: 3, keyRoom: 2, doorRoom: 1 }),
    corridorTask({ length: 4, keyRoom: 2, doorRoom: 3 }),
  ];
}

async function createPolicy(
  runtime: LlamaPolicyRuntime,
  workDirectory: string,
  actionSelection: 'score' | 'generate',
): Promise<LlmPolicy> {
  return LlmPolicy.create({
    runtime,
    prompt: {
      agentInstructions: adapter.prompts.agentInstructions,
      environmentDescription: adapter.prompts.environmentDescription,
      historyWindow: 2,
    },
    actionSelection,
    parseAction: (text) => adapter.parseAction(text),
    trainer: {
      lora: { rank: 8, topLayers },
      learningRate: 4e-3,
      seed: 1,
      backend: { device: values.device!, threads },
    },
    workDirectory,
    random: new SeededRandom(1),
  });
}

const delta = (after: LlmPolicyStats, before: LlmPolicyStats) => ({
  generation: after.actSeconds - before.actSeconds,
  update: after.updateSeconds - before.updateSeconds,
  export: after.exportSeconds - before.exportSeconds,
  reload: after.reloadSeconds - before.reloadSeconds,
});

// ---------------------------------------------------------------- 1. the loop
log(`loop: ${iterations} iterations, ${selection}, LoRA on the top ${topLayers} layers`);
const loopRuntime = await LlamaPolicyRuntime.load({
  model: 'local',
  contextSize: 1024,
  concurrency: 2,
  threads,
});
const policyStarted = performance.now();
const loopPolicy = await createPolicy(loopRuntime, join(scratch, 'loop-exports'), selection);
const workerStartSeconds = (performance.now() - policyStarted) / 1000;
log(`worker started in ${workerStartSeconds.toFixed(1)} s: ${JSON.stringify(loopPolicy.trainer)}`);
const buffer = ReplayBuffer.create({
  embedder: new HashingEmbedder({ dimension: 256 }),
  phiWeights: { instruction: 1 },
});
{
  const random = new SeededRandom(3);
  for (const task of tasks()) {
    for (let episode = 0; episode < 6; episode += 1) {
      const trajectory = await playCorridor(task, random, {
        noise: episode % 2 === 0 ? 0.1 : 0.5,
        maxSteps: 10,
      });
      await buffer.add(trajectoryToTransitions({ ...trajectory, id: `${task.id}/${episode}` }));
    }
  }
}
const perIteration: Record<string, number>[] = [];
let previous = loopPolicy.stats();
let iterationStarted = performance.now();
const loop = new DreamGymLoop({
  config: {
    seed: 5,
    iterations,
    tasksPerIteration,
    rolloutsPerTask,
    maxSteps,
    concurrency: 2,
    algorithm: 'grpo',
    trainer: { epochs: 2 },
    curriculum: { enabled: false },
    evaluation: { every: 0, environments: [] },
    checkpointEvery: 1,
  },
  components: {
    adapter,
    policy: loopPolicy,
    experienceModel: new RetrievalExperienceModel(),
    replayBuffer: buffer,
    seedTasks: tasks(),
    onIteration: (metrics) => {
      const now = performance.now();
      const stats = loopPolicy.stats();
      const split = delta(stats, previous);
      const seconds = (now - iterationStarted) / 1000;
      const record = {
        iteration: metrics.iteration + 1,
        seconds,
        ...split,
        other: seconds - split.generation - split.update - split.export - split.reload,
        decisions: stats.decisions - previous.decisions,
        steps: metrics.episodes * metrics.meanSteps,
        successRate: metrics.successRate,
        behaviourMismatch: metrics.update.behaviourMismatch ?? 0,
        tokenMismatch: stats.lastUpdate?.tokenMismatch ?? 0,
        meanRatio: stats.lastUpdate?.meanRatio ?? 1,
      };
      perIteration.push(record);
      log(
        `iteration ${record.iteration}: ${seconds.toFixed(1)} s = generation ${split.generation.toFixed(1)} + update ${split.update.toFixed(1)} + export ${split.export.toFixed(1)} + reload ${split.reload.toFixed(1)} + other ${record.other.toFixed(1)}; ${record.decisions} decisions, success ${metrics.successRate.toFixed(2)}, mismatch ${record.behaviourMismatch.toFixed(4)}`,
      );
      previous = stats;
      iterationStarted = now;
    },
  },
  runDirectory: join(scratch, 'run'),
});
await loop.run();
// The last update's weights reach generation at the next decision: time that sync too.
const beforeSync = loopPolicy.stats();
await loopPolicy.ensureServed();
const finalSync = delta(loopPolicy.stats(), beforeSync);
await loopPolicy.close();

// ---------------------------------------------------------------- 2 and 3: sync and mismatch
log('mismatch and weight sync');
const runtime = await LlamaPolicyRuntime.load({
  model: 'local',
  contextSize: 1024,
  concurrency: 1,
  threads,
});
const policy = await createPolicy(runtime, join(scratch, 'mismatch-exports'), 'generate');
const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 3 });
const states = [
  { text: 'You enter the corridor. You are in room 0. The room is empty.', actions: ['go right'] },
  {
    text: 'You walk to room 1. You are in room 1. You see a key.',
    actions: ['go left', 'go right', 'take key'],
  },
  {
    text: 'You walk to room 2. You are in room 2. The room is empty. You carry the key.',
    actions: ['go left', 'go right'],
  },
  {
    text: 'You walk to room 3. You are in room 3. You see a door. You carry the key.',
    actions: ['go left', 'open door'],
  },
];

interface MismatchFigures {
  answers: number;
  tokens: number;
  meanTokenGap: number;
  maxTokenGap: number;
  meanAnswerGap: number;
  meanRatio: number;
}

/** Samples `promptCount` answers with `sampler` and scores them with the trainer's current weights. */
async function mismatch(
  sampler: (state: (typeof states)[number], seed: number) => Promise<LlmDecisionRecord | undefined>,
): Promise<MismatchFigures> {
  const records: Extract<LlmDecisionRecord, { kind: 'sequence' }>[] = [];
  for (let index = 0; index < promptCount; index += 1) {
    const record = await sampler(states[index % states.length]!, 100 + index);
    if (record?.kind === 'sequence' && record.behaviour) records.push(record);
  }
  const { results } = await policy.backend.request<{
    results: { logprob: number; tokens: number[] }[];
  }>('logprobs', {
    samples: records.map((record) => ({ prompt: record.prompt, completion: record.completion })),
  });
  const tokenGaps: number[] = [];
  const answerGaps: number[] = [];
  const ratios: number[] = [];
  records.forEach((record, index) => {
    const trainer = results[index]!.tokens;
    record.behaviour!.forEach((value, position) => {
      tokenGaps.push(Math.abs(value - trainer[position]!));
      ratios.push(Math.exp(trainer[position]! - value));
    });
    answerGaps.push(
      Math.abs(record.behaviour!.reduce((a, b) => a + b, 0) - results[index]!.logprob),
    );
  });
  const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / Math.max(1, list.length);
  return {
    answers: records.length,
    tokens: tokenGaps.length,
    meanTokenGap: mean(tokenGaps),
    maxTokenGap: Math.max(0, ...tokenGaps),
    meanAnswerGap: mean(answerGaps),
    meanRatio: mean(ratios),
  };
}

const viaPolicy = async (state: (typeof states)[number], seed: number) => {
  const decision = await policy.act(state, { task, history: [], random: new SeededRandom(seed) });
  return decision.info?.llm as LlmDecisionRecord | undefined;
};
const mismatchResults: Record<string, MismatchFigures> = {};
mismatchResults['base Q4_1 (before any update)'] = await mismatch(viaPolicy);
log(`base: ${JSON.stringify(mismatchResults['base Q4_1 (before any update)'])}`);
// One update, so the trained weights differ from the base.
const samples: PolicySample[] = states.flatMap((state) =>
  state.actions.map((action) => ({
    task,
    observation: state,
    previousActions: [],
    candidates: state.actions,
    action,
  })),
);
const behaviour = await policy.logprobs(samples);
await policy.update(
  {
    samples,
    advantages: samples.map((_, index) => (index % 2 === 0 ? 1 : -1)),
    behaviourLogprobs: behaviour,
  },
  { epochs: 2, loss: resolvePpoLossOptions(), maxGradNorm: 1, random: new SeededRandom(2) },
);
const sync: Record<string, { exportSeconds: number; reloadSeconds: number; bytes: number }> = {};
for (const type of exportTypes) {
  const path = join(scratch, `export-${type}.gguf`);
  const started = performance.now();
  const exported = await policy.backend.request<{ bytes: number; kind: 'lora' | 'model' }>(
    'export',
    { path, type },
  );
  const exportSeconds = (performance.now() - started) / 1000;
  const reloaded = await LlamaPolicyRuntime.load({
    model: 'local',
    contextSize: 1024,
    concurrency: 1,
    threads,
  });
  const reloadStarted = performance.now();
  await reloaded.loadWeights({ kind: exported.kind, path });
  const reloadSeconds = (performance.now() - reloadStarted) / 1000;
  sync[type] = { exportSeconds, reloadSeconds, bytes: exported.bytes };
  log(
    `export ${type}: ${(exported.bytes / 1e6).toFixed(1)} MB in ${exportSeconds.toFixed(2)} s, reload ${reloadSeconds.toFixed(2)} s`,
  );
  const label =
    type === 'lora'
      ? 'after an update: Q4_1 base + LoRA adapter'
      : `after an update: merged ${type} GGUF`;
  mismatchResults[label] = await mismatch(async (state, seed) => {
    const messages = buildAgentMessages(task, state, [], state.actions, {
      agentInstructions: adapter.prompts.agentInstructions,
      environmentDescription: adapter.prompts.environmentDescription,
      historyWindow: 2,
    });
    const generation = await reloaded.generate({
      messages,
      maxTokens: 24,
      temperature: 1,
      seed,
      stop: ['</action>'],
    });
    if (generation.tokens.length === 0) return undefined;
    return {
      kind: 'sequence',
      prompt: await reloaded.promptTokens(messages),
      completion: generation.tokens.map((token) => token.id),
      behaviour: generation.tokens.map((token) => token.logprob),
    };
  });
  log(`${label}: ${JSON.stringify(mismatchResults[label])}`);
  await reloaded.close();
  await rm(path, { force: true });
}
await policy.close();
await rm(scratch, { recursive: true, force: true });

const mean = (key: string) =>
  perIteration.reduce((total, record) => total + record[key]!, 0) /
  Math.max(1, perIteration.length);
const result = {
  benchmark: 'llm-policy',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    loadAverage: { ...load, end: loadavg() },
  },
  model: 'SmolLM2-135M-Instruct Q4_1 (llama.cpp) / fp32 dequantised (torch)',
  setting: {
    selection,
    lora: { rank: 8, topLayers },
    device: values.device,
    threads,
    loop: { iterations, tasksPerIteration, rolloutsPerTask, maxSteps, epochs: 2 },
    mismatchAnswersPerCondition: promptCount,
  },
  totalSeconds: (performance.now() - benchmarkStarted) / 1000,
  workerStartSeconds,
  secondsPerIteration: {
    mean: {
      total: mean('seconds'),
      generation: mean('generation'),
      update: mean('update'),
      export: mean('export'),
      reload: mean('reload'),
      other: mean('other'),
    },
    finalSync,
    iterations: perIteration,
  },
  weightSync: sync,
  behaviourVsTrainerMismatch: mismatchResults,
  ...(values.note ? { note: values.note } : {}),
  notes:
    'Timings on a shared 2-core machine under outside load (see loadAverage); compare ratios within one run. Export of iteration k happens at the first decision of iteration k+1, so it is counted there.',
};
const file = resolve(import.meta.dirname, 'results', 'llm-policy.json');
await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result.secondsPerIteration.mean, null, 2));
console.log(JSON.stringify({ weightSync: sync, mismatch: mismatchResults }, null, 2));
log(`wrote ${file}`);
