/**
 * `createWebshopAdapter`: the WebShop {@link DomainAdapter}.
 */
import { ConfigError, type DomainAdapter, parseOptions } from '@dreamgym/core';
import { z } from 'zod';
import { parseWebshopAction } from './action-grammar.js';
import { webshopCandidateActions } from './candidate-actions.js';
import { downloadWebshopData } from './datasets/download.js';
import { loadWebshopGoalQueryMapSync, loadWebshopItemsSync } from './datasets/goal-query-map.js';
import { readWebshopHumanGoalsSync, webshopGoalTaskLoader } from './datasets/human-goals.js';
import { webshopSessionTrajectoryLoader } from './datasets/mturk-sessions.js';
import { webshopExperienceHints } from './experience-hints.js';
import {
  buildWebshopVocabulary,
  mutateWebshopTask,
  type WebshopVocabulary,
  WebshopVocabularySchema,
} from './mutate-task.js';
import { webshopPrompts } from './prompts.js';
import {
  connectWebshopReal,
  type WebshopRealOptionsInput,
  WebshopRealOptionsSchema,
} from './real/index.js';
import {
  mapWebshopObservation,
  type WebshopParsedRawObservation,
  type WebshopRawObservation,
} from './state-mapper.js';

/** Options of {@link createWebshopAdapter}. */
export const WebshopAdapterOptionsSchema = z.object({
  /**
   * The WebShop data directory (`human_goals.json`, `goal_query_map.json`,
   * `items_ins_v2_1000.json`, `mturk_sessions/`). When set, `candidateActions` adds the
   * human queries of `goal_query_map.json` for train-split instructions, and `mutateTask`
   * builds its vocabulary from `items_ins_v2_1000.json`, each on first use.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Attribute vocabulary for `mutateTask` (build it with `buildWebshopVocabulary`). Without it
   * and without `dataDir`, `mutateTask` throws a `ConfigError` saying so.
   */
  vocabulary: WebshopVocabularySchema.optional(),
  /**
   * How a purchase is rewarded, in offline trajectories and the real environment:
   * `success` (default): 1 when it scores 1 (WebShop's success, the paper's outcome reward),
   * else 0; `score`: WebShop's purchase score in [0, 1]. The score is always in `info.score`.
   */
  reward: z.enum(['success', 'score']).default('success'),
  /** Most `search[...]` candidates proposed per synthetic state. Default 5. */
  maxQueries: z.number().int().positive().default(5),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override them
   * field by field. See `WebshopRealOptionsSchema`.
   */
  real: WebshopRealOptionsSchema.partial().optional(),
});
/** Options of {@link createWebshopAdapter}, as a caller writes them. */
export type WebshopAdapterOptions = z.input<typeof WebshopAdapterOptionsSchema>;

/** The WebShop adapter's type: server observations in, real-server options for `connectReal`. */
export type WebshopAdapter = DomainAdapter<
  WebshopRawObservation | WebshopParsedRawObservation | string,
  WebshopRealOptionsInput
>;

/**
 * Creates the WebShop adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = createWebshopAdapter({ dataDir });
 * for await (const task of adapter.datasets.tasks.load(dataDir, { splits: ['train'], limit: 1 })) { ... }
 */
export function createWebshopAdapter(options: WebshopAdapterOptions = {}): WebshopAdapter {
  const parsedOptions = parseOptions(WebshopAdapterOptionsSchema, options, 'WebShop adapter');
  const { dataDir, real, reward, maxQueries } = parsedOptions;
  let vocabulary: WebshopVocabulary | undefined = parsedOptions.vocabulary;
  let queryMap: Map<string, string[]> | undefined;
  const queries = () => {
    if (queryMap === undefined && dataDir !== undefined) {
      queryMap = loadWebshopGoalQueryMapSync(dataDir, {
        humanGoals: readWebshopHumanGoalsSync(dataDir),
        splits: ['train'],
      });
    }
    return queryMap;
  };
  return {
    name: 'webshop',
    toObservation: mapWebshopObservation,
    parseAction: parseWebshopAction,
    candidateActions: (observation, history) => {
      const map = queries();
      return webshopCandidateActions(observation, history, {
        maxQueries,
        ...(map === undefined ? {} : { queryMap: map }),
      });
    },
    datasets: {
      trajectories: webshopSessionTrajectoryLoader(reward),
      tasks: webshopGoalTaskLoader,
      download: (dir, downloadOptions) => downloadWebshopData(dir, downloadOptions),
    },
    prompts: webshopPrompts,
    // The real WebShop needs a server with the product catalogue: evaluate in the synthetic
    // environment unless one is configured. Goals 500-1499 are the evaluation split.
    defaults: {
      evaluationSplit: 'eval',
      evaluationEnvironment: (real?.url ?? process.env.DREAMGYM_WEBSHOP_URL) ? 'real' : 'synthetic',
    },
    experienceHints: webshopExperienceHints,
    mutateTask(task, random) {
      if (vocabulary === undefined && dataDir !== undefined) {
        vocabulary = buildWebshopVocabulary(loadWebshopItemsSync(dataDir).values());
      }
      if (vocabulary === undefined) {
        throw new ConfigError(
          'mutateTask needs the WebShop attribute vocabulary: createWebshopAdapter({ dataDir }) or createWebshopAdapter({ vocabulary: buildWebshopVocabulary((await loadWebshopItems(dataDir)).values()) }).',
          { field: 'vocabulary' },
        );
      }
      return mutateWebshopTask(task, random, vocabulary);
    },
    connectReal: (realOptions) => connectWebshopReal({ reward, ...real, ...realOptions }),
  };
}
