/**
 * MiniWoB++ as a budgets domain (`budgets-driver.ts`): the protocol of `miniwob-experiment.ts`
 * (the twelve tasks of `MINIWOB_EXPERIMENT_TASKS`, the real pages of the `miniwob` PyPI
 * package served on 127.0.0.1 and played in Chromium through `@dreamgym/browser` with the
 * pages' own rewards, at most 5 steps an episode), its dataset (task instances and one
 * uniform-random exploration episode per training instance, built on the real pages unless
 * there), and the start's demonstrations: the exploration successes of the first
 * `startSeeds` training seeds of every task. The embedded linear policy's experiment
 * (`miniwob-budgets.ts`) runs it as it is; the LLM experiment (`miniwob-llm.ts`) replaces the
 * policy, the loop settings and the experience model's parts.
 */
import { launchChromium, startMiniwobServer } from '@dreamgym/browser';
import { connectMiniwobReal, MINIWOB_EXPERIMENT_TASKS } from '@dreamgym/miniwob';
import { setUpDomain } from '@dreamgym/run';
import { log } from './alfworld-protocol.js';
import type { BudgetDomain } from './budgets-driver.js';
import { experimentBaseConfig } from './experiment-conditions.js';
import { ensureMiniwobExperimentDataset } from './miniwob-dataset.js';

/** The dataset and the real pages' settings of a MiniWoB++ budgets run. */
export interface MiniwobBudgetSettings {
  /** The dataset folder (built there unless complete). */
  data: string;
  trainSeeds: number;
  evalSeeds: number;
  /** The start clones the exploration successes of training seeds below this. */
  startSeeds: number;
  /** Real pages played at once. */
  concurrency: number;
}

/** Steps per episode, in both environments. */
export const MINIWOB_MAX_STEPS = 5;
/**
 * The RL trainer's learning rate, chosen on training instances (`miniwob-step-size.ts`): at the
 * policy's 0.05 the first run's updates stalled by iteration 12 (every advantage 0).
 */
const RL_LEARNING_RATE = 0.005;
const BEHAVIOUR_CLONING = {
  epochs: 20,
  miniBatchSize: 64,
  learningRate: 0.002,
  heldOutShare: 0.1,
  patience: 3,
};

/** MiniWoB++ with the embedded linear policy, as `miniwob-budgets.ts` runs it. */
export function miniwobBudgetDomain(settings: MiniwobBudgetSettings): BudgetDomain {
  const { data, trainSeeds, evalSeeds, startSeeds, concurrency } = settings;
  const maxSteps = MINIWOB_MAX_STEPS;
  const tasks = MINIWOB_EXPERIMENT_TASKS;
  return {
    benchmark: 'miniwob-budgets',
    labels: {
      domain: 'MiniWoB++',
      environment: 'the real pages',
      trainingTasks: 'training instances',
    },
    evaluation: { eval: tasks.length * evalSeeds },
    maxSteps,
    baseConfig: (seed) =>
      experimentBaseConfig({
        seed,
        iterations: 15,
        maxSteps,
        realConcurrency: concurrency,
        rlLearningRate: RL_LEARNING_RATE,
      }),
    protocol: {
      tasks,
      tasksChosen:
        'before any result: tasks whose target is named by words of a small vocabulary or is the same on every page (MINIWOB_EXPERIMENT_TASKS in adapters/miniwob/src/datasets/task-list.ts)',
      environment:
        'real MiniWoB++ pages (miniwob 1.1.0, served on 127.0.0.1) in Debian Chromium through @dreamgym/browser; raw task reward (1 success, -1 failure); page time limit 600 s',
      split: `per task: training seeds 0..${trainSeeds - 1}, held-out eval seeds 100000..${100_000 + evalSeeds - 1} (evaluation only)`,
      offlineData: `one uniform-random exploration episode per training instance (${tasks.length * trainSeeds}), played on the real pages`,
      policy:
        'LinearSoftmaxPolicy (2^18 hashed features) over the candidate actions (element notes), the MiniWoB++ experiment configuration (experimentBaseConfig)',
      experienceModel:
        "the MiniWoB++ experiment's: retrieval over the exploration episodes, outcomes by the neighbours' vote (no outcome judge, no world memory); built afresh per condition",
    },
    start: {
      how: `behaviour cloning of the linear softmax policy on the successful exploration episodes of the first ${startSeeds} of the ${trainSeeds} training seeds of every task (learning rate ${BEHAVIOUR_CLONING.learningRate}, the epoch with the best likelihood on held-out training instances)`,
      why: 'Chosen before any result of this experiment, as the paper starts from policies that succeed sometimes and the ALFWorld driver clones a small fixed share (500 of 3,553) of its demonstrations. MiniWoB++ has no expert demonstrations: they are the exploration episodes the pages scored a success (about 45% of uniform-random ones). A sixth of the training instances, taken on every task alike, leaves room to improve (the MiniWoB++ experiment: cloning on all successes of 10 seeds 54%, random play 50%). The learning rate is below the policy’s 0.05, at which one Adam step on a few dozen steps overshoots and early stopping keeps the untrained weights (greedy: always the first candidate).',
      warmStart: { behaviourCloning: BEHAVIOUR_CLONING },
    },
    experienceModel: { outcomeJudge: false, worldMemory: false },
    async load() {
      await ensureMiniwobExperimentDataset({
        dir: data,
        trainSeeds,
        evalSeeds,
        maxSteps,
        concurrency,
        log,
      });
      const setup = await setUpDomain(
        { domain: 'miniwob', data, evalSplit: 'eval', outcomeJudge: false, worldMemory: false },
        log,
      );
      const found = { train: setup.seedTasks.length, eval: setup.evaluationTasks.length };
      if (found.train !== tasks.length * trainSeeds || found.eval !== tasks.length * evalSeeds) {
        throw new Error(
          `The dataset in ${data} holds ${found.train} training and ${found.eval} eval instances, not ${tasks.length} tasks x ${trainSeeds} and x ${evalSeeds}: pass the --train-seeds and --eval-seeds it was built with, or another --data.`,
        );
      }
      const [server, browser] = await Promise.all([startMiniwobServer(), launchChromium()]);
      return {
        setup,
        demonstrations: setup.offlineTrajectories.filter(
          (trajectory) => Number(trajectory.task.meta.seed) < startSeeds,
        ),
        evaluationSets: { eval: setup.evaluationTasks },
        realEnvironment: () => connectMiniwobReal({ server, browser, maxSteps }),
        close: async () => {
          await browser.close().catch(() => undefined);
          await server.close().catch(() => undefined);
        },
      };
    },
  };
}
