/**
 * What limits the embedded policy on ALFWorld, measured on training games only (issue 53):
 * for each feature set of `LinearSoftmaxPolicy` (`lexical`, `relational`,
 * `lexical+relational`), the same start and the same real-env GRPO, and how well each carries
 * from the worlds it was fitted in to other worlds.
 *
 * The 300 playable training games are split by their scene (ALFWorld's world: a floor plan
 * with its furniture): even scenes are the fitted worlds, odd scenes the held-out worlds.
 * Every variant clones the first `--demos` expert demonstrations of fitted-world games
 * (the main job's start: behaviour cloning, 20 epochs at most, best held-out likelihood), then
 * runs GRPO in the real engine on the fitted-world playable games (the budgets experiment's
 * real-env GRPO: 8 games x 4 episodes per iteration, 2 epochs, learning rate 0.01, episode
 * weighting) for `--budget` real transitions. Before and after, greedy real success on
 * `--fit-eval` fitted-world games and `--heldout-eval` held-out-world games (seeded samples
 * of each task type alike). valid_seen and valid_unseen are never read.
 *
 * Resumable: each variant's stages (start, each GRPO iteration, evaluations) are kept in
 * `--scratch DIR` and the results file, and a stage found there is not run again.
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/alfworld-policy-features.ts \
 *     [--variants lexical,relational] [--seed 1] [--budget 5000] [--demos 500] \
 *     [--fit-eval 48] [--heldout-eval 72] [--servers 2] \
 *     [--scratch scratch/alfworld-policy-features] [--out benchmarks/results/alfworld-policy-features.json]
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type EvaluationMetrics,
  evaluatePolicy,
  LinearSoftmaxPolicy,
  SeededRandom,
  type Task,
  type Trajectory,
} from '@dreamgym/core';
import type { PolicyFeatureSet } from '@dreamgym/core/policy';
import { EnvironmentPool } from '@dreamgym/core/rollout';
import { BehaviourCloningConfigSchema, cloneBehaviour, GrpoTrainer } from '@dreamgym/core/training';
import { loadDomainAdapter, reportEpisodes } from '@dreamgym/run';
import { log } from './alfworld-protocol.js';

const { values } = parseArgs({
  options: {
    variants: { type: 'string', default: 'lexical,relational' },
    seed: { type: 'string', default: '1' },
    budget: { type: 'string', default: '5000' },
    demos: { type: 'string', default: '500' },
    'fit-eval': { type: 'string', default: '48' },
    'heldout-eval': { type: 'string', default: '72' },
    servers: { type: 'string', default: '2' },
    scratch: { type: 'string', default: 'scratch/alfworld-policy-features' },
    out: { type: 'string', default: 'benchmarks/results/alfworld-policy-features.json' },
  },
});
const FEATURE_SETS: readonly PolicyFeatureSet[] = ['lexical', 'relational', 'lexical+relational'];
const variants = values.variants!.split(',').map((name) => {
  if (!FEATURE_SETS.includes(name as PolicyFeatureSet)) {
    throw new Error(`--variants: unknown feature set ${name}; one of ${FEATURE_SETS.join(', ')}.`);
  }
  return name as PolicyFeatureSet;
});
const seed = Number(values.seed);
const budget = Number(values.budget);
const servers = Number(values.servers);
const MAX_STEPS = 30;
const GRPO = { tasksPerIteration: 8, rolloutsPerTask: 4, epochs: 2, learningRate: 0.01 };

const root = resolve(import.meta.dirname, '..');
const dataRoot = process.env.DREAMGYM_DATA_DIR ?? join(root, '..', 'shared', 'data');
const data = resolve(dataRoot, 'alfworld');
if (!existsSync(data)) {
  throw new Error(`${data} does not exist: set DREAMGYM_DATA_DIR to the folder holding alfworld/.`);
}
const scratch = resolve(root, values.scratch!);
const outFile = resolve(root, values.out!);

interface Evaluation {
  successRate: number;
  interval: readonly [number, number];
  episodes: number;
  meanSteps: number;
}
interface GrpoIteration {
  iteration: number;
  realTransitions: number;
  trainingSuccess: number;
  entropy: number;
  seconds: number;
}
interface VariantResult {
  features: PolicyFeatureSet;
  seed: number;
  start?: {
    cloning: { bestEpoch: number; trainSamples: number; heldOutNll: number; seconds: number };
    fitted?: Evaluation;
    heldOut?: Evaluation;
  };
  grpo: GrpoIteration[];
  after?: { realTransitions: number; fitted?: Evaluation; heldOut?: Evaluation };
}
interface Results {
  benchmark: 'alfworld-policy-features';
  protocol: Record<string, unknown>;
  variants: VariantResult[];
}

const results: Results = existsSync(outFile)
  ? (JSON.parse(await readFile(outFile, 'utf8')) as Results)
  : { benchmark: 'alfworld-policy-features', protocol: {}, variants: [] };
const save = async () => {
  await mkdir(resolve(outFile, '..'), { recursive: true });
  await writeFile(outFile, `${JSON.stringify(results, null, 2)}\n`);
};

const adapter = await loadDomainAdapter('alfworld', { dataDir: data });
const games: Task[] = [];
for await (const task of adapter.datasets.tasks.load(data, { splits: ['train'] })) games.push(task);
const demonstrations: Trajectory[] = [];
for await (const trajectory of adapter.datasets.trajectories.load(data, {})) {
  demonstrations.push(trajectory);
}
const sceneOf = (task: Task) => Number(task.meta?.scene);
const fitted = (task: Task) => sceneOf(task) % 2 === 0;
const fittedGames = games.filter(fitted);
const heldOutGames = games.filter((task) => !fitted(task));
const fittedDemos = demonstrations
  .filter((trajectory) => trajectory.success && fitted(trajectory.task))
  .slice(0, Number(values.demos));

/** `count` games, as many of each task type as can be, in a seeded order. */
function sample(tasks: readonly Task[], count: number, label: string): Task[] {
  const byType = new Map<string, Task[]>();
  for (const task of tasks) {
    const type = String(task.meta?.taskType);
    byType.set(type, [...(byType.get(type) ?? []), task]);
  }
  const random = new SeededRandom(7).fork(label);
  const lists = [...byType.values()].map((list) => random.shuffle([...list]));
  const chosen: Task[] = [];
  for (let round = 0; chosen.length < count && lists.some((list) => list.length > round); round++) {
    for (const list of lists) if (list[round] && chosen.length < count) chosen.push(list[round]!);
  }
  return chosen;
}
const fitEval = sample(fittedGames, Number(values['fit-eval']), 'fitted');
const heldOutEval = sample(heldOutGames, Number(values['heldout-eval']), 'held-out');
results.protocol = {
  worlds:
    'the 300 playable ALFWorld training games split by scene: even scenes fitted, odd scenes held out; valid_seen and valid_unseen never read',
  fittedGames: fittedGames.length,
  heldOutGames: heldOutGames.length,
  start: `behaviour cloning on the first ${fittedDemos.length} successful expert demonstrations of fitted-world games (BehaviourCloningConfigSchema defaults: 20 epochs at most, best held-out likelihood)`,
  grpo: `real-env GRPO on the ${fittedGames.length} fitted-world games: ${GRPO.tasksPerIteration} games x ${GRPO.rolloutsPerTask} episodes per iteration, ${GRPO.epochs} epochs, learning rate ${GRPO.learningRate}, episode weighting, max ${MAX_STEPS} steps, until ${budget} real transitions`,
  evaluation: `greedy real success on ${fitEval.length} fitted-world and ${heldOutEval.length} held-out-world games (seeded, task types alike); 95% Wilson intervals`,
};
log(
  `worlds: ${fittedGames.length} fitted-world games, ${heldOutGames.length} held-out-world games; ${fittedDemos.length} demonstrations`,
);

const pool = new EnvironmentPool(() => adapter.connectReal({ requestTimeoutMs: 300_000 }));
const candidateActions = adapter.candidateActions.bind(adapter);

async function evaluate(
  policy: LinearSoftmaxPolicy,
  tasks: readonly Task[],
  label: string,
): Promise<Evaluation> {
  const { metrics } = await evaluatePolicy({
    policy,
    environmentFactory: () => pool.lease(),
    environment: 'real',
    tasks,
    maxSteps: MAX_STEPS,
    greedy: true,
    concurrency: servers,
    random: new SeededRandom(seed + 1000),
    candidateActions,
    onEpisode: reportEpisodes(label),
  });
  return summary(metrics);
}
const summary = (metrics: EvaluationMetrics): Evaluation => ({
  successRate: metrics.successRate,
  interval: metrics.successInterval95,
  episodes: metrics.episodes,
  meanSteps: metrics.meanSteps,
});
const newPolicy = (features: PolicyFeatureSet) =>
  new LinearSoftmaxPolicy({
    random: new SeededRandom(seed).fork('policy'),
    hashBits: 18,
    historyWindow: 2,
    optimizer: { learningRate: 0.05 },
    features,
  });

for (const features of variants) {
  let result = results.variants.find((entry) => entry.features === features && entry.seed === seed);
  if (!result) {
    result = { features, seed, grpo: [] };
    results.variants.push(result);
  }
  const directory = join(scratch, `${features}-${seed}`);
  const policy = newPolicy(features);
  const startDirectory = join(directory, 'start');
  if (!result.start || !existsSync(startDirectory)) {
    const started = performance.now();
    const cloning = await cloneBehaviour({
      policy,
      trajectories: fittedDemos,
      config: BehaviourCloningConfigSchema.parse({}),
      random: new SeededRandom(seed).fork('behaviour-cloning'),
      candidateActions,
      onEpoch: (epoch) =>
        log(
          `${features}: cloning epoch ${epoch.epoch}, held-out NLL ${epoch.heldOutNegativeLogLikelihood.toFixed(3)}`,
        ),
    });
    await policy.saveState(startDirectory);
    result.start = {
      cloning: {
        bestEpoch: cloning.bestEpoch,
        trainSamples: cloning.trainSamples,
        heldOutNll: cloning.bestHeldOutNegativeLogLikelihood,
        seconds: (performance.now() - started) / 1000,
      },
    };
    result.grpo = [];
    result.after = undefined;
    await save();
  }
  if (!result.start.fitted || !result.start.heldOut) {
    await policy.loadState(startDirectory);
    result.start.fitted ??= await evaluate(policy, fitEval, `${features} start, fitted worlds`);
    await save();
    result.start.heldOut ??= await evaluate(policy, heldOutEval, `${features} start, held-out`);
    await save();
    log(
      `${features} start: fitted ${(100 * result.start.fitted.successRate).toFixed(1)}%, held-out ${(100 * result.start.heldOut.successRate).toFixed(1)}%`,
    );
  }

  // GRPO, one iteration at a time; each iteration's policy is kept, so a stopped run resumes.
  let transitions = result.grpo.at(-1)?.realTransitions ?? 0;
  const iterationDirectory = (iteration: number) => join(directory, `grpo-${iteration}`);
  await policy.loadState(
    result.grpo.length === 0 ? startDirectory : iterationDirectory(result.grpo.length),
  );
  await policy.resetOptimizer();
  while (transitions < budget) {
    const iteration = result.grpo.length + 1;
    const started = performance.now();
    const trainer = new GrpoTrainer({
      policy,
      environmentFactory: () => pool.lease(),
      tasks: fittedGames,
      random: new SeededRandom(seed).fork(`grpo ${iteration}`),
      candidateActions,
      maxSteps: MAX_STEPS,
      concurrency: servers,
      tasksPerIteration: GRPO.tasksPerIteration,
      rolloutsPerTask: GRPO.rolloutsPerTask,
      epochs: GRPO.epochs,
      learningRate: GRPO.learningRate,
      maxGradNorm: 1,
      episodeWeighting: 'episode',
    });
    const step = await trainer.step();
    transitions += step.metrics.steps;
    await policy.saveState(iterationDirectory(iteration));
    result.grpo.push({
      iteration,
      realTransitions: transitions,
      trainingSuccess: step.metrics.successRate,
      entropy: step.metrics.entropy,
      seconds: (performance.now() - started) / 1000,
    });
    await save();
    log(
      `${features} GRPO ${iteration}: ${transitions} real transitions, training success ${(100 * step.metrics.successRate).toFixed(1)}%, entropy ${step.metrics.entropy.toFixed(3)}`,
    );
  }
  if (!result.after?.fitted || !result.after.heldOut) {
    result.after ??= { realTransitions: transitions };
    result.after.fitted ??= await evaluate(policy, fitEval, `${features} after GRPO, fitted`);
    await save();
    result.after.heldOut ??= await evaluate(
      policy,
      heldOutEval,
      `${features} after GRPO, held-out`,
    );
    await save();
    log(
      `${features} after ${transitions} real transitions: fitted ${(100 * result.after.fitted.successRate).toFixed(1)}%, held-out ${(100 * result.after.heldOut.successRate).toFixed(1)}%`,
    );
  }
}
await pool.closeAll();
log(`written ${outFile}`);
