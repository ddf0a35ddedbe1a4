/**
 * The policy-gradient trainer a DreamGym configuration describes, for the loop's synthetic
 * phase or its sim-to-real phase, and the reward groups the curriculum learns task values
 * from.
 */
import type { DomainAdapter } from '../adapter.js';
import { RewardGroups, type TaskRolloutGroup } from '../curriculum/task-value.js';
import type { Environment } from '../mdp/environment.js';
import type { Observation, Step, Task } from '../mdp/schemas.js';
import type { Rollout } from '../rollout/rollout.js';
import type { DreamGymConfig } from './dreamgym-config.js';
import { GrpoTrainer } from './grpo-trainer.js';
import type { RunState } from './loop-state.js';
import type { PolicyGradientTrainer } from './policy-gradient-trainer.js';
import { PpoTrainer } from './ppo-trainer.js';

/** The trainer of one phase: the configuration's algorithm, batch shape and loss. */
export function createLoopTrainer(
  config: DreamGymConfig,
  parts: { adapter: Pick<DomainAdapter, 'candidateActions'>; seedTasks: readonly Task[] },
  state: RunState,
  phase: 'synthetic' | 'real',
  environmentFactory: () => Promise<Environment>,
): PolicyGradientTrainer {
  const { policy, valueFunction, reference, random } = state;
  const common = {
    policy,
    environmentFactory,
    tasks: parts.seedTasks,
    random,
    candidateActions: (observation: Observation, history: readonly Step[]) =>
      parts.adapter.candidateActions(observation, history),
    maxSteps: config.maxSteps,
    concurrency: phase === 'synthetic' ? config.concurrency : config.realConcurrency,
    rolloutsPerTask:
      phase === 'synthetic' ? config.rolloutsPerTask : config.simToReal.rolloutsPerTask,
    epochs: config.trainer.epochs,
    ...(config.trainer.miniBatchSize === undefined
      ? {}
      : { miniBatchSize: config.trainer.miniBatchSize }),
    ...(config.trainer.learningRate === undefined
      ? {}
      : { learningRate: config.trainer.learningRate }),
    maxGradNorm: config.trainer.maxGradNorm,
    loss: config.trainer.loss,
    ...(reference ? { referencePolicy: reference } : {}),
    // Fork credit in the synthetic phase only: real environments cannot fork.
    ...(phase === 'synthetic' && config.trainer.credit === 'fork'
      ? { credit: 'fork' as const, forks: config.trainer.forks ?? {} }
      : {}),
  };
  if (config.algorithm === 'ppo') {
    return new PpoTrainer({
      ...common,
      gamma: config.trainer.gamma,
      lambda: config.trainer.gaeLambda,
      ...(valueFunction ? { valueFunction } : {}),
    });
  }
  return new GrpoTrainer({
    ...common,
    estimator: config.algorithm === 'dr-grpo' ? 'dr-grpo' : 'grpo',
    episodeWeighting: config.trainer.episodeWeighting,
  });
}

/**
 * The outcome (success) rewards of the rollouts, grouped by task, for the curriculum's task
 * values: not policy penalties; an episode the budget cut mid-way has no outcome.
 */
export function rewardGroups(rollouts: readonly Rollout[]): TaskRolloutGroup[] {
  const groups = new RewardGroups();
  for (const rollout of rollouts) {
    if (!rollout.budgetExhausted) groups.add(rollout.task.id, rollout.success ? 1 : 0);
  }
  return groups.toJSON();
}
