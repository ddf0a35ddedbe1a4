/**
 * `createWebarenaLiteAdapter`: the WebArena-Lite {@link DomainAdapter}.
 */
import {
  type BrowserEnvironment,
  parseWebActionText,
  webCandidateActions,
} from '@dreamgym/browser';
import { ConfigError, type DomainAdapter, parseOptions } from '@dreamgym/core';
import type { ChatModel } from '@dreamgym/core/models';
import { z } from 'zod';
import { WebarenaSitesSchema } from './config/sites.js';
import { downloadWebarenaLiteData } from './datasets/download.js';
import { webarenaTaskLoader } from './datasets/task-configs.js';
import { webarenaTrajectoryLoader } from './datasets/trajectories.js';
import {
  loadWebarenaTemplateVocabularySync,
  mutateWebarenaTask,
  type WebarenaTemplateVocabulary,
} from './mutate-task.js';
import { webarenaLitePrompts } from './prompts.js';
import { connectWebarenaLiteReal } from './real/connect.js';
import { WebarenaRealOptionsSchema, type WebarenaRealSetup } from './real/options.js';
import { mapWebarenaObservation, type WebarenaRawObservation } from './state-mapper.js';

/** Options of {@link createWebarenaLiteAdapter}. */
export const WebarenaLiteAdapterOptionsSchema = z.object({
  /**
   * The WebArena-Lite data directory (`test_webarena_lite.raw.json`; WebArena's
   * `test.raw.json` or `config_files/` also work). `mutateTask` reads its intent templates
   * from it on first use.
   */
  dataDir: z.string().min(1).optional(),
  /**
   * Base URLs of the deployed sites. The task loader resolves the configs' site placeholders
   * (`__SHOPPING__`...) with them, and `connectReal` opens the sites there.
   */
  sites: WebarenaSitesSchema.optional(),
  /**
   * Defaults for `connectReal`: the options given to `connectReal(options)` override them
   * field by field. See `WebarenaRealOptionsSchema`.
   */
  real: WebarenaRealOptionsSchema.partial().optional(),
});
/** Options of {@link createWebarenaLiteAdapter}, as a caller writes them. */
export type WebarenaLiteAdapterOptions = z.input<typeof WebarenaLiteAdapterOptionsSchema> & {
  /** LLM judge of `fuzzy_match` checks in real episodes; without it they are reported as not evaluated. */
  judge?: ChatModel;
};

/** The WebArena-Lite adapter's type: mapped page text in, real-site options for `connectReal`. */
export type WebarenaLiteAdapter = DomainAdapter<WebarenaRawObservation, WebarenaRealSetup> & {
  connectReal(options?: WebarenaRealSetup): Promise<BrowserEnvironment>;
};

/**
 * Creates the WebArena-Lite adapter.
 *
 * @throws ConfigError naming the field when `options` are invalid.
 * @example
 * const adapter = createWebarenaLiteAdapter({ dataDir, sites: { shopping: 'http://127.0.0.1:7770' } });
 * for await (const task of adapter.datasets.tasks.load(dataDir, { limit: 3 })) console.log(task.instruction);
 * adapter.parseAction('type [13] [red shoes] [1]'); // { type: 'type', args: ['13', 'red shoes', '1'], ... }
 */
export function createWebarenaLiteAdapter(
  options: WebarenaLiteAdapterOptions = {},
): WebarenaLiteAdapter {
  const { judge, ...data } = options;
  const parsed = parseOptions(WebarenaLiteAdapterOptionsSchema, data, 'WebArena-Lite');
  const sites = parsed.sites ?? {};
  let vocabulary: WebarenaTemplateVocabulary | undefined;
  return {
    name: 'webarena-lite',
    toObservation: mapWebarenaObservation,
    parseAction: parseWebActionText,
    candidateActions: (observation, history) => webCandidateActions(observation, history),
    datasets: {
      trajectories: webarenaTrajectoryLoader,
      tasks: webarenaTaskLoader(sites),
      download: (dir, downloadOptions) => downloadWebarenaLiteData(dir, downloadOptions),
    },
    prompts: webarenaLitePrompts,
    mutateTask(task, random) {
      if (vocabulary === undefined) {
        if (parsed.dataDir === undefined) {
          throw new ConfigError(
            'mutateTask needs the intent templates of the configs: createWebarenaLiteAdapter({ dataDir }).',
            { field: 'dataDir' },
          );
        }
        vocabulary = loadWebarenaTemplateVocabularySync(parsed.dataDir);
      }
      return mutateWebarenaTask(task, random, vocabulary);
    },
    connectReal: (realOptions = {}) =>
      connectWebarenaLiteReal({
        ...parsed.real,
        ...realOptions,
        sites: { ...sites, ...parsed.real?.sites, ...realOptions.sites },
        ...(judge && !realOptions.judge ? { judge } : {}),
      }),
  };
}
