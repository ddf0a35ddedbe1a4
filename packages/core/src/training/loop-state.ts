/**
 * What one DreamGym run carries from iteration to iteration (`RunState`), and how it is kept
 * in and restored from a checkpoint: the counters (iterations, transitions, log lengths, RNG
 * state, configuration hash), the policy, the value function, the KL reference and the
 * curriculum.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { Curriculum } from '../curriculum/curriculum.js';
import { CheckpointError } from '../errors.js';
import type { TrainablePolicy } from '../policy/policy.js';
import type { SeededRandom } from '../random/seeded-random.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';
import type { EnvironmentPool } from '../rollout/environment-pool.js';
import type { CheckpointFolders, LoadedCheckpoint } from './checkpoint-store.js';
import { replayExperience } from './experience-log.js';
import { LinearValueFunction, type LinearValueFunctionState } from './linear-value-function.js';
import type { IterationMetrics } from './metrics.js';
import { LedgerCountersSchema, RunLedger } from './run-ledger.js';

/** The loop's counters: every run's (`RunLedger`), its phase and the lines of `metrics.jsonl`. */
export const CountersSchema = LedgerCountersSchema.extend({
  phase: z.enum(['synthetic', 'real']),
  metricsLines: z.number().int().nonnegative(),
  /** Synthetic steps played by forked continuations (`trainer.credit: 'fork'`), beside `syntheticTransitions`. */
  forkTransitions: z.number().int().nonnegative().default(0),
});
export type Counters = z.infer<typeof CountersSchema>;

/** Everything one `run` works with. */
export interface RunState {
  /** The run folder: counters, logs, checkpoints (`counters` and `random` are its). */
  ledger: RunLedger<Counters>;
  counters: Counters;
  random: SeededRandom;
  policy: TrainablePolicy;
  valueFunction: LinearValueFunction | undefined;
  /** The frozen KL reference (the policy when RL started), when the loss has a KL term. */
  reference: TrainablePolicy | undefined;
  curriculum: Curriculum;
  metrics: IterationMetrics[];
  synthetic: EnvironmentPool;
  real: EnvironmentPool | undefined;
  /** Planned iterations, for progress. */
  totalIterations: number;
}

function bytesOf(array: Float32Array): Uint8Array {
  return new Uint8Array(array.buffer.slice(array.byteOffset, array.byteOffset + array.byteLength));
}

function floatsOf(bytes: Uint8Array): Float32Array {
  return new Float32Array(Uint8Array.from(bytes).buffer);
}

/** The value function a checkpoint holds (PPO runs). */
export function valueFunctionFromCheckpoint(
  checkpoint: LoadedCheckpoint,
  runDirectory: string,
): LinearValueFunction {
  const header =
    checkpoint.json<Omit<LinearValueFunctionState, 'weights' | 'adamM' | 'adamV'>>('value-header');
  if (header.prediction !== 'mean') {
    // Weights fitted as a sum over a state's features mean something else averaged.
    throw new CheckpointError(
      `Checkpoint ${checkpoint.name} in ${runDirectory} holds a PPO critic that sums its feature weights; this version averages them. Start a new --run-dir.`,
      { path: runDirectory },
    );
  }
  return LinearValueFunction.fromState({
    ...header,
    weights: floatsOf(checkpoint.bytes('value-weights')),
    adamM: floatsOf(checkpoint.bytes('value-adam-m')),
    adamV: floatsOf(checkpoint.bytes('value-adam-v')),
  });
}

/** A folder part of a checkpoint, or an error saying the checkpoint is of another version. */
export function checkpointFolder(
  checkpoint: LoadedCheckpoint,
  part: string,
  runDirectory: string,
): string {
  const folder = checkpoint.folder(part);
  if (!folder) {
    throw new CheckpointError(
      `Checkpoint ${checkpoint.name} in ${runDirectory} has no ${part} folder; it was written by another version. Start a new --run-dir.`,
      { path: runDirectory },
    );
  }
  return folder;
}

/**
 * Saves the run's state as the checkpoint of its current iteration (`name` overrides its
 * name), with `extra` parts and part folders (the checkpoint selection's).
 */
export async function saveRunCheckpoint(
  state: RunState,
  extra: { parts: Record<string, unknown>; folders: CheckpointFolders } = {
    parts: {},
    folders: {},
  },
  name?: string,
): Promise<void> {
  const { ledger, policy, valueFunction, reference, curriculum } = state;
  const parts: Record<string, unknown> = { curriculum: curriculum.toJSON(), ...extra.parts };
  if (valueFunction) {
    const { weights, adamM, adamV, ...header } = valueFunction.exportState();
    Object.assign(parts, {
      'value-header': header,
      'value-weights': bytesOf(weights),
      'value-adam-m': bytesOf(adamM),
      'value-adam-v': bytesOf(adamV),
    });
  }
  await ledger.save(
    parts,
    {
      policy: (folder) => policy.saveState(folder),
      ...(reference ? { reference: (folder: string) => reference.saveState(folder) } : {}),
      ...extra.folders,
    },
    name,
  );
}

/**
 * Restores `policy` (built with the run's configuration) from a run's latest checkpoint, for
 * `dreamgym eval`; returns the checkpoint's name. With `options.replayBuffer` (holding the
 * run's offline transitions), also re-adds the experience the run had added to its buffer up
 * to that checkpoint, so a synthetic environment retrieves from what the run's did; resolves
 * `experienceTransitions` to how many were re-added (0 without a buffer).
 */
export async function loadRunPolicy(
  runDirectory: string,
  policy: TrainablePolicy,
  options: { replayBuffer?: ReplayBuffer } = {},
): Promise<{ checkpoint: string; experienceTransitions: number }> {
  const checkpoint = await RunLedger.store(runDirectory).load();
  if (!checkpoint) {
    throw new CheckpointError(
      `${runDirectory} holds no checkpoint. Pass the --run-dir of a \`dreamgym train\` run that finished at least one iteration.`,
      { path: runDirectory },
    );
  }
  await policy.loadState(checkpointFolder(checkpoint, 'policy', runDirectory));
  let experienceTransitions = 0;
  if (options.replayBuffer) {
    const { experienceLines } = CountersSchema.parse(checkpoint.json('counters'));
    if (experienceLines > 0)
      experienceTransitions = await replayExperience(
        join(runDirectory, 'experience.jsonl'),
        options.replayBuffer,
        experienceLines,
      );
  }
  return { checkpoint: checkpoint.name, experienceTransitions };
}
