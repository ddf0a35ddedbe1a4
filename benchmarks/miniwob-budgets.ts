/**
 * The paper's experiment at the paper's budgets on MiniWoB++ (issue 29): greedy success on the
 * real task pages against the real transitions a condition used, as learning curves, for the
 * conditions of `budgets-driver.ts` (start, real-env GRPO and PPO with snapshots at 3K, 10K,
 * 30K and 80K real transitions, DreamGym with 0 real and as many updates as real-env GRPO made
 * to reach 80K, DreamGym-S2R with 5K, the ablations at DreamGym's final point).
 *
 * The MiniWoB++ experiment's protocol (`miniwob-experiment.ts`): the twelve tasks of
 * `MINIWOB_EXPERIMENT_TASKS` (chosen before any result), the real pages of the `miniwob` PyPI
 * package served on 127.0.0.1 and played in Chromium through `@dreamgym/browser` with the
 * pages' own rewards, at most 5 steps an episode, its loop configuration
 * (`experimentBaseConfig`), and its experience model: retrieval over the uniform-random
 * exploration episodes of the training seeds, outcomes by the neighbours' vote. (The outcome
 * judge and world memory that ALFWorld's runs use are off: on MiniWoB++ the judge misses most
 * real successes and a policy trained against it did worse on the real pages, and the world
 * memory never answers on a held-out seed; see the on-policy fidelity section of the README.)
 * Evaluation: every held-out `eval` instance (seeds from 100 000, never explored, cloned from,
 * put in a replay buffer or used to choose anything), greedy, 95% Wilson intervals; the final
 * points also sampled, and on 48 training instances in both environments.
 *
 * The starting policy, chosen before any result of this experiment: behaviour cloning of the
 * linear softmax policy on the demonstrations of a small fixed share of the training
 * instances, the first 5 of the 30 training seeds of every task. MiniWoB++ has no expert
 * demonstrations: they are the exploration episodes the pages scored a success (about 45% of
 * uniform-random episodes). The paper starts from policies that succeed sometimes and the
 * ALFWorld driver clones 500 of 3,553 demonstrations; a sixth of the instances, taken on every
 * task alike (not the files' first episodes, which hold whole tasks in turn), leaves room to
 * improve (the earlier experiment: cloning on all successes of 10 seeds reached 54%, random
 * play 50%). The cloning's learning rate is 0.002, not the policy's 0.05: checked on the
 * training instances alone before any evaluation, at 0.05 one Adam step on this share's 38
 * steps overshoots (seed 1 kept the untrained weights, whose greedy play is "the first
 * candidate"; seed 2's held-out NLL fell to 0.000 in one epoch), at 0.002 seeds 1 and 2 kept
 * epochs 4 and 5 (held-out NLL 0.83 -> 0.76 and 0.23 -> 0.12).
 *
 * RL runs at learning rate 0.005 (`RL_LEARNING_RATE`), chosen on the 48 training instances among
 * 0.05, 0.01, 0.005 and 0.002 (`miniwob-step-size.ts`): the first run, at the policy's 0.05,
 * stopped learning by iteration 12 (entropy under 0.05 nats, every advantage 0 from then on).
 *
 * Usage (after `npm run build`; Chromium and the `miniwob` package as `bash scripts/setup.sh`
 * installs them):
 *   npx tsx benchmarks/miniwob-budgets.ts [--seeds 1,2] \
 *     [--conditions start,real-grpo,dreamgym,dreamgym-s2r] [--scratch DIR] \
 *     [--marks 3000,10000,30000,80000] [--s2r-budget 5000] [--dreamgym-updates N] [--data DIR] \
 *     [--train-seeds 30] [--eval-seeds 25] [--start-seeds 5] [--gap-tasks 48] [--concurrency 2] \
 *     [--entropy-coefficient E] [--rl-learning-rate R] [--out DIR]
 * The dataset (task instances, one exploration episode per training instance) is built on the
 * real pages into `--data` (default `<scratch>/dataset`) unless it is there. `--conditions ''`
 * writes the report from the results file alone. Resumable as `budgets-driver.ts` describes; a
 * smoke run (`--marks 60,120 --s2r-budget 40 --train-seeds 6 --eval-seeds 2 --start-seeds 3
 * --gap-tasks 4`), like RL settings other than the experiment's (`--entropy-coefficient`,
 * `--rl-learning-rate`), needs its own `--scratch` and `--out`. Writes miniwob-budgets.json and
 * miniwob-budgets-report.html into `--out DIR` (default benchmarks/results).
 */
import { join, resolve } from 'node:path';
import { budgetCommandLine, wholeNumbers } from './budgets-command-line.js';
import { runBudgets } from './budgets-driver.js';
import { miniwobBudgetDomain } from './miniwob-budget-domain.js';

const { run, values } = budgetCommandLine('miniwob-budgets', {
  data: { type: 'string' },
  'train-seeds': { type: 'string', default: '30' },
  'eval-seeds': { type: 'string', default: '25' },
  'start-seeds': { type: 'string', default: '5' },
  concurrency: { type: 'string', default: '2' },
});
const [trainSeeds, evalSeeds, startSeeds, concurrency] = (
  ['train-seeds', 'eval-seeds', 'start-seeds', 'concurrency'] as const
).map((flag) => wholeNumbers(flag, values[flag]!)[0]!) as [number, number, number, number];

await runBudgets(
  miniwobBudgetDomain({
    data: resolve(values.data ?? join(run.scratch, 'dataset')),
    trainSeeds,
    evalSeeds,
    startSeeds,
    concurrency,
  }),
  run,
);
