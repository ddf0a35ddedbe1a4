/**
 * The training half of the MiniWoB++ LLM experiment (`miniwob-llm.ts`, issue 52) for a GPU
 * machine with no browser, no inference server and no registry (`benchmarks/gpu/miniwob-llm.sh`
 * runs it there; `../shared/docs/gpu-target.md`): the start (behaviour cloning at the settings
 * of `results/miniwob-llm/bc-settings.json`) and DreamGym (0 real transitions, `--updates`
 * iterations) of the same tasks, dataset, demonstrations, prompt and loop configuration, with
 * the policy acting in the torch worker (`actOn: 'trainer'`: llama.cpp in process only
 * tokenises) and LoRA on `--top-layers` blocks (default all 30) in `--dtype` (default
 * bfloat16). No real page is played: the points it writes are evaluated on the real pages back
 * on the CPU machine by `miniwob-llm.ts --lora-top-layers N` (`miniwob-llm.sh evaluate`).
 *
 * Writes, under `--out`: `points/<condition>-<seed>/0/{policy/,cost.json}` (the budgets
 * driver's layout, so `miniwob-llm.ts` finds them trained and only evaluates them),
 * `start-<seed>-cloning.json`, `iterations.jsonl` (one line per DreamGym iteration, seconds
 * split into acting and update) and `train.json` (device, settings, times). Resumable: a
 * point with its `cost.json` is not trained again, and DreamGym resumes from its last
 * checkpoint in `--scratch` (a command cut by the machine's 10-minute limit loses at most the
 * iteration under way).
 *
 * Usage (built packages; `--model` the SmolLM2-135M-Instruct GGUF):
 *   node miniwob-llm-train.mjs --data DIR --out DIR --scratch DIR --model FILE --updates N \
 *     [--seeds 1] [--device cuda] [--dtype bfloat16] [--top-layers 30] [--start-seeds 5] \
 *     [--tasks-per-iteration 8] [--rollouts 4] [--rl-learning-rate R] [--bc-settings FILE]
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DreamGymLoop } from '@dreamgym/core';
import { LlamaPolicyRuntime } from '@dreamgym/llama';
import { embeddedExperienceModel, setUpDomain } from '@dreamgym/run';
import { log, writeOfflineBuffer } from '../alfworld-protocol.js';
import { wholeNumbers } from '../budgets-command-line.js';
import { readCost, runMetrics, writeCost } from '../budgets-points.js';
import {
  cloneMiniwobLlmStart,
  createMiniwobLlmPolicy,
  MINIWOB_LLM_POLICY,
  miniwobLlmLoopConfig,
} from '../miniwob-llm-policy.js';

const { values } = parseArgs({
  options: {
    data: { type: 'string' },
    out: { type: 'string' },
    scratch: { type: 'string' },
    model: { type: 'string' },
    updates: { type: 'string' },
    seeds: { type: 'string', default: '1' },
    device: { type: 'string', default: 'cuda' },
    dtype: { type: 'string', default: 'bfloat16' },
    'top-layers': { type: 'string', default: '30' },
    'start-seeds': { type: 'string', default: '5' },
    'tasks-per-iteration': { type: 'string', default: '8' },
    rollouts: { type: 'string', default: '4' },
    'rl-learning-rate': { type: 'string' },
    'bc-settings': { type: 'string' },
  },
});
for (const flag of ['data', 'out', 'scratch', 'model', 'updates'] as const) {
  if (!values[flag])
    throw new Error(
      `miniwob-llm-train: --${flag} is required (see the usage in ${import.meta.filename}).`,
    );
}
const dtype = values.dtype!;
if (dtype !== 'float32' && dtype !== 'bfloat16') {
  throw new Error(`miniwob-llm-train: --dtype must be float32 or bfloat16, got ${dtype}.`);
}
const number = (flag: keyof typeof values) => wholeNumbers(flag, String(values[flag]))[0]!;
const [updates, topLayers, startSeeds, tasksPerIteration, rollouts] = (
  ['updates', 'top-layers', 'start-seeds', 'tasks-per-iteration', 'rollouts'] as const
).map(number) as [number, number, number, number, number];
const seeds = wholeNumbers('seeds', values.seeds!);
const out = resolve(values.out!);
const scratch = resolve(values.scratch!);
const bcSettingsFile = resolve(
  values['bc-settings'] ??
    join(import.meta.dirname, '..', 'results', 'miniwob-llm', 'bc-settings.json'),
);
if (!existsSync(bcSettingsFile)) {
  throw new Error(
    `miniwob-llm-train: no behaviour-cloning settings at ${bcSettingsFile} (--bc-settings FILE).`,
  );
}
const bcSettings = JSON.parse(await readFile(bcSettingsFile, 'utf8')) as {
  chosen: { learningRate: number; epochs: number } | null;
  data: Record<string, number>;
};
if (!bcSettings.chosen) throw new Error(`${bcSettingsFile} holds no behaviour-cloning choice.`);
/** Exactly the start of `miniwob-llm.ts`. */
const cloning = {
  epochs: Math.max(1, bcSettings.chosen.epochs),
  miniBatchSize: bcSettings.data.miniBatchSize ?? 8,
  learningRate: bcSettings.chosen.learningRate,
};
const rlLearningRate =
  values['rl-learning-rate'] !== undefined
    ? Number(values['rl-learning-rate'])
    : cloning.learningRate / 10;

await mkdir(join(out, 'points'), { recursive: true });
await mkdir(scratch, { recursive: true });
const started = performance.now();
const setup = await setUpDomain(
  {
    domain: 'miniwob',
    data: resolve(values.data!),
    evalSplit: 'eval',
    outcomeJudge: false,
    worldMemory: false,
  },
  log,
);
const demonstrations = setup.offlineTrajectories.filter(
  (trajectory) => Number(trajectory.task.meta.seed) < startSeeds,
);
const offlineBuffer = await writeOfflineBuffer(setup, scratch);
log(
  `${setup.seedTasks.length} training instances, ${demonstrations.length} start demonstrations, offline buffer ${offlineBuffer.size} transitions`,
);
const runtime = await LlamaPolicyRuntime.load({
  model: resolve(values.model!),
  contextSize: MINIWOB_LLM_POLICY.contextSize,
});
const policy = await createMiniwobLlmPolicy({
  trainerActing: { runtime, device: values.device!, dtype },
  adapter: setup.adapter,
  workDirectory: join(scratch, 'policy-exports'),
  seed: seeds[0]!,
  learningRate: rlLearningRate,
  topLayers,
  log,
});
const baseState = join(scratch, 'base-state');
if (!existsSync(join(baseState, 'trainer.json'))) await policy.saveState(baseState);
const pointDirectory = (condition: string, seed: number) =>
  join(out, 'points', `${condition}-${seed}`, '0');
const timings: Record<string, number> = {};

try {
  for (const seed of seeds) {
    const start = pointDirectory('start', seed);
    if (!(await readCost(start))) {
      const began = performance.now();
      await policy.loadState(baseState);
      const record = await cloneMiniwobLlmStart(policy, {
        adapter: setup.adapter,
        seed,
        demonstrations,
        cloning,
        log,
      });
      await writeFile(
        join(out, `start-${seed}-cloning.json`),
        `${JSON.stringify(record, null, 2)}\n`,
      );
      await policy.saveState(join(start, 'policy'));
      await writeCost(start, {
        realTransitions: 0,
        syntheticTransitions: 0,
        updates: 0,
        wallSeconds: 0,
      });
      timings[`start-${seed}`] = (performance.now() - began) / 1000;
    }
    const dreamgym = pointDirectory('dreamgym', seed);
    if (await readCost(dreamgym)) continue;
    const runDirectory = join(scratch, `run-dreamgym-${seed}`);
    await policy.loadState(join(start, 'policy'));
    const buffer = await offlineBuffer.fresh(`dreamgym-${seed}`);
    let counted = policy.stats();
    const began = performance.now();
    try {
      await new DreamGymLoop({
        config: {
          ...miniwobLlmLoopConfig(seed, {
            tasksPerIteration,
            rollouts,
            realConcurrency: 2,
            rlLearningRate,
          }),
          iterations: updates,
        },
        components: {
          adapter: setup.adapter,
          policy,
          experienceModel: embeddedExperienceModel(setup.adapter, setup.offlineTrajectories, {})
            .experienceModel,
          replayBuffer: buffer,
          seedTasks: setup.seedTasks,
          realEnvironment: () => {
            throw new Error(
              'miniwob-llm-train: DreamGym here plays no real page (0 real transitions).',
            );
          },
          log,
          onIteration: async (metrics) => {
            const now = policy.stats();
            const line = {
              condition: 'dreamgym',
              seed,
              iteration: metrics.iteration,
              seconds: metrics.seconds,
              acting: now.actSeconds - counted.actSeconds,
              update: now.updateSeconds - counted.updateSeconds,
              decisions: now.decisions - counted.decisions,
              episodes: metrics.episodes,
              syntheticTransitions: metrics.syntheticTransitions,
              successRate: metrics.successRate,
              device: values.device,
              date: new Date().toISOString(),
            };
            counted = now;
            await appendFile(join(out, 'iterations.jsonl'), `${JSON.stringify(line)}\n`);
            log(
              `dreamgym seed ${seed} iteration ${metrics.iteration + 1}/${updates}: ${metrics.seconds.toFixed(1)} s (acting ${line.acting.toFixed(1)}, update ${line.update.toFixed(1)}), synthetic success ${(100 * metrics.successRate).toFixed(1)}%`,
            );
          },
        },
        runDirectory,
      }).run({ resume: true, extend: true });
    } finally {
      await buffer.close();
    }
    const records = await runMetrics(runDirectory);
    const last = records.at(-1);
    await policy.saveState(join(dreamgym, 'policy'));
    await writeCost(dreamgym, {
      realTransitions: 0,
      syntheticTransitions: last?.syntheticTransitions ?? 0,
      updates: records.length,
      wallSeconds: records.reduce((total, record) => total + record.seconds, 0),
      updatesGiven: true,
    });
    timings[`dreamgym-${seed}`] = (performance.now() - began) / 1000;
  }
  const summary = {
    date: new Date().toISOString(),
    device: values.device,
    dtype,
    cpus: cpus().length,
    settings: {
      seeds,
      updates,
      topLayers,
      loraRank: MINIWOB_LLM_POLICY.loraRank,
      startSeeds,
      tasksPerIteration,
      rollouts,
      cloning,
      rlLearningRate,
      bcSettings: bcSettingsFile,
    },
    secondsThisCommand: (performance.now() - started) / 1000,
    secondsByPart: timings,
    policy: policy.stats(),
  };
  await appendFile(join(out, 'train.jsonl'), `${JSON.stringify(summary)}\n`);
  log(`done: ${JSON.stringify(summary.secondsByPart)}`);
} finally {
  await policy.close();
}
