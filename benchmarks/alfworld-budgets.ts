/**
 * The paper's experiment at the paper's budgets on ALFWorld (issue 29): greedy real success
 * against the real transitions a condition used, as learning curves.
 *
 *   start           the starting policy: behaviour cloning on the first 500 expert
 *                   demonstrations (the main job's start), chosen before any result
 *   real-grpo       the start, then GRPO in the real engine; snapshots at 3K, 10K, 30K and
 *                   80K real transitions
 *   real-ppo        the same with PPO (the paper's second real-env baseline)
 *   dreamgym        the start, then DreamGym with 0 real transitions, for as many updates
 *                   (iterations) as real-env GRPO of the same seed made to reach 80K
 *   dreamgym-s2r    the dreamgym policy, then GRPO in the real engine with 5K real transitions
 *   no-curriculum, no-replay, no-retrieval   dreamgym with one part switched off
 *
 * Every condition uses the main job's configuration (`configs/alfworld-main.json`: linear
 * softmax policy, GRPO at learning rate 0.01 with episode weighting), the embedded experience
 * model (retrieval with world memory, outcomes judged by the `OutcomeJudge`) learned from the
 * expert trajectories and the cached exploration episodes, built afresh for every condition so
 * that what one run's real episodes teach it (`learn`) never reaches another. Each point is
 * evaluated greedily on the real engine on all 140 valid_seen and 134 valid_unseen games; the
 * final points also sampled, and on the same 48 training games in the synthetic environment
 * and on the real engine (the sim-to-real gap).
 *
 * The schedule, the curve points, resume and the report are `budgets-driver.ts`'s, shared
 * with `miniwob-budgets.ts`. Resumable: run folders, checkpoints and curve points' policies
 * live in `--scratch DIR` (default scratch/alfworld-budgets), every evaluation is written to
 * the results file as it finishes, and points measured in full there are not trained again.
 *
 * Usage (after `npm run build`):
 *   DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/alfworld-budgets.ts \
 *     [--seeds 1,2] [--conditions start,real-grpo,dreamgym,dreamgym-s2r] [--scratch DIR] \
 *     [--marks 3000,10000,30000,80000] [--s2r-budget 5000] [--seen 140] [--unseen 134] \
 *     [--gap-tasks 48] [--dreamgym-updates N] [--entropy-coefficient E] [--rl-learning-rate R] \
 *     [--servers 2] [--policy-features lexical|relational|lexical+relational] [--commit M] [--out DIR]
 * `--conditions ''` writes the report from the results file alone. A smoke run at a small
 * scale (`--marks 300,600 --s2r-budget 200 --seen 8 --unseen 8 --gap-tasks 4`) needs its
 * own `--scratch` and `--out` (points are keyed by condition, seed and real transitions), as do
 * RL settings other than the experiment's (`--entropy-coefficient`, `--rl-learning-rate`).
 * Writes alfworld-budgets.json and alfworld-budgets-report.html into `--out DIR` (default
 * benchmarks/results). `--policy-features` builds the embedded policy with that feature set
 * (`policy.features`; default the main job's, lexical) and, like other RL settings, needs its
 * own `--scratch` and `--out`. `--commit M`: the curve points' policies are kept in
 * `<out>/points` (not the scratch folder), and at most every M minutes, after a results write,
 * the results file, its report and the points are committed (those paths only), so that a run
 * outliving its session leaves its measurements and kept policies in the repository.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import type { DreamGymConfigInput, Task } from '@dreamgym/core';
import type { PolicyFeatureSet } from '@dreamgym/core/policy';
import { setUpDomain } from '@dreamgym/run';
import { log } from './alfworld-protocol.js';
import { budgetCommandLine, wholeNumbers } from './budgets-command-line.js';
import { type BudgetDomain, runBudgets } from './budgets-driver.js';

const { run, values } = budgetCommandLine('alfworld-budgets', {
  seen: { type: 'string', default: '140' },
  unseen: { type: 'string', default: '134' },
  servers: { type: 'string', default: '2' },
  'policy-features': { type: 'string' },
  commit: { type: 'string', default: '0' },
});
const FEATURE_SETS: readonly PolicyFeatureSet[] = ['lexical', 'relational', 'lexical+relational'];
const features = values['policy-features'] as PolicyFeatureSet | undefined;
if (features !== undefined && !FEATURE_SETS.includes(features)) {
  throw new Error(`--policy-features: one of ${FEATURE_SETS.join(', ')}; got ${features}.`);
}

const root = resolve(import.meta.dirname, '..');
const dataRoot = process.env.DREAMGYM_DATA_DIR ?? join(root, '..', 'shared', 'data');
if (!existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error(
    `${join(dataRoot, 'alfworld')} does not exist: set DREAMGYM_DATA_DIR to the folder holding alfworld/ (e.g. ../shared/data).`,
  );
}
const data = resolve(dataRoot, 'alfworld');
const servers = wholeNumbers('servers', values.servers!)[0]!;

// The main job's configuration is every condition's: its trainer was chosen on training games.
const mainJob = JSON.parse(
  await readFile(join(root, 'configs', 'alfworld-main.json'), 'utf8'),
) as DreamGymConfigInput & { setup?: unknown };
const { setup: _setup, warmStart, evaluation: _evaluation, ...mainJobLoop } = mainJob;
const mainLoop: DreamGymConfigInput = features
  ? { ...mainJobLoop, policy: { ...mainJobLoop.policy, features } }
  : mainJobLoop;
const demonstrations = warmStart?.behaviourCloning?.maxTrajectories ?? 500;
const EXPLORATION = { episodes: 200, seed: 0, maxSteps: 30 };

/**
 * With `--commit M`: at most every M minutes, after a results write, commits the results file,
 * its report and the kept points (those paths only). A failed commit (another engineer's
 * commit holding the index lock) is tried again at the next write.
 */
const commitEveryMinutes = Number(values.commit);
let lastCommit = 0;
async function commitKept(): Promise<void> {
  if (Date.now() - lastCommit < commitEveryMinutes * 60_000) return;
  const paths = [
    relative(root, join(run.resultsDirectory, 'points')),
    relative(root, join(run.resultsDirectory, 'alfworld-budgets.json')),
    relative(root, join(run.resultsDirectory, 'alfworld-budgets-report.html')),
  ].filter((path) => existsSync(join(root, path)));
  const git = (...args: string[]) =>
    new Promise<string>((done, fail) =>
      execFile('git', args, { cwd: root }, (error, stdout, stderr) =>
        error ? fail(new Error(`git ${args[0]}: ${stderr || error.message}`)) : done(stdout),
      ),
    );
  try {
    await git('add', '--', ...paths);
    if ((await git('diff', '--cached', '--name-only', '--', ...paths)).trim() === '') return;
    await git(
      'commit',
      '-q',
      '-m',
      `benchmarks/${relative(join(root, 'benchmarks'), run.resultsDirectory)}: ALFWorld budgets results and kept points so far (${new Date().toISOString().slice(0, 16)}Z, run in the background)`,
      '--',
      ...paths,
    );
    lastCommit = Date.now();
    log(`committed ${paths.join(', ')}`);
  } catch (error) {
    log(`commit skipped: ${(error as Error).message.trim().split('\n')[0]}`);
  }
}

const alfworld: BudgetDomain = {
  benchmark: 'alfworld-budgets',
  labels: { domain: 'ALFWorld', environment: 'the real engine', trainingTasks: 'training games' },
  evaluation: { valid_seen: Number(values.seen), valid_unseen: Number(values.unseen) },
  maxSteps: mainLoop.maxSteps ?? 30,
  baseConfig: (seed) => ({
    ...mainLoop,
    seed,
    realConcurrency: servers,
    evaluation: { every: 0, environments: [] },
    simToReal: { realTransitionBudget: 0, tasksPerIteration: 8, rolloutsPerTask: 4 },
  }),
  protocol: {
    policy: `LinearSoftmaxPolicy (2^18 hashed features, ${features ?? 'lexical'} features), the main job configuration (configs/alfworld-main.json)${features ? ` with policy.features ${features}` : ''}`,
    experienceModel:
      'the embedded model: retrieval over the expert trajectories and 200 cached exploration episodes, world memory, outcomes judged by the OutcomeJudge; built afresh per condition',
  },
  start: {
    how: `behaviour cloning of the linear softmax policy on the first ${demonstrations} of the expert demonstrations (the main job's start)`,
    why: 'Chosen before any result of this experiment, as the paper starts from instruction-tuned models that succeed sometimes: it succeeds on about one valid_seen game in ten (the main job measured 10.0% greedy), so every method has successes to learn from and room to improve, where cloning all demonstrations leaves little for RL to find and the untrained policy almost never succeeds.',
    warmStart: { behaviourCloning: { maxTrajectories: demonstrations } },
  },
  experienceModel: {},
  ...(commitEveryMinutes > 0 && {
    pointsDirectory: join(run.resultsDirectory, 'points'),
    onResultsWritten: commitKept,
  }),
  async load() {
    const setup = await setUpDomain(
      {
        domain: 'alfworld',
        data,
        evalSplit: 'valid_seen',
        evalTasks: Number(values.seen),
        exploration: EXPLORATION,
      },
      log,
    );
    const unseen: Task[] = [];
    for await (const task of setup.adapter.datasets.tasks.load(data, {
      splits: ['valid_unseen'],
      limit: Number(values.unseen),
    })) {
      unseen.push(task);
    }
    return {
      setup,
      // The expert trajectories come first; cloning takes the first successful ones.
      demonstrations: setup.offlineTrajectories,
      evaluationSets: { valid_seen: setup.evaluationTasks, valid_unseen: unseen },
      // A generous request timeout: on a loaded machine a reset can take more than a minute.
      realEnvironment: () => setup.adapter.connectReal({ requestTimeoutMs: 300_000 }),
      close: async () => {},
    };
  },
};

await runBudgets(alfworld, run);
