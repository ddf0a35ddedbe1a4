/**
 * The `TrainablePolicy` contract as checks, for every policy the DreamGym loop can train
 * (the embedded `LinearSoftmaxPolicy`, `@dreamgym/llama`'s `LlmPolicy` whose steps run in a
 * torch worker, a user's own): log-probabilities are deterministic; an update moves the
 * log-probabilities of positively-advantaged actions up and of negatively-advantaged ones
 * down; behaviour cloning raises the likelihood of demonstrations; `saveState`/`loadState`
 * round-trip exactly, weights and optimiser state alike; snapshots are frozen; bad input fails
 * with the SDK's errors.
 *
 * The checks share one policy (an LLM policy takes seconds to start) and run in order.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointError, ConfigError, DreamGymError } from '../errors.js';
import type { PolicySample, TrainablePolicy } from '../policy/policy.js';
import { resolvePpoLossOptions } from '../policy/ppo-loss.js';
import { SeededRandom } from '../random/seeded-random.js';
import { type ConformanceCheck, ConformanceFailure } from './conformance.js';
import { corridorTask } from './corridor-domain.js';

/** Options of {@link trainablePolicyConformanceChecks}. */
export interface TrainablePolicyConformanceOptions {
  /** Creates the policy under test (called once; the checks share it). */
  createPolicy: () => Promise<TrainablePolicy>;
  /**
   * Decisions to train on: each state appears with at least two different actions among its
   * candidates. Default: {@link corridorConformanceSamples}.
   */
  samples?: PolicySample[];
  /** Learning rate of the update and cloning checks. Default: the policy's own. */
  learningRate?: number;
  /** Passes of the update check. Default 2. */
  epochs?: number;
  /** Releases the policy after the last check. Default: `policy.close()` when it has one. */
  closePolicy?: (policy: TrainablePolicy) => Promise<void>;
}

/**
 * Corridor decisions: at three states, each admissible action once. The update check gives
 * the first action of each state advantage +1 and the others -1.
 */
export function corridorConformanceSamples(): PolicySample[] {
  const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 3 });
  const states = [
    {
      text: 'You walk to room 1. You are in room 1. You see a key.',
      actions: ['go left', 'go right', 'take key'],
      previous: ['go right'],
    },
    {
      text: 'You walk to room 3. You are in room 3. You see a door. You carry the key.',
      actions: ['go left', 'open door'],
      previous: ['go right', 'take key', 'go right', 'go right'],
    },
    {
      text: 'You walk to room 2. You are in room 2. The room is empty. You carry the key.',
      actions: ['go left', 'go right'],
      previous: ['go right', 'take key', 'go right'],
    },
  ];
  return states.flatMap((state) =>
    state.actions.map((action) => ({
      task,
      observation: { text: state.text, actions: state.actions },
      previousActions: state.previous,
      candidates: state.actions,
      action,
    })),
  );
}

function ensure(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message);
}

async function rejectsWith(
  promise: Promise<unknown>,
  accept: (error: unknown) => boolean,
  message: string,
): Promise<void> {
  try {
    await promise;
  } catch (error) {
    ensure(accept(error), `${message}; got ${String(error)}`);
    return;
  }
  throw new ConformanceFailure(`${message}; the call succeeded`);
}

function describeValues(values: readonly number[]): string {
  return `[${values.map((value) => value.toFixed(4)).join(', ')}]`;
}

/** The contract as plain checks (run them in order). */
export function trainablePolicyConformanceChecks(
  options: TrainablePolicyConformanceOptions,
): ConformanceCheck[] {
  const samples = options.samples ?? corridorConformanceSamples();
  const epochs = options.epochs ?? 2;
  const loss = resolvePpoLossOptions();
  let created: Promise<TrainablePolicy> | undefined;
  const policy = () => {
    created ??= options.createPolicy();
    return created;
  };
  const withTemporary = async (work: (directory: string) => Promise<void>) => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-policy-conformance-'));
    try {
      await work(directory);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  };
  /** +1 for the first action of each state, -1 for the others. */
  const advantages = samples.map((sample, index) =>
    index === 0 || samples[index - 1]!.observation.text !== sample.observation.text ? 1 : -1,
  );
  const update = async (target: TrainablePolicy, seed: number) => {
    const before = await target.logprobs(samples);
    const metrics = await target.update(
      { samples, advantages, behaviourLogprobs: before },
      {
        epochs,
        loss,
        maxGradNorm: 1,
        ...(options.learningRate === undefined ? {} : { learningRate: options.learningRate }),
        random: new SeededRandom(seed),
      },
    );
    return { before, metrics, after: await target.logprobs(samples) };
  };

  return [
    {
      name: 'logprobs: one finite log-probability (<= 0) per sample, the same on every call',
      async run() {
        const target = await policy();
        const first = await target.logprobs(samples);
        ensure(
          first.length === samples.length,
          `expected ${samples.length} log-probabilities, got ${first.length}`,
        );
        for (const value of first)
          ensure(
            Number.isFinite(value) && value <= 1e-6,
            `log-probability ${value} is not finite and <= 0`,
          );
        const second = await target.logprobs(samples);
        ensure(
          second.every((value, index) => value === first[index]),
          `log-probabilities changed between calls: ${describeValues(first)} then ${describeValues(second)}`,
        );
        ensure((await target.logprobs([])).length === 0, 'logprobs([]) must be empty');
      },
    },
    {
      name: 'update: log-probabilities of positive advantages go up, of negative ones down',
      async run() {
        const target = await policy();
        const { before, metrics, after } = await update(target, 7);
        ensure(
          metrics.gradientSteps >= epochs,
          `expected at least ${epochs} gradient steps, got ${metrics.gradientSteps}`,
        );
        for (const key of [
          'loss',
          'policyLoss',
          'kl',
          'entropy',
          'clipFraction',
          'gradNorm',
        ] as const) {
          ensure(Number.isFinite(metrics[key]), `metric ${key} is ${metrics[key]}`);
        }
        ensure(
          metrics.behaviourMismatch < 1e-3,
          `behaviourMismatch is ${metrics.behaviourMismatch} although the behaviour log-probabilities were the policy's own`,
        );
        samples.forEach((sample, index) => {
          const moved = after[index]! - before[index]!;
          ensure(
            advantages[index]! > 0 ? moved > 0 : moved < 0,
            `"${sample.action}" at "${sample.observation.text}" (advantage ${advantages[index]}) moved by ${moved.toFixed(5)}: before ${describeValues(before)}, after ${describeValues(after)}`,
          );
        });
      },
    },
    {
      name: 'update: mismatched batch lengths are a ConfigError',
      async run() {
        const target = await policy();
        await rejectsWith(
          target.update(
            { samples, advantages: [1], behaviourLogprobs: samples.map(() => 0) },
            { epochs: 1, loss, random: new SeededRandom(1) },
          ),
          (error) => ConfigError.isInstance(error),
          'update() with one advantage for many samples must throw a ConfigError',
        );
      },
    },
    {
      name: 'imitate: the demonstrated actions become more likely',
      async run() {
        const target = await policy();
        const demonstrations = samples.filter((_, index) => advantages[index]! < 0);
        const before = await target.logprobs(demonstrations);
        const result = await target.imitate(demonstrations, {
          maxGradNorm: 1,
          ...(options.learningRate === undefined ? {} : { learningRate: options.learningRate }),
          random: new SeededRandom(3),
        });
        ensure(result.gradientSteps >= 1, `imitate took ${result.gradientSteps} gradient steps`);
        ensure(
          Math.abs(
            result.negativeLogLikelihood + before.reduce((a, b) => a + b, 0) / before.length,
          ) < 1e-3,
          `imitate's negativeLogLikelihood ${result.negativeLogLikelihood} is not the mean NLL before its step (${describeValues(before)})`,
        );
        const after = await target.logprobs(demonstrations);
        const gain = after.reduce((a, b) => a + b, 0) - before.reduce((a, b) => a + b, 0);
        ensure(
          gain > 0,
          `demonstrations' log-likelihood fell by ${-gain}: ${describeValues(before)} -> ${describeValues(after)}`,
        );
      },
    },
    {
      name: 'saveState/loadState round-trip weights and optimiser state exactly',
      async run() {
        const target = await policy();
        await withTemporary(async (directory) => {
          const saved = join(directory, 'saved');
          await target.saveState(saved);
          const atSave = await target.logprobs(samples);
          const continued = await update(target, 11);
          await target.loadState(saved);
          const restored = await target.logprobs(samples);
          ensure(
            restored.every((value, index) => value === atSave[index]),
            `after loadState the log-probabilities differ from the saved ones: ${describeValues(atSave)} vs ${describeValues(restored)}`,
          );
          const replayed = await update(target, 11);
          ensure(
            replayed.after.every((value, index) => value === continued.after[index]),
            `the same update from the restored state gives other log-probabilities (optimiser state not restored): ${describeValues(continued.after)} vs ${describeValues(replayed.after)}`,
          );
        });
      },
    },
    {
      name: 'snapshot: frozen, scored like the policy when taken, saved and loaded exactly',
      async run() {
        const target = await policy();
        const snapshot = await target.snapshot();
        try {
          const atSnapshot = await target.logprobs(samples);
          const frozen = await snapshot.logprobs(samples);
          ensure(
            frozen.every((value, index) => Math.abs(value - atSnapshot[index]!) < 1e-6),
            `the snapshot scores ${describeValues(frozen)}, the policy ${describeValues(atSnapshot)}`,
          );
          await update(target, 13);
          const later = await snapshot.logprobs(samples);
          ensure(
            later.every((value, index) => value === frozen[index]),
            `the snapshot changed when the policy was updated: ${describeValues(frozen)} -> ${describeValues(later)}`,
          );
          await rejectsWith(
            snapshot.update(
              { samples, advantages, behaviourLogprobs: frozen },
              { epochs: 1, loss, random: new SeededRandom(1) },
            ),
            (error) => DreamGymError.isInstance(error),
            'a snapshot must refuse update() with a DreamGymError',
          );
          await withTemporary(async (directory) => {
            await snapshot.saveState(join(directory, 'snapshot'));
            const copy = await target.snapshot();
            try {
              await copy.loadState(join(directory, 'snapshot'));
              const loaded = await copy.logprobs(samples);
              ensure(
                loaded.every((value, index) => value === frozen[index]),
                `a snapshot loaded from disk scores ${describeValues(loaded)}, the saved one ${describeValues(frozen)}`,
              );
            } finally {
              await copy.close?.();
            }
          });
        } finally {
          await snapshot.close?.();
        }
      },
    },
    {
      name: 'loadState of a missing or corrupt folder is a CheckpointError, and the policy still works',
      async run() {
        const target = await policy();
        const before = await target.logprobs(samples);
        await withTemporary(async (directory) => {
          await rejectsWith(
            target.loadState(join(directory, 'nothing-here')),
            (error) => CheckpointError.isInstance(error),
            'loadState of a missing folder must throw a CheckpointError',
          );
          const corrupt = join(directory, 'corrupt');
          await target.saveState(corrupt);
          for (const file of await readdir(corrupt))
            await writeFile(join(corrupt, file), 'garbage');
          await rejectsWith(
            target.loadState(corrupt),
            (error) => CheckpointError.isInstance(error),
            'loadState of a corrupt folder must throw a CheckpointError',
          );
        });
        const after = await target.logprobs(samples);
        ensure(
          after.every((value, index) => value === before[index]),
          'a failed loadState changed the weights',
        );
        if (options.closePolicy) await options.closePolicy(target);
        else await target.close?.();
      },
    },
  ];
}
