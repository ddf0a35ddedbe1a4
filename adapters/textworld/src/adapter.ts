/**
 * `createTextworldAdapter`: the TextWorld {@link DomainAdapter}. `dreamgym train --domain
 * textworld` finds it by this name.
 */
import { ConfigError, type DomainAdapter, parseOptions } from '@dreamgym/core';
import { z } from 'zod';
import { parseTextworldAction } from './action-grammar.js';
import { textworldCandidateActions } from './candidate-actions.js';
import { buildTextworldDataset } from './datasets/build-dataset.js';
import { TEXTWORLD_DOMAIN, textworldTaskLoader } from './datasets/tasks.js';
import { textworldTrajectoryLoader } from './datasets/trajectories.js';
import { textworldExperienceHints } from './experience-hints.js';
import { textworldGoalCheck } from './goal-check.js';
import { mutateTextworldTask } from './mutate-task.js';
import { textworldPrompts } from './prompts.js';
import { connectTextworldReal } from './real/connect.js';
import { ExploreTextworldOptionsSchema, exploreTextworld } from './real/explore.js';
import { type TextworldRealOptionsInput, TextworldRealOptionsSchema } from './real/options.js';
import type { TextworldRealEnvironment } from './real/textworld-real-environment.js';
import { mapTextworldObservation, type TextworldRawObservation } from './state-mapper.js';

/** Options of {@link createTextworldAdapter}. */
export const TextworldAdapterOptionsSchema = z.object({
  /**
   * The TextWorld data directory (`games/`, `tasks.jsonl`, `expert_trajectories.jsonl`, made
   * by `buildTextworldDataset`). `connectReal` plays its games by default.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override them
   * field by field. See `TextworldRealOptionsSchema`.
   */
  real: TextworldRealOptionsSchema.partial().optional(),
});
/** Options of {@link createTextworldAdapter}, as a caller writes them. */
export type TextworldAdapterOptions = z.input<typeof TextworldAdapterOptionsSchema>;

/** The TextWorld adapter's type: engine answers in, real-engine options for `connectReal`. */
export type TextworldAdapter = DomainAdapter<
  TextworldRawObservation | string,
  TextworldRealOptionsInput
> & {
  connectReal(options?: TextworldRealOptionsInput): Promise<TextworldRealEnvironment>;
};

/**
 * Creates the TextWorld adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = createTextworldAdapter({ dataDir });
 * for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 3 })) console.log(task.instruction);
 */
export function createTextworldAdapter(options: TextworldAdapterOptions = {}): TextworldAdapter {
  const { dataDir, real } = parseOptions(
    TextworldAdapterOptionsSchema,
    options,
    'TextWorld adapter',
  );
  return {
    name: TEXTWORLD_DOMAIN,
    toObservation: mapTextworldObservation,
    parseAction: parseTextworldAction,
    candidateActions: textworldCandidateActions,
    datasets: {
      trajectories: textworldTrajectoryLoader,
      tasks: textworldTaskLoader,
      // Nothing to fetch: TextWorld generates its games (with the Inform 7 compiler its wheel
      // ships); the default sizes, from fixed seeds.
      download: async (dir, downloadOptions) => {
        await buildTextworldDataset({
          dir,
          ...(downloadOptions?.signal ? { signal: downloadOptions.signal } : {}),
        });
      },
    },
    prompts: textworldPrompts,
    // The engine runs locally (the adapter starts it): evaluate for real on the valid games.
    defaults: { evaluationSplit: 'valid', evaluationEnvironment: 'real' },
    experienceHints: textworldExperienceHints,
    goalCheck: textworldGoalCheck,
    mutateTask: mutateTextworldTask,
    connectReal: (realOptions: TextworldRealOptionsInput = {}) =>
      connectTextworldReal({
        ...(dataDir === undefined ? {} : { dataDir }),
        ...real,
        ...realOptions,
      }),
    explore: async ({ settings, onEpisode, ...common }) => {
      if (dataDir === undefined) {
        throw new ConfigError(
          "adapter.explore plays the training games of the adapter's data folder: createTextworldAdapter({ dataDir }).",
          { field: 'dataDir' },
        );
      }
      const options = { ...settings, ...common, dataDir };
      // Checked whole first: a setting this exploration does not take is refused, not dropped.
      const checked = parseOptions(
        ExploreTextworldOptionsSchema.strict(),
        options,
        'TextWorld exploration',
      );
      return exploreTextworld({ ...checked, ...(onEpisode ? { onEpisode } : {}) });
    },
  };
}
