/**
 * `createMiniwobAdapter`: the MiniWoB++ {@link DomainAdapter}. `dreamgym train --domain
 * miniwob` finds it by this name.
 */
import { ConfigError, type DomainAdapter, type Environment } from '@dreamgym/core';
import { z } from 'zod';
import { parseMiniwobAction } from './action-grammar.js';
import { miniwobCandidateActions } from './candidate-actions.js';
import { miniwobTaskLoader } from './datasets/tasks.js';
import { miniwobTrajectoryLoader } from './datasets/trajectories.js';
import { mutateMiniwobTask } from './mutate-task.js';
import { miniwobPrompts } from './prompts.js';
import {
  connectMiniwobReal,
  type MiniwobRealOptions,
  MiniwobRealOptionsSchema,
} from './real/connect.js';
import { type MiniwobRawObservation, mapMiniwobObservation } from './state-mapper.js';

/** The domain name: `Task.domain` of every MiniWoB++ task. */
export const MINIWOB_DOMAIN = 'miniwob';

/** Options of {@link createMiniwobAdapter}. */
export const MiniwobAdapterOptionsSchema = z.object({
  /** The MiniWoB++ dataset directory (tasks and offline trajectories). */
  dataDir: z.string().min(1).optional(),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override them
   * field by field.
   */
  real: MiniwobRealOptionsSchema.partial().optional(),
});
/** Options of {@link createMiniwobAdapter}, as a caller writes them. */
export type MiniwobAdapterOptions = z.input<typeof MiniwobAdapterOptionsSchema>;

/** The MiniWoB++ adapter's type. */
export type MiniwobAdapter = DomainAdapter<MiniwobRawObservation, MiniwobRealOptions>;

/** Validates the options; a `ConfigError` names the field. */
function parseOptions(options: unknown): z.output<typeof MiniwobAdapterOptionsSchema> {
  const parsed = MiniwobAdapterOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  throw new ConfigError(`Invalid MiniWoB++ adapter option \`${field}\`: ${issue.message}`, {
    field,
    cause: parsed.error,
  });
}

/**
 * Creates the MiniWoB++ adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = createMiniwobAdapter({ dataDir });
 * for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 3 })) console.log(task.instruction);
 */
export function createMiniwobAdapter(options: MiniwobAdapterOptions = {}): MiniwobAdapter {
  const parsed = parseOptions(options);
  return {
    name: MINIWOB_DOMAIN,
    toObservation: mapMiniwobObservation,
    parseAction: parseMiniwobAction,
    candidateActions: miniwobCandidateActions,
    datasets: {
      trajectories: miniwobTrajectoryLoader,
      tasks: miniwobTaskLoader,
    },
    prompts: miniwobPrompts,
    // What `dreamgym train` uses when not told: set the split your tasks loader names for
    // evaluation, and `real` once connectReal runs without extra set-up.
    defaults: { evaluationSplit: 'test', evaluationEnvironment: 'synthetic' },
    mutateTask: mutateMiniwobTask,
    connectReal: (realOptions: MiniwobRealOptions = {}): Promise<Environment> =>
      connectMiniwobReal({ ...parsed.real, ...realOptions }),
  };
}
