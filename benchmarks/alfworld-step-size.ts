/**
 * Picks the RL learning rate of the ALFWorld experiment on training games only: the
 * evaluation splits (valid_seen, valid_unseen) are never played here.
 *
 * Every trained condition of the experiment fine-tunes the same behaviour-cloned policy, and a
 * run starts RL with fresh Adam moments. Adam's first steps move every weight a gradient
 * touches by about the learning rate whatever the gradient's size, so the rate that cloned the
 * policy from nothing (the policy's 0.05) may be too large to fine-tune it. For each learning
 * rate, one of the experiment's conditions (`--condition`, default `dreamgym`; its settings,
 * budget B for `real-rl`) trains from the cloned policy; the result plays a fixed sample of
 * training games greedily on the real engine. Learning rate 0 is the cloned policy itself.
 * Also reported: how far the weights moved from the cloned ones, and the last iteration's
 * training success (in the synthetic environment for DreamGym, on the real engine for real-rl;
 * budget-cut episodes left out).
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/alfworld-step-size.ts \
 *     [--condition dreamgym] [--learning-rates 0.05,0.02,0.005,0.002] [--games 48] [--seed 1] \
 *     [--iterations 12] [--budget 3000] [--bc-from DIR] [--out DIR]
 * `--bc-from DIR` starts from DIR/bc-<seed>/ (the experiment's kept scratch folder) instead of
 * cloning again. Writes alfworld-step-size-<condition>.json into `--out DIR` (default
 * benchmarks/results).
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  createLinearSoftmaxPolicy,
  DreamGymLoop,
  evaluatePolicy,
  parseDreamGymConfig,
  SeededRandom,
} from '@dreamgym/core';
import { EnvironmentPool } from '@dreamgym/core/rollout';
import { reportEpisodes, setUpDomain } from '@dreamgym/run';
import {
  type AlfworldProtocolSettings,
  alfworldBaseConfig,
  cloneAlfworldPolicy,
  log,
  percent,
  writeOfflineBuffer,
} from './alfworld-protocol.js';
import { ABLATION_CONDITIONS, conditionConfig, PAPER_CONDITIONS } from './experiment-conditions.js';

const { values } = parseArgs({
  options: {
    condition: { type: 'string', default: 'dreamgym' },
    budget: { type: 'string', default: '3000' },
    'learning-rates': { type: 'string', default: '0.05,0.02,0.005,0.002' },
    games: { type: 'string', default: '48' },
    seed: { type: 'string', default: '1' },
    iterations: { type: 'string', default: '12' },
    'max-steps': { type: 'string', default: '30' },
    servers: { type: 'string', default: '2' },
    'bc-from': { type: 'string' },
    out: { type: 'string' },
  },
});

const dataRoot = process.env.DREAMGYM_DATA_DIR;
if (!dataRoot || !existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error('Set DREAMGYM_DATA_DIR to the folder holding alfworld/ (e.g. ../shared/data).');
}
const learningRates = values['learning-rates']!.split(',').map(Number);
const invalid = learningRates.find((rate) => !(rate > 0));
if (invalid !== undefined) {
  throw new Error(`--learning-rates: ${invalid} is not a positive number.`);
}
const condition = values.condition!;
const known = [...PAPER_CONDITIONS, ...ABLATION_CONDITIONS];
const seed = Number(values.seed);
const settings: AlfworldProtocolSettings = {
  seed,
  iterations: Number(values.iterations),
  maxSteps: Number(values['max-steps']),
  servers: Number(values.servers),
};
if (conditionConfig(condition, alfworldBaseConfig(settings), 0, known) === undefined) {
  throw new Error(`--condition ${condition} trains nothing: choose a condition that runs RL.`);
}
const resultsDirectory = values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results');
await mkdir(resultsDirectory, { recursive: true });

const setup = await setUpDomain(
  // One evaluation task is loaded because the set-up requires a split; it is never played.
  {
    domain: 'alfworld',
    data: resolve(dataRoot, 'alfworld'),
    offline: [],
    evalTasks: 1,
    index: 'flat',
  },
  log,
);
const games = new SeededRandom(seed)
  .fork('step-size-games')
  .shuffle([...setup.seedTasks])
  .slice(0, Number(values.games));
const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-alfworld-step-size-'));
const realPool = new EnvironmentPool(() =>
  setup.adapter.connectReal({ requestTimeoutMs: 300_000 }),
);

interface StepSizeResult {
  learningRate: number;
  /** Greedy success on the sampled training games, real engine. */
  successRate: number;
  successInterval95: [number, number];
  /** Largest |w - w_cloned| over the policy's weights. */
  maxWeightChange: number;
  /** The last training iteration's success, in the environment it trained in (undefined for 0). */
  lastTrainingSuccess?: number;
  trainingSeconds: number;
}

try {
  const bcDirectory = join(scratch, `bc-${seed}`);
  if (values['bc-from'] !== undefined) {
    await cp(join(resolve(values['bc-from']), `bc-${seed}`), bcDirectory, { recursive: true });
  } else {
    await cloneAlfworldPolicy(setup, settings, bcDirectory, log);
  }
  const offlineBuffer = await writeOfflineBuffer(setup, scratch);
  const cloned = createLinearSoftmaxPolicy(parseDreamGymConfig(alfworldBaseConfig(settings)));
  await cloned.loadState(bcDirectory);

  const results: StepSizeResult[] = [];
  for (const learningRate of [0, ...learningRates]) {
    const policy = createLinearSoftmaxPolicy(parseDreamGymConfig(alfworldBaseConfig(settings)));
    await policy.loadState(bcDirectory);
    const started = performance.now();
    let lastTrainingSuccess: number | undefined;
    if (learningRate > 0) {
      log(`== learning rate ${learningRate}: ${condition}`);
      const config = conditionConfig(
        condition,
        alfworldBaseConfig({ ...settings, rlLearningRate: learningRate }),
        Number(values.budget),
        known,
      )!;
      const buffer = await offlineBuffer.fresh(String(learningRate));
      try {
        const run = await new DreamGymLoop({
          config,
          components: {
            adapter: setup.adapter,
            policy,
            experienceModel: setup.experienceModel,
            replayBuffer: buffer,
            seedTasks: setup.seedTasks,
            realEnvironment: () => realPool.lease(),
            log,
          },
          runDirectory: join(scratch, `run-${learningRate}`),
        }).run();
        lastTrainingSuccess = run.metrics.at(-1)?.successRate;
      } finally {
        await buffer.close();
      }
    }
    const trainingSeconds = (performance.now() - started) / 1000;
    const { metrics } = await evaluatePolicy({
      policy,
      onEpisode: reportEpisodes(`learning rate ${learningRate} (train games, real, greedy)`),
      environmentFactory: () => realPool.lease(),
      environment: 'real',
      tasks: games,
      maxSteps: settings.maxSteps,
      greedy: true,
      concurrency: settings.servers,
      random: new SeededRandom(seed + 1000),
      candidateActions: (observation, history) =>
        setup.adapter.candidateActions(observation, history),
    });
    let maxWeightChange = 0;
    for (let index = 0; index < cloned.weights.length; index++) {
      maxWeightChange = Math.max(
        maxWeightChange,
        Math.abs(policy.weights[index]! - cloned.weights[index]!),
      );
    }
    const result: StepSizeResult = {
      learningRate,
      successRate: metrics.successRate,
      successInterval95: metrics.successInterval95,
      maxWeightChange,
      ...(lastTrainingSuccess === undefined ? {} : { lastTrainingSuccess }),
      trainingSeconds,
    };
    log(
      `learning rate ${learningRate}: ${percent(metrics)} on ${games.length} training games, max |w - w_cloned| ${maxWeightChange.toFixed(3)}`,
    );
    results.push(result);
    await writeFile(
      join(resultsDirectory, `alfworld-step-size-${condition}.json`),
      `${JSON.stringify(
        {
          benchmark: 'alfworld-step-size',
          date: new Date().toISOString(),
          protocol: {
            condition: `${condition} from the behaviour-cloned policy`,
            evaluation: `greedy, real engine, ${games.length} training games (seeded sample), max ${settings.maxSteps} steps`,
            config: alfworldBaseConfig(settings),
          },
          results,
        },
        null,
        2,
      )}\n`,
    );
  }
  console.table(
    results.map((result) => ({
      'learning rate': result.learningRate,
      success: percent(result),
      'max |Δw|': result.maxWeightChange.toFixed(3),
      'last training success': result.lastTrainingSuccess?.toFixed(3) ?? '–',
    })),
  );
} finally {
  await realPool.closeAll();
  await rm(scratch, { recursive: true, force: true });
}
