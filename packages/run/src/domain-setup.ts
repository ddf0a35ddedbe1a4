/**
 * Everything a DreamGym run of one domain needs, from a dataset directory: the adapter,
 * seed and evaluation tasks, the replay buffer seeded with offline trajectories, the
 * embedded experience model (built by `createExperienceModel`, judged by default), and the
 * real environment.
 */

import { existsSync } from 'node:fs';
import {
  ConfigError,
  DatasetNotFoundError,
  type DomainAdapter,
  type EmbeddingModel,
  type Environment,
  type ExperienceModel,
  HashingEmbedder,
  parseOptions,
  ReplayBuffer,
  readJsonl,
  type Task,
  type Trajectory,
  TrajectorySchema,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { z } from 'zod';
import { loadDomainAdapter } from './domains.js';
import { type ExperienceGrounding, embeddedExperienceModel } from './experience-model.js';
import { ensureExplorationData } from './exploration-cache.js';

/** What to load; `dreamgym train` fills it from its flags and config file. */
export const DomainSetupOptionsSchema = z.object({
  /** Domain name (`alfworld`, `webshop`...): the adapter package is `@dreamgym/<domain>`. */
  domain: z.string().min(1),
  /** The domain's dataset directory. */
  data: z.string().min(1),
  /** Adapter package to use instead of `@dreamgym/<domain>`. */
  adapterPackage: z.string().min(1).optional(),
  /** Seed tasks: the first N training tasks (default all). */
  trainTasks: z.number().int().positive().optional(),
  /** Split of the evaluation tasks (default: the adapter's, e.g. `valid_seen` for ALFWorld). */
  evalSplit: z.string().min(1).optional(),
  /** Evaluation tasks: the first N of the split (default all). */
  evalTasks: z.number().int().positive().optional(),
  /** Extra offline trajectories (JSONL of core Trajectory records), e.g. from `dreamgym data explore`. */
  offline: z.array(z.string().min(1)).default([]),
  /**
   * Exploration episodes on the domain's real environment added to the offline data (random
   * and perturbed-expert play, successes and failures, as the paper builds its offline data):
   * made once by the adapter's `explore<Domain>` and cached (`ensureExplorationData`), so a
   * second run with the same settings reads the file.
   */
  exploration: z
    .object({
      /** Episodes to play. */
      episodes: z.number().int().positive(),
      /** Seed of the exploration policies and of the game order. Default 0. */
      seed: z.number().int().default(0),
      /** Step limit per episode. Default 30. */
      maxSteps: z.number().int().positive().default(30),
      /** Share of uniformly random episodes; the others replay perturbed expert play. Default 0.5. */
      randomShare: z.number().min(0).max(1).default(0.5),
      /** Real environments played at once. Default 2. */
      concurrency: z.number().int().positive().default(2),
    })
    .optional(),
  /** Offline trajectories from the dataset: the first N (default all). */
  offlineLimit: z.number().int().positive().optional(),
  /**
   * Load the valid tasks and trajectories and skip invalid ones (each logged with its file,
   * line and id) instead of stopping at them, where the adapter's loaders validate record by
   * record. Default false.
   */
  skipInvalid: z.boolean().optional(),
  /**
   * Most transitions the replay buffer keeps: past it the oldest synthetic and real ones are
   * evicted first-in first-out (the offline seeds never are). Default unbounded.
   */
  bufferCapacity: z.number().int().positive().optional(),
  /** Vector index of the replay buffer; `auto`: flat below 20 000 transitions, HNSW above. */
  index: z.enum(['auto', 'flat', 'hnsw']).default('auto'),
  /**
   * Recall@8 an HNSW index is tuned to: its search depth and graph degree are chosen by
   * measurement on the searches it serves, as `dreamgym buffer build` does. Default 0.95
   * (on ALFWorld's offline transitions: degree 16, depth 16, recall@8 0.98, searches 0.4x
   * the time of the fixed degree 32, depth 128).
   */
  targetRecall: z.number().gt(0).max(1).default(0.95),
  /** Dimension of the hashing embedder. */
  embeddingDimension: z.number().int().min(16).max(4096).default(256),
  /**
   * Judge every synthetic step's outcome (does it end the episode, is the task done) with an
   * `OutcomeJudge` learned from the offline trajectories' successes and failures, instead of
   * the retrieved neighbours' votes, whichever experience model a command builds (embedded,
   * LLM or hybrid). Default true; `false` is the model's own outcome (the neighbours' vote).
   */
  outcomeJudge: z.boolean().default(true),
  /**
   * Answer an action on one entity (`go to shelf 1`) in a task's own world as that world's
   * offline episodes saw it (`WorldMemory`), before neighbours from other worlds are asked.
   * Default true.
   */
  worldMemory: z.boolean().default(true),
});
export type DomainSetupOptions = z.input<typeof DomainSetupOptionsSchema>;

export interface DomainSetup {
  adapter: DomainAdapter;
  seedTasks: Task[];
  evaluationTasks: Task[];
  /** The split the evaluation tasks come from. */
  evaluationSplit: string;
  /** The replay buffer holding the offline transitions only. */
  replayBuffer: ReplayBuffer;
  /**
   * The embedded experience model (`createExperienceModel(experienceGrounding, { kind:
   * 'embedded' })`): retrieval, its outcomes judged by the outcome judge learned from the
   * offline trajectories unless `outcomeJudge: false` switched it off.
   */
  experienceModel: ExperienceModel;
  /**
   * What the domain's experience models are grounded in (retrieval, the outcome judge), for
   * `createExperienceModel` to build an LLM or hybrid model on; its parts cannot be served alone.
   */
  experienceGrounding: ExperienceGrounding;
  /**
   * Connects the real environment. `reader.countTokens` is the tokenizer of the model that
   * reads its observations (the LLM policy's): adapters that budget observations
   * (`maxObservationTokens`, the browser domains) count in it; without it they use a
   * conservative estimate, and adapters without a budget ignore it.
   */
  realEnvironment: (reader?: ObservationReader) => Promise<Environment>;
  /** Offline transitions in the buffer. */
  offlineTransitions: number;
  /** The offline trajectories the buffer was seeded with (behaviour cloning imitates them). */
  offlineTrajectories: Trajectory[];
}

/** Who reads a real environment's observations. */
export interface ObservationReader {
  /** Tokens of a text in the reading model's tokenizer. */
  countTokens?: (text: string) => number;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const result: T[] = [];
  for await (const item of items) result.push(item);
  return result;
}

/**
 * Loads a domain for training or evaluation; errors say which flag to fix. `parts.embedder`
 * replaces the replay buffer's hashing embedder (`--embedder openai`).
 */
export async function setUpDomain(
  input: DomainSetupOptions,
  log: (message: string) => void = () => {},
  parts: { embedder?: EmbeddingModel } = {},
): Promise<DomainSetup> {
  const options = parseOptions(DomainSetupOptionsSchema, input, 'domain set-up');
  if (!existsSync(options.data)) {
    throw new DatasetNotFoundError(
      `The ${options.domain} dataset directory ${options.data} does not exist. Pass --data DIR (or set DREAMGYM_DATA_DIR to the folder holding ${options.domain}/).`,
      { path: options.data },
    );
  }
  const adapter = await loadDomainAdapter(
    options.domain,
    { dataDir: options.data },
    options.adapterPackage,
  );
  const lenient = options.skipInvalid
    ? {
        skipInvalid: true,
        onInvalid: (error: Error) => log(`skipped an invalid record: ${error.message}`),
      }
    : {};
  const seedTasks = await collect(
    adapter.datasets.tasks.load(options.data, {
      ...lenient,
      splits: ['train'],
      ...(options.trainTasks === undefined ? {} : { limit: options.trainTasks }),
    }),
  );
  const evaluationSplit = options.evalSplit ?? adapter.defaults?.evaluationSplit;
  if (evaluationSplit === undefined) {
    throw new ConfigError(
      `The ${options.domain} adapter names no default evaluation split: pass --eval-split NAME.`,
      { field: 'evalSplit' },
    );
  }
  const evaluationTasks = await collect(
    adapter.datasets.tasks.load(options.data, {
      ...lenient,
      splits: [evaluationSplit],
      ...(options.evalTasks === undefined ? {} : { limit: options.evalTasks }),
    }),
  );
  const trajectories: Trajectory[] = await collect(
    adapter.datasets.trajectories.load(options.data, {
      ...lenient,
      ...(options.offlineLimit === undefined ? {} : { limit: options.offlineLimit }),
    }),
  );
  const offlineFiles = [...options.offline];
  if (options.exploration) {
    const explored = await ensureExplorationData({
      domain: options.domain,
      dataDir: options.data,
      ...options.exploration,
      log,
    });
    offlineFiles.push(explored.path);
  }
  for (const file of offlineFiles)
    trajectories.push(...(await collect(readJsonl(file, TrajectorySchema))));
  const transitions = trajectories.flatMap((trajectory, index) =>
    trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id ?? `offline:${index}` }),
  );
  const index =
    options.index === 'auto' ? (transitions.length > 20_000 ? 'hnsw' : 'flat') : options.index;
  const embedder = parts.embedder ?? new HashingEmbedder({ dimension: options.embeddingDimension });
  const started = performance.now();
  const replayBuffer = ReplayBuffer.create({
    embedder,
    index: index === 'hnsw' ? { type: index, targetRecall: options.targetRecall } : { type: index },
    ...(options.bufferCapacity === undefined ? {} : { capacity: options.bufferCapacity }),
  });
  await replayBuffer.add(transitions);
  log(
    `${options.domain}: ${seedTasks.length} seed tasks, ${evaluationTasks.length} ${evaluationSplit} tasks, ${replayBuffer.size} offline transitions (${index} index, ${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  const { experienceModel, grounding } = embeddedExperienceModel(
    adapter,
    trajectories,
    options,
    log,
  );
  return {
    adapter,
    seedTasks,
    evaluationTasks,
    evaluationSplit,
    replayBuffer,
    experienceModel,
    experienceGrounding: grounding,
    realEnvironment: (reader = {}) =>
      adapter.connectReal(reader.countTokens ? { countTokens: reader.countTokens } : {}),
    offlineTransitions: replayBuffer.size,
    offlineTrajectories: trajectories,
  };
}
