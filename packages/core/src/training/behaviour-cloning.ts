/**
 * Behaviour cloning: maximum likelihood of demonstrated actions, the warm start the paper's
 * policies get from instruction tuning. Mini-batch passes over the successful offline
 * trajectories, early stopping on the likelihood of a held-out share of the demonstrating
 * tasks, and the best epoch's weights restored at the end.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { Observation, Step, Trajectory } from '../mdp/schemas.js';
import { candidateActionsAt, type PolicySample, type TrainablePolicy } from '../policy/policy.js';
import type { SeededRandom } from '../random/seeded-random.js';
import type { BehaviourCloningConfig } from './dreamgym-config.js';

/** Options of {@link cloneBehaviour}. */
export interface BehaviourCloningOptions {
  policy: TrainablePolicy;
  /** Offline trajectories; only successful ones are imitated. */
  trajectories: readonly Trajectory[];
  /**
   * Candidate actions where a demonstrated state does not list them (the adapter's
   * `candidateActions`); the demonstrated action is always among the candidates.
   */
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[];
  config: BehaviourCloningConfig;
  random: SeededRandom;
  /** Called after each epoch (progress). */
  onEpoch?: (epoch: BehaviourCloningEpoch) => void;
  signal?: AbortSignal;
}

/** Figures of one epoch. */
export interface BehaviourCloningEpoch {
  epoch: number;
  /** Mean negative log-likelihood of the training demonstrations during the epoch. */
  trainNegativeLogLikelihood: number;
  /** Mean negative log-likelihood of the held-out demonstrations after the epoch. */
  heldOutNegativeLogLikelihood: number;
}

/** What behaviour cloning did. */
export interface BehaviourCloningResult {
  epochs: BehaviourCloningEpoch[];
  /** The epoch whose weights the policy holds now (0: none improved the held-out likelihood, so the initial weights). */
  bestEpoch: number;
  /** Held-out negative log-likelihood before cloning and at the best epoch. */
  initialHeldOutNegativeLogLikelihood: number;
  bestHeldOutNegativeLogLikelihood: number;
  trainSamples: number;
  heldOutSamples: number;
  trainTasks: number;
  heldOutTasks: number;
}

/** One sample per demonstrated step of the successful trajectories, in order. */
export function demonstrationSamples(
  trajectories: readonly Trajectory[],
  candidateActions?: (observation: Observation, history: readonly Step[]) => string[],
): PolicySample[] {
  const samples: PolicySample[] = [];
  for (const trajectory of trajectories) {
    if (!trajectory.success) continue;
    const history: Step[] = [];
    for (const step of trajectory.steps) {
      const listed = candidateActionsAt(step.observation, history, candidateActions);
      const candidates = listed.includes(step.action) ? [...listed] : [...listed, step.action];
      samples.push({
        task: trajectory.task,
        observation: step.observation,
        previousActions: history.map((previous) => previous.action),
        previousObservations: history.map((previous) => previous.observation.text),
        candidates,
        action: step.action,
      });
      history.push(step);
    }
  }
  return samples;
}

function mean(values: readonly number[]): number {
  return values.length === 0
    ? 0
    : values.reduce((total, value) => total + value, 0) / values.length;
}

/**
 * The trajectories of a seeded `share` of their tasks (all without one). The sample comes from
 * a fork of `random`, so the cloning's own draws are those of a run without it.
 */
function demonstratingShare(
  trajectories: readonly Trajectory[],
  share: number | undefined,
  random: SeededRandom,
): readonly Trajectory[] {
  if (share === undefined) return trajectories;
  const taskIds = [...new Set(trajectories.map((trajectory) => trajectory.task.id))];
  const kept = new Set(
    random
      .fork('behaviour-cloning-task-share')
      .shuffle(taskIds)
      .slice(0, Math.round(taskIds.length * share)),
  );
  return trajectories.filter((trajectory) => kept.has(trajectory.task.id));
}

/**
 * Clones the demonstrations into `options.policy`, which ends holding the weights of the
 * epoch with the best held-out likelihood.
 */
export async function cloneBehaviour(
  options: BehaviourCloningOptions,
): Promise<BehaviourCloningResult> {
  const { policy, config, random, signal } = options;
  const trajectories = demonstratingShare(
    options.trajectories
      .filter((trajectory) => trajectory.success)
      .slice(0, config.maxTrajectories ?? Number.POSITIVE_INFINITY),
    config.taskShare,
    random,
  );
  const taskIds = random.shuffle([...new Set(trajectories.map((t) => t.task.id))]);
  if (taskIds.length < 2) {
    throw new ConfigError(
      `Behaviour cloning needs successful demonstrations of at least 2 tasks (one to hold out); got ${taskIds.length}.`,
      { field: 'warmStart.behaviourCloning' },
    );
  }
  const heldOutCount = Math.min(
    taskIds.length - 1,
    Math.max(1, Math.round(taskIds.length * config.heldOutShare)),
  );
  const heldOutIds = new Set(taskIds.slice(0, heldOutCount));
  const train = demonstrationSamples(
    trajectories.filter((trajectory) => !heldOutIds.has(trajectory.task.id)),
    options.candidateActions,
  );
  const heldOut = demonstrationSamples(
    trajectories.filter((trajectory) => heldOutIds.has(trajectory.task.id)),
    options.candidateActions,
  );
  const heldOutLikelihood = async () => -mean(await policy.logprobs(heldOut, signal));

  const best = await mkdtemp(join(tmpdir(), 'dreamgym-behaviour-cloning-'));
  try {
    const initial = await heldOutLikelihood();
    await policy.saveState(best);
    let bestValue = initial;
    let bestEpoch = 0;
    const epochs: BehaviourCloningEpoch[] = [];
    for (let epoch = 1; epoch <= config.epochs; epoch += 1) {
      signal?.throwIfAborted();
      const pass = await policy.imitate(train, {
        miniBatchSize: config.miniBatchSize,
        ...(config.learningRate === undefined ? {} : { learningRate: config.learningRate }),
        random,
        ...(signal ? { signal } : {}),
      });
      const record = {
        epoch,
        trainNegativeLogLikelihood: pass.negativeLogLikelihood,
        heldOutNegativeLogLikelihood: await heldOutLikelihood(),
      };
      epochs.push(record);
      options.onEpoch?.(record);
      if (record.heldOutNegativeLogLikelihood < bestValue) {
        bestValue = record.heldOutNegativeLogLikelihood;
        bestEpoch = epoch;
        await policy.saveState(best);
      } else if (epoch - bestEpoch >= config.patience) {
        break;
      }
    }
    if (bestEpoch !== epochs.length) await policy.loadState(best);
    return {
      epochs,
      bestEpoch,
      initialHeldOutNegativeLogLikelihood: initial,
      bestHeldOutNegativeLogLikelihood: bestValue,
      trainSamples: train.length,
      heldOutSamples: heldOut.length,
      trainTasks: taskIds.length - heldOutCount,
      heldOutTasks: heldOutCount,
    };
  } finally {
    await rm(best, { recursive: true, force: true });
  }
}

/**
 * The loop's warm start: {@link cloneBehaviour} with a log line per epoch and one for the
 * epoch kept, its result written to `file` (`warm-start.json`).
 */
export async function warmStartByCloning(
  options: BehaviourCloningOptions & { log: (message: string) => void; file: string },
): Promise<BehaviourCloningResult> {
  const { log, file, ...cloning } = options;
  log('warm start: behaviour cloning on the offline trajectories...');
  const result = await cloneBehaviour({
    ...cloning,
    onEpoch: (epoch) =>
      log(
        `behaviour cloning epoch ${epoch.epoch}: train NLL ${epoch.trainNegativeLogLikelihood.toFixed(3)}, held-out NLL ${epoch.heldOutNegativeLogLikelihood.toFixed(3)}`,
      ),
  });
  log(
    `warm start: kept epoch ${result.bestEpoch}, held-out NLL ${result.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${result.bestHeldOutNegativeLogLikelihood.toFixed(3)} (${result.trainSamples} demonstrated steps)`,
  );
  await writeFileAtomic(file, `${JSON.stringify(result, null, 2)}\n`);
  return result;
}
