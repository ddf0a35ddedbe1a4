/** The settings of a served DreamGym run, and the record of one served episode. */
import { parseOptions } from '@dreamgym/core';
import { CurriculumConfigSchema } from '@dreamgym/core/curriculum';
import { z } from 'zod';

/** What a served run does; `parseServeConfig` validates it and fills defaults. */
export const ServeConfigSchema = z.object({
  /** Seeds the task draws and the curriculum's generator. */
  seed: z.number().int().default(0),
  /** Tasks drawn per iteration (seed plus at most a `curriculum.lambda` share generated). */
  tasksPerIteration: z.number().int().positive().default(16),
  /** Episodes served per drawn task, back to back (a GRPO group). */
  rolloutsPerTask: z.number().int().positive().default(4),
  /** Steps after which a synthetic episode is cut off (`done`, `truncated`). */
  maxSteps: z.number().int().positive().default(30),
  /** Curriculum task generation (`enabled: false`: seed tasks only). */
  curriculum: CurriculumConfigSchema.default(CurriculumConfigSchema.parse({})),
  /** Replay retrieval for the experience model (`enabled: false`: no demonstrations). */
  retrieval: z
    .object({ enabled: z.boolean().default(true), k: z.number().int().positive().default(4) })
    .default({ enabled: true, k: 4 }),
  /** Interaction history given to the experience model. */
  history: z.object({ enabled: z.boolean().default(true) }).default({ enabled: true }),
  /** Reward of an action outside the domain's grammar (zero or negative), as in the loop. */
  invalidActionPenalty: z.number().max(0).default(0),
  /** Write each finished episode's transitions back to the replay buffer. */
  replayWriteBack: z.boolean().default(true),
  /** Write a checkpoint every this many iterations (and always at shutdown). */
  checkpointEvery: z.number().int().positive().default(1),
  /**
   * How written-back transitions reach the buffer: gathered, and added once `transitions`
   * wait or `milliseconds` after the first one started waiting (`transitions: 1`: each
   * episode at once). Tuning only: not part of the configuration a resume must repeat.
   */
  writeBackBatch: z
    .object({
      transitions: z.number().int().positive().default(512),
      milliseconds: z.number().int().nonnegative().default(250),
    })
    .default({ transitions: 512, milliseconds: 250 }),
  /**
   * Remember retrieval answers until the buffer next changes (the same state and action
   * searched again is answered from memory). Tuning only, like `writeBackBatch`.
   */
  retrievalCache: z.boolean().default(true),
});
export type ServeConfig = z.infer<typeof ServeConfigSchema>;
export type ServeConfigInput = z.input<typeof ServeConfigSchema>;

/** Validates a serve configuration; a `ConfigError` names the field. */
export function parseServeConfig(input: unknown): ServeConfig {
  return parseOptions(ServeConfigSchema, input ?? {}, 'serve config');
}

/** One line of `episodes.jsonl`. */
export const EpisodeLogLineSchema = z.object({
  iteration: z.number().int().nonnegative(),
  episode: z.number().int().nonnegative(),
  episodeId: z.string(),
  taskId: z.string(),
  taskOrigin: z.enum(['seed', 'generated']),
  steps: z.number().int().nonnegative(),
  totalReward: z.number(),
  success: z.boolean(),
  truncated: z.boolean(),
  seconds: z.number().nonnegative(),
});
export type EpisodeLogLine = z.infer<typeof EpisodeLogLineSchema>;
