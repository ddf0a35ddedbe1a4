/**
 * The paper's protocol on ALFWorld at our scale (issue 7): the same policy class
 * (LinearSoftmaxPolicy) and trainer (GRPO) throughout, success on the real engine with 95%
 * intervals on valid_seen and valid_unseen, for:
 *   random        the untrained (uniform) policy
 *   real-rl       RL in the real engine with a budget of B real transitions
 *   dreamgym      DreamGym with 0 real transitions
 *   dreamgym-s2r  DreamGym, then sim-to-real with 10% of B
 *   no-replay     DreamGym without replay retrieval
 *   no-curriculum DreamGym without curriculum task generation
 *
 * Usage (after `npm run build`):
 *   npm run alfworld-experiment -w dreamgym-benchmarks -- [--budget 3000] [--iterations 12]
 *     [--seen 140] [--unseen 134] [--exploration FILE] [--conditions random,dreamgym,...]
 * Writes benchmarks/results/alfworld.json (after every condition, so partial runs keep
 * what finished) and benchmarks/results/alfworld-report.html.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRun, type ReportRun, renderReport, setUpDomain } from '@dreamgym/cli';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  DreamGymLoop,
  EnvironmentPool,
  type EvaluationMetrics,
  evaluatePolicy,
  type IterationMetrics,
  LinearSoftmaxPolicy,
  type Policy,
  parseDreamGymConfig,
  SeededRandom,
  type Task,
  type TrainablePolicy,
} from '@dreamgym/core';

const { values } = parseArgs({
  options: {
    budget: { type: 'string', default: '3000' },
    iterations: { type: 'string', default: '12' },
    seen: { type: 'string', default: '140' },
    unseen: { type: 'string', default: '134' },
    'max-steps': { type: 'string', default: '30' },
    exploration: { type: 'string', multiple: true },
    conditions: {
      type: 'string',
      default: 'random,dreamgym,dreamgym-s2r,real-rl,no-curriculum,no-replay',
    },
    seed: { type: 'string', default: '1' },
    servers: { type: 'string', default: '2' },
  },
});

const dataRoot = process.env.DREAMGYM_DATA_DIR;
if (!dataRoot || !existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error('Set DREAMGYM_DATA_DIR to the folder holding alfworld/ (e.g. ../shared/data).');
}
const data = resolve(dataRoot, 'alfworld');
const budget = Number(values.budget);
const maxSteps = Number(values['max-steps']);
const seed = Number(values.seed);
const servers = Number(values.servers);
const resultsDirectory = resolve(import.meta.dirname, 'results');
const resultsFile = join(resultsDirectory, 'alfworld.json');

const baseConfig: DreamGymConfigInput = {
  seed,
  iterations: Number(values.iterations),
  tasksPerIteration: 16,
  rolloutsPerTask: 4,
  maxSteps,
  concurrency: 8,
  realConcurrency: servers,
  algorithm: 'grpo',
  trainer: { epochs: 2 },
  policy: { hashBits: 18, learningRate: 0.05 },
  curriculum: { lambda: 0.3, tasksToExpand: 4, variantsPerTask: 2 },
  retrieval: { k: 8 },
  evaluation: { every: 0 },
  simToReal: { realTransitionBudget: 0, tasksPerIteration: 8, rolloutsPerTask: 4 },
};

const conditions: Record<string, DreamGymConfigInput | 'random'> = {
  random: 'random',
  dreamgym: baseConfig,
  'dreamgym-s2r': {
    ...baseConfig,
    simToReal: { ...baseConfig.simToReal, realTransitionBudget: Math.round(budget / 10) },
  },
  'real-rl': {
    ...baseConfig,
    iterations: 0,
    simToReal: { ...baseConfig.simToReal, realTransitionBudget: budget },
  },
  'no-curriculum': { ...baseConfig, curriculum: { ...baseConfig.curriculum, enabled: false } },
  'no-replay': { ...baseConfig, retrieval: { enabled: false, k: 8 } },
};

interface ConditionResult {
  condition: string;
  realTransitions: number;
  syntheticTransitions: number;
  trainingSeconds: number;
  evaluations: Record<'valid_seen' | 'valid_unseen', EvaluationMetrics>;
}

const log = (message: string) => process.stderr.write(`${message}\n`);
const percent = (metrics: EvaluationMetrics) =>
  `${(100 * metrics.successRate).toFixed(1)}% [${(100 * metrics.successInterval95[0]).toFixed(1)}, ${(100 * metrics.successInterval95[1]).toFixed(1)}] n=${metrics.episodes}`;

const setup = await setUpDomain(
  { domain: 'alfworld', data, offline: values.exploration ?? [], evalTasks: Number(values.seen) },
  log,
);
const unseen: Task[] = [];
for await (const task of setup.adapter.datasets.tasks.load(data, {
  splits: ['valid_unseen'],
  limit: Number(values.unseen),
})) {
  unseen.push(task);
}
const realPool = new EnvironmentPool(setup.realEnvironment);

async function evaluateReal(
  policy: Policy,
  tasks: readonly Task[],
  random: SeededRandom,
  greedy: boolean,
) {
  const { metrics } = await evaluatePolicy({
    policy,
    environmentFactory: () => realPool.lease(),
    environment: 'real',
    tasks,
    maxSteps,
    greedy,
    concurrency: servers,
    random,
  });
  return metrics;
}

async function writeReport(): Promise<void> {
  const table = results
    .map(
      (result) =>
        `<tr><th>${result.condition}</th><td>${result.realTransitions}</td><td>${result.syntheticTransitions}</td><td>${percent(result.evaluations.valid_seen)}</td><td>${percent(result.evaluations.valid_unseen)}</td></tr>`,
    )
    .join('\n');
  const html = renderReport(runs, {
    title: 'DreamGym on ALFWorld: the paper protocol at our scale',
  }).replace(
    '<h2>Runs and ablations</h2>',
    `<h2>Real-engine success (95% Wilson intervals)</h2>
  <table><thead><tr><th>condition</th><th>real transitions</th><th>synthetic transitions</th><th>valid_seen</th><th>valid_unseen</th></tr></thead>
  <tbody>${table}</tbody></table>
  <h2>Runs and ablations</h2>`,
  );
  await writeFile(join(resultsDirectory, 'alfworld-report.html'), html);
}

const previous = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as { results?: ConditionResult[] })
  : {};
const results: ConditionResult[] = (previous.results ?? []).filter((result) =>
  values.conditions!.split(',').includes(result.condition),
);
const runs: ReportRun[] = [];
const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-alfworld-experiment-'));
try {
  for (const condition of values.conditions!.split(',')) {
    const config = conditions[condition];
    if (config === undefined)
      throw new Error(
        `Unknown condition ${condition}; known: ${Object.keys(conditions).join(', ')}`,
      );
    log(`== ${condition}`);
    const started = performance.now();
    let policy: TrainablePolicy;
    let realTransitions = 0;
    let syntheticTransitions = 0;
    let greedy = true;
    if (config === 'random') {
      policy = new LinearSoftmaxPolicy({ random: new SeededRandom(seed), hashBits: 18 });
      greedy = false;
    } else {
      const runDirectory = join(scratch, condition);
      const loop = new DreamGymLoop({
        config,
        components: {
          adapter: setup.adapter,
          policy: createLinearSoftmaxPolicy(parseDreamGymConfig(config)),
          experienceModel: setup.experienceModel,
          replayBuffer: (
            await setUpDomain({
              domain: 'alfworld',
              data,
              offline: values.exploration ?? [],
              evalTasks: 1,
            })
          ).replayBuffer,
          seedTasks: setup.seedTasks,
          realEnvironment: () => realPool.lease(),
          log,
          onIteration: (metrics: IterationMetrics, progress: { done: number; total: number }) =>
            log(
              `${condition} ${progress.done}/${progress.total} ${metrics.phase} train success ${(100 * metrics.successRate).toFixed(1)}% real ${metrics.realTransitions} pool ${metrics.poolSize}`,
            ),
        },
        runDirectory,
      });
      const result = await loop.run();
      policy = result.policy;
      realTransitions = result.metrics.at(-1)?.realTransitions ?? 0;
      syntheticTransitions = result.metrics.at(-1)?.syntheticTransitions ?? 0;
      runs.push(await loadRun(runDirectory, condition));
    }
    const trainingSeconds = (performance.now() - started) / 1000;
    const random = new SeededRandom(seed + 1000);
    const evaluations = {
      valid_seen: await evaluateReal(policy, setup.evaluationTasks, random, greedy),
      valid_unseen: await evaluateReal(policy, unseen, random, greedy),
    };
    log(
      `${condition}: valid_seen ${percent(evaluations.valid_seen)}, valid_unseen ${percent(evaluations.valid_unseen)}`,
    );
    const entry = {
      condition,
      realTransitions,
      syntheticTransitions,
      trainingSeconds,
      evaluations,
    };
    const index = results.findIndex((result) => result.condition === condition);
    if (index >= 0) results[index] = entry;
    else results.push(entry);
    await writeFile(
      resultsFile,
      `${JSON.stringify(
        {
          benchmark: 'alfworld-experiment',
          date: new Date().toISOString(),
          protocol: {
            policy:
              'LinearSoftmaxPolicy (2^18 hashed features), GRPO, greedy evaluation (random: sampled uniform)',
            experienceModel:
              'RetrievalExperienceModel over a HashingEmbedder replay buffer of expert + exploration trajectories',
            budget,
            maxSteps,
            seed,
            config: baseConfig,
            exploration: values.exploration ?? [],
          },
          results,
        },
        null,
        2,
      )}\n`,
    );
    await writeReport();
  }
} finally {
  await realPool.closeAll();
  await rm(scratch, { recursive: true, force: true });
}

console.table(
  results.map((result) => ({
    condition: result.condition,
    real: result.realTransitions,
    synthetic: result.syntheticTransitions,
    valid_seen: percent(result.evaluations.valid_seen),
    valid_unseen: percent(result.evaluations.valid_unseen),
  })),
);
