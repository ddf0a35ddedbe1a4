/**
 * `createMiniwobAdapter`: the MiniWoB++ {@link DomainAdapter}. `dreamgym train --domain
 * miniwob` finds it by this name.
 */
import { type DomainAdapter, parseOptions } from '@dreamgym/core';
import { z } from 'zod';
import { parseMiniwobAction } from './action-grammar.js';
import { miniwobCandidateActions } from './candidate-actions.js';
import { buildMiniwobDataset } from './datasets/build-dataset.js';
import { MINIWOB_DOMAIN, miniwobTaskLoader } from './datasets/tasks.js';
import { miniwobTrajectoryLoader } from './datasets/trajectories.js';
import {
  loadMiniwobVocabularySync,
  type MiniwobVocabulary,
  mutateMiniwobTask,
} from './mutate-task.js';
import { miniwobPrompts } from './prompts.js';
import {
  connectMiniwobReal,
  type MiniwobEnvironment,
  MiniwobRealOptionsSchema,
  type MiniwobRealSetup,
} from './real/connect.js';
import { type MiniwobRawObservation, mapMiniwobObservation } from './state-mapper.js';

/** Options of {@link createMiniwobAdapter}. */
export const MiniwobAdapterOptionsSchema = z.object({
  /**
   * The MiniWoB++ dataset directory (`tasks.jsonl`, `trajectories/*.jsonl`). `mutateTask`
   * reads the quoted texts of its training tasks from it on first use.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override them
   * field by field. See `MiniwobRealOptionsSchema`.
   */
  real: MiniwobRealOptionsSchema.partial().optional(),
});
/** Options of {@link createMiniwobAdapter}, as a caller writes them. */
export type MiniwobAdapterOptions = z.input<typeof MiniwobAdapterOptionsSchema>;

/** The MiniWoB++ adapter's type: browser observations in, real-environment set-up for `connectReal`. */
export type MiniwobAdapter = DomainAdapter<MiniwobRawObservation, MiniwobRealSetup> & {
  connectReal(options?: MiniwobRealSetup): Promise<MiniwobEnvironment>;
};

/** Validates the options; a `ConfigError` names the field. */
function parseAdapterOptions(options: unknown): z.output<typeof MiniwobAdapterOptionsSchema> {
  return parseOptions(MiniwobAdapterOptionsSchema, options, 'MiniWoB++ adapter');
}

/**
 * Creates the MiniWoB++ adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = createMiniwobAdapter({ dataDir });
 * for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 3 })) console.log(task.instruction);
 * adapter.parseAction("click [3] # button 'Ok'"); // { type: 'click', args: ['3'], webAction: 'click [3]', ... }
 */
export function createMiniwobAdapter(options: MiniwobAdapterOptions = {}): MiniwobAdapter {
  const parsed = parseAdapterOptions(options);
  let vocabulary: MiniwobVocabulary | undefined;
  return {
    name: MINIWOB_DOMAIN,
    toObservation: mapMiniwobObservation,
    parseAction: parseMiniwobAction,
    candidateActions: miniwobCandidateActions,
    datasets: {
      trajectories: miniwobTrajectoryLoader,
      tasks: miniwobTaskLoader,
      // Nothing to fetch: the pages come with the `miniwob` PyPI package; the data is
      // recorded on them.
      download: async (dir) => {
        await buildMiniwobDataset({ dir });
      },
    },
    prompts: miniwobPrompts,
    // The real environment runs here (Chromium and the miniwob package): evaluate on it.
    defaults: { evaluationSplit: 'eval', evaluationEnvironment: 'real' },
    mutateTask(task, random) {
      if (vocabulary === undefined && parsed.dataDir !== undefined) {
        vocabulary = loadMiniwobVocabularySync(parsed.dataDir);
      }
      return mutateMiniwobTask(task, random, vocabulary);
    },
    connectReal: (realOptions: MiniwobRealSetup = {}) =>
      connectMiniwobReal({ ...parsed.real, ...realOptions }),
  };
}
