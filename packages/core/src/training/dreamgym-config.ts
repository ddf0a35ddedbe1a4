/**
 * The DreamGym loop's configuration: one zod schema with every field documented, the
 * defaults, and `parseDreamGymConfig`, whose errors name the field.
 */
import { z } from 'zod';
import { CurriculumConfigSchema } from '../curriculum/curriculum.js';
import { parseOptions } from '../parse-options.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';

const PpoLossConfigSchema = z
  .object({
    clipLow: z.number().positive().optional(),
    clipHigh: z.number().positive().optional(),
    dualClip: z.number().gt(1).optional(),
    klCoefficient: z.number().nonnegative().optional(),
    entropyCoefficient: z.number().nonnegative().optional(),
  })
  .default({});

/** Behaviour cloning on the offline trajectories before RL (the paper's policies start instruction-tuned). */
export const BehaviourCloningConfigSchema = z.object({
  /** Most passes over the demonstrations. */
  epochs: z.number().int().positive().default(20),
  /** Demonstrated steps per gradient step. */
  miniBatchSize: z.number().int().positive().default(256),
  /** Learning rate of the cloning steps (default: the policy's own). */
  learningRate: z.number().positive().optional(),
  /** Share of the demonstrating tasks held out to pick the best epoch. */
  heldOutShare: z.number().gt(0).lt(1).default(0.1),
  /** Stop after this many epochs without a better held-out likelihood. */
  patience: z.number().int().positive().default(3),
  /** Use at most this many offline trajectories (default all). */
  maxTrajectories: z.number().int().positive().optional(),
  /**
   * Clone the demonstrations of only this share of the demonstrating tasks, a seeded sample
   * (after `maxTrajectories`); default all. A start that succeeds sometimes, with room to
   * improve, taken from every kind of task alike where the files list the tasks in turn.
   */
  taskShare: z.number().gt(0).max(1).optional(),
});
export type BehaviourCloningConfig = z.infer<typeof BehaviourCloningConfigSchema>;

/** The loop's configuration; `parseDreamGymConfig` validates it and fills defaults. */
export const DreamGymConfigSchema = z.object({
  /** Seeds every random choice of the run. */
  seed: z.number().int().default(0),
  /** Iterations of the synthetic phase. */
  iterations: z.number().int().nonnegative().default(20),
  /** Tasks per iteration (seed + generated, at most `curriculum.lambda` generated). */
  tasksPerIteration: z.number().int().positive().default(16),
  /** Rollouts per task (the group size n of GRPO and of the task value). */
  rolloutsPerTask: z.number().int().positive().default(4),
  /** Steps after which an episode is cut off (a truncation: PPO bootstraps, GRPO counts a failure). */
  maxSteps: z.number().int().positive().default(30),
  /** Synthetic environments stepping at once. */
  concurrency: z.number().int().positive().default(8),
  /** Real environments stepping at once (sim-to-real and real evaluation): real engines are costly. */
  realConcurrency: z.number().int().positive().default(2),
  /** The RL algorithm. `dr-grpo` is GRPO without the std normalisation. */
  algorithm: z.enum(['grpo', 'dr-grpo', 'ppo']).default('grpo'),
  trainer: z
    .object({
      epochs: z.number().int().positive().default(1),
      miniBatchSize: z.number().int().positive().optional(),
      learningRate: z.number().positive().optional(),
      maxGradNorm: z.number().positive().default(1),
      loss: PpoLossConfigSchema,
      /**
       * GRPO: how episodes weigh in the update: `step` (every step once, the default) or
       * `episode` (every episode alike, its advantage spread over its steps).
       */
      episodeWeighting: z.enum(['step', 'episode']).default('step'),
      /** PPO: discount and GAE lambda. */
      gamma: z.number().min(0).max(1).default(0.99),
      gaeLambda: z.number().min(0).max(1).default(0.95),
      /**
       * How a step is credited in the synthetic phase (GRPO and PPO). `episode` (absent): by its
       * episode's return. `fork`: by its own, from forked continuations of the synthetic
       * environment: at the states `forks` chooses, `forks.continuations` episodes played on by
       * the policy give the state's value, and a step's advantage is its return-to-go against
       * it. Sim-to-real keeps episode credit: real environments cannot fork.
       */
      credit: z.enum(['episode', 'fork']).optional(),
      /** With `credit: 'fork'`: continuations per forked state (K), and fork at every `every`-th state. */
      forks: z
        .object({
          continuations: z.number().int().positive().default(4),
          every: z.number().int().positive().default(1),
        })
        .optional(),
    })
    .default({
      epochs: 1,
      maxGradNorm: 1,
      loss: {},
      episodeWeighting: 'step',
      gamma: 0.99,
      gaeLambda: 0.95,
    }),
  /** The embedded policy's size and optimiser (`createLinearSoftmaxPolicy`). */
  policy: z
    .object({
      hashBits: z.number().int().min(8).max(26).default(18),
      historyWindow: z.number().int().nonnegative().default(2),
      learningRate: z.number().positive().default(0.05),
      /** Which features score an action (`LinearSoftmaxPolicyOptions.features`). */
      features: z.enum(['lexical', 'relational', 'lexical+relational']).default('lexical'),
    })
    .default({ hashBits: 18, historyWindow: 2, learningRate: 0.05, features: 'lexical' }),
  /** How the policy starts: from its own initial weights, or cloned from the offline trajectories. */
  warmStart: z.object({ behaviourCloning: BehaviourCloningConfigSchema.optional() }).default({}),
  /** Curriculum task generation (`enabled: false` is the "no curriculum" ablation). */
  curriculum: CurriculumConfigSchema.default(CurriculumConfigSchema.parse({})),
  /** Replay retrieval for the experience model (`enabled: false` is the "no retrieval" ablation). */
  retrieval: z
    .object({ enabled: z.boolean().default(true), k: z.number().int().positive().default(4) })
    .default({ enabled: true, k: 4 }),
  /** Interaction history given to the experience model (`enabled: false`: "no history"). */
  history: z.object({ enabled: z.boolean().default(true) }).default({ enabled: true }),
  /** Add each iteration's synthetic transitions to the replay buffer (`false`: "no replay write-back"). */
  replayWriteBack: z.boolean().default(true),
  /**
   * Reward of an action outside the domain's grammar: 0 or negative, added to the step's
   * reward (the one sign convention for penalties everywhere).
   */
  invalidActionPenalty: z.number().max(0).default(0),
  evaluation: z
    .object({
      /** Evaluate every K iterations, and always after the last one; 0: only after the last. */
      every: z.number().int().nonnegative().default(5),
      /** Where to evaluate; empty turns evaluation off. */
      environments: z.array(z.enum(['synthetic', 'real'])).default(['synthetic']),
      /** How actions are chosen: the most likely (`greedy`) and/or sampled. */
      modes: z
        .array(z.enum(['greedy', 'sampled']))
        .min(1)
        .default(['greedy']),
      episodesPerTask: z.number().int().positive().default(1),
      /**
       * Training tasks played in both the synthetic and the real environment at each
       * evaluation, to report the synthetic-to-real gap (the quantity the paper's Theorem 1
       * bounds); 0 turns it off. Needs a real environment.
       */
      gapTasks: z.number().int().nonnegative().default(0),
      /**
       * Evaluate the starting policy (after any warm start, before RL) as every later
       * evaluation is measured, into `start-evaluation.json`: the "before" of a run that
       * starts from behaviour cloning. Default false.
       */
      atStart: z.boolean().default(false),
    })
    .default({
      every: 5,
      environments: ['synthetic'],
      modes: ['greedy'],
      episodesPerTask: 1,
      gapTasks: 0,
      atStart: false,
    }),
  simToReal: z
    .object({
      /** Real transitions to spend after the synthetic phase; 0 skips sim-to-real. */
      realTransitionBudget: z.number().int().nonnegative().default(0),
      tasksPerIteration: z.number().int().positive().default(8),
      rolloutsPerTask: z.number().int().positive().default(4),
      /** Add real transitions to the replay buffer (source `real`). */
      addToBuffer: z.boolean().default(true),
    })
    .default({
      realTransitionBudget: 0,
      tasksPerIteration: 8,
      rolloutsPerTask: 4,
      addToBuffer: true,
    }),
  /**
   * Keep the policy a small real validation set prefers, so that a synthetic environment
   * that lies costs time, not quality: the starting policy, the policy every `every`
   * iterations and the last one play `realTasks` training tasks greedily in the real
   * environment, and the run ends on the best of them (the earliest on a tie). Their real
   * transitions are counted in `realTransitions` and spent from the sim-to-real budget.
   * Needs a real environment. Absent: the run ends on its last policy.
   */
  selection: z
    .object({
      /** Training tasks in the validation set (a seeded sample, the same for the whole run). */
      realTasks: z.number().int().positive(),
      /** Validate every this many iterations (and after the last). */
      every: z.number().int().positive().default(5),
    })
    .optional(),
  /** Write a checkpoint every this many iterations (1: after each). */
  checkpointEvery: z.number().int().positive().default(1),
});
export type DreamGymConfig = z.infer<typeof DreamGymConfigSchema>;
export type DreamGymConfigInput = z.input<typeof DreamGymConfigSchema>;

/** Validates a configuration; a `ConfigError` names the field and the reason. */
export function parseDreamGymConfig(input: unknown): DreamGymConfig {
  return parseOptions(DreamGymConfigSchema, input ?? {}, 'DreamGym config');
}

/** The embedded policy a configuration describes, seeded from `config.seed`. */
export function createLinearSoftmaxPolicy(
  config: Pick<DreamGymConfig, 'seed' | 'policy'>,
): LinearSoftmaxPolicy {
  return new LinearSoftmaxPolicy({
    random: new SeededRandom(config.seed).fork('policy'),
    hashBits: config.policy.hashBits,
    historyWindow: config.policy.historyWindow,
    optimizer: { learningRate: config.policy.learningRate },
    features: config.policy.features,
  });
}
