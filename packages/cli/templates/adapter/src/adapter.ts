/**
 * `create__PASCAL__Adapter`: the __TITLE__ {@link DomainAdapter}. `dreamgym train --domain
 * __NAME__` finds it by this name.
 */
import { ConfigError, type DomainAdapter, type Environment } from '@dreamgym/core';
import { z } from 'zod';
import { parse__PASCAL__Action } from './action-grammar.js';
import { __CAMEL__CandidateActions } from './candidate-actions.js';
import { __CAMEL__TaskLoader } from './datasets/tasks.js';
import { __CAMEL__TrajectoryLoader } from './datasets/trajectories.js';
import { mutate__PASCAL__Task } from './mutate-task.js';
import { __CAMEL__Prompts } from './prompts.js';
import {
  type __PASCAL__RealOptions,
  __PASCAL__RealOptionsSchema,
  connect__PASCAL__Real,
} from './real/connect.js';
import { type __PASCAL__RawObservation, map__PASCAL__Observation } from './state-mapper.js';

/** The domain name: `Task.domain` of every __TITLE__ task. */
export const __CONSTANT___DOMAIN = '__NAME__';

/** Options of {@link create__PASCAL__Adapter}. */
export const __PASCAL__AdapterOptionsSchema = z.object({
  /**
   * The __TITLE__ dataset directory (tasks and offline trajectories); `dreamgym train --data
   * DIR` passes it. `connectReal` plays its tasks from there unless told otherwise; read the
   * training split from it in `mutateTask` where new entities come from the data.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override them
   * field by field.
   */
  real: __PASCAL__RealOptionsSchema.partial().optional(),
});
/** Options of {@link create__PASCAL__Adapter}, as a caller writes them. */
export type __PASCAL__AdapterOptions = z.input<typeof __PASCAL__AdapterOptionsSchema>;

/** The __TITLE__ adapter's type. */
export type __PASCAL__Adapter = DomainAdapter<__PASCAL__RawObservation, __PASCAL__RealOptions>;

/** Validates the options; a `ConfigError` names the field. */
function parseOptions(options: unknown): z.output<typeof __PASCAL__AdapterOptionsSchema> {
  const parsed = __PASCAL__AdapterOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  throw new ConfigError(`Invalid __TITLE__ adapter option \`${field}\`: ${issue.message}`, {
    field,
    cause: parsed.error,
  });
}

/**
 * Creates the __TITLE__ adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = create__PASCAL__Adapter({ dataDir });
 * for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 3 })) console.log(task.instruction);
 */
export function create__PASCAL__Adapter(options: __PASCAL__AdapterOptions = {}): __PASCAL__Adapter {
  const { dataDir, real } = parseOptions(options);
  return {
    name: __CONSTANT___DOMAIN,
    toObservation: map__PASCAL__Observation,
    parseAction: parse__PASCAL__Action,
    candidateActions: __CAMEL__CandidateActions,
    datasets: {
      trajectories: __CAMEL__TrajectoryLoader,
      tasks: __CAMEL__TaskLoader,
    },
    prompts: __CAMEL__Prompts,
    // What `dreamgym train` uses when not told: set the split your tasks loader names for
    // evaluation, and `real` once connectReal runs without extra set-up.
    defaults: { evaluationSplit: 'test', evaluationEnvironment: 'synthetic' },
    mutateTask: mutate__PASCAL__Task,
    connectReal: (realOptions: __PASCAL__RealOptions = {}): Promise<Environment> =>
      connect__PASCAL__Real({
        ...(dataDir === undefined ? {} : { dataDir }),
        ...real,
        ...realOptions,
      }),
  };
}
