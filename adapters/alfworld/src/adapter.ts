/**
 * `createAlfworldAdapter`: the ALFWorld {@link DomainAdapter}.
 */
import { ConfigError, type DomainAdapter, parseOptions } from '@dreamgym/core';
import { z } from 'zod';
import { parseAlfworldAction } from './action-grammar.js';
import { alfworldCandidateActions } from './candidate-actions.js';
import { downloadAlfworldData } from './datasets/download.js';
import { alfworldExpertTrajectoryLoader } from './datasets/expert-trajectories.js';
import { alfworldGameTaskLoader } from './datasets/game-files.js';
import { alfworldExperienceHints } from './experience-hints.js';
import { mutateAlfworldTask } from './mutate-task.js';
import { alfworldPrompts } from './prompts.js';
import {
  GenerateAlfworldExpertOptionsSchema,
  generateAlfworldExpertTrajectories,
} from './real/expert.js';
import { ExploreAlfworldOptionsSchema, exploreAlfworld } from './real/explore.js';
import {
  type AlfworldRealOptionsInput,
  AlfworldRealOptionsSchema,
  connectAlfworldReal,
} from './real/index.js';
import { type AlfworldRawObservation, mapAlfworldObservation } from './state-mapper.js';
import { AlfworldVocabularySchema, loadAlfworldVocabularySync } from './vocabulary.js';

/** Options of {@link createAlfworldAdapter}. */
export const AlfworldAdapterOptionsSchema = z.object({
  /**
   * The ALFWorld dataset directory (`expert_trajectories.jsonl`, `train/`, ...). When set,
   * `mutateTask` builds its vocabulary from the train split on first use (about a second)
   * unless `vocabulary` is given, and `connectReal` serves games from it by default.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Object and receptacle types per task type and scene, for `mutateTask`. Build it once
   * with `loadAlfworldVocabulary(dataDir)` (train data only). Without it, `mutateTask`
   * throws a `ConfigError` saying so.
   */
  vocabulary: AlfworldVocabularySchema.optional(),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override
   * them field by field. See `AlfworldRealOptionsSchema`.
   */
  real: AlfworldRealOptionsSchema.partial().optional(),
});
/** Options of {@link createAlfworldAdapter}, as a caller writes them. */
export type AlfworldAdapterOptions = z.input<typeof AlfworldAdapterOptionsSchema>;

/** The ALFWorld adapter's type: raw engine states in, real-engine options for `connectReal`. */
export type AlfworldAdapter = DomainAdapter<AlfworldRawObservation, AlfworldRealOptionsInput>;

/**
 * Creates the ALFWorld adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = createAlfworldAdapter({ vocabulary: await loadAlfworldVocabulary(dataDir) });
 * for await (const trajectory of adapter.datasets.trajectories.load(dataDir)) { ... }
 */
export function createAlfworldAdapter(options: AlfworldAdapterOptions = {}): AlfworldAdapter {
  const parsedOptions = parseOptions(AlfworldAdapterOptionsSchema, options, 'ALFWorld adapter');
  const { dataDir, real } = parsedOptions;
  let vocabulary = parsedOptions.vocabulary;
  return {
    name: 'alfworld',
    toObservation: mapAlfworldObservation,
    parseAction: parseAlfworldAction,
    candidateActions: alfworldCandidateActions,
    datasets: {
      trajectories: alfworldExpertTrajectoryLoader,
      tasks: alfworldGameTaskLoader,
      download: (dir, downloadOptions) => downloadAlfworldData(dir, downloadOptions),
    },
    prompts: alfworldPrompts,
    // The engine runs locally (it starts with the adapter): evaluate for real on valid_seen.
    defaults: { evaluationSplit: 'valid_seen', evaluationEnvironment: 'real' },
    experienceHints: alfworldExperienceHints,
    mutateTask(task, random) {
      if (vocabulary === undefined && dataDir !== undefined) {
        vocabulary = loadAlfworldVocabularySync(dataDir);
      }
      if (vocabulary === undefined) {
        throw new ConfigError(
          'mutateTask needs the ALFWorld vocabulary: createAlfworldAdapter({ dataDir }) or createAlfworldAdapter({ vocabulary: await loadAlfworldVocabulary(dataDir) }).',
          { field: 'vocabulary' },
        );
      }
      return mutateAlfworldTask(task, random, vocabulary);
    },
    connectReal: (realOptions) =>
      connectAlfworldReal({
        ...(dataDir === undefined ? {} : { dataDir }),
        ...real,
        ...realOptions,
      }),
    explore: async ({ settings, onEpisode, ...common }) => {
      const options = { ...settings, ...common, dataDir: needDataDir(dataDir, 'explore') };
      // Checked whole first: a setting this exploration does not take is refused, not dropped.
      const checked = parseOptions(
        ExploreAlfworldOptionsSchema.strict(),
        options,
        'ALFWorld exploration',
      );
      return exploreAlfworld({ ...checked, ...(onEpisode ? { onEpisode } : {}) });
    },
    generateExpertTrajectories: async ({ settings, onProgress, output, games, ...common }) => {
      const options = {
        ...settings,
        ...common,
        ...(games ? { games: [...games] } : {}),
        out: output,
        dataDir: needDataDir(dataDir, 'generateExpertTrajectories'),
      };
      const checked = parseOptions(
        GenerateAlfworldExpertOptionsSchema.strict(),
        options,
        'ALFWorld expert generation',
      );
      return generateAlfworldExpertTrajectories({
        ...checked,
        ...(onProgress ? { onProgress } : {}),
      });
    },
  };
}

/** The adapter's data folder, which `member` plays on. */
function needDataDir(dataDir: string | undefined, member: string): string {
  if (dataDir === undefined) {
    throw new ConfigError(
      `adapter.${member} plays the games of the adapter's data folder: createAlfworldAdapter({ dataDir }).`,
      { field: 'dataDir' },
    );
  }
  return dataDir;
}
