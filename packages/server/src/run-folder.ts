/** Helpers of a served run's folder: its logs, and what its checkpoints hold besides the curriculum. */
import { open } from 'node:fs/promises';
import { z } from 'zod';

/** Opens the run's logs for appending. */
export async function openLogs(paths: { experience: string; episodes: string }) {
  return {
    experience: await open(paths.experience, 'a'),
    episodes: await open(paths.episodes, 'a'),
  };
}

/** The run's counters in a checkpoint. */
export const CountersSchema = z.object({
  iteration: z.number().int().nonnegative(),
  episodesStarted: z.number().int().nonnegative(),
  episodesFinished: z.number().int().nonnegative(),
  episodesAbandoned: z.number().int().nonnegative(),
  successes: z.number().int().nonnegative(),
  truncated: z.number().int().nonnegative(),
  steps: z.number().int().nonnegative(),
  transitionsWritten: z.number().int().nonnegative(),
  /** Lines of `experience.jsonl` and `episodes.jsonl` this checkpoint covers. */
  experienceLines: z.number().int().nonnegative(),
  episodeLines: z.number().int().nonnegative(),
  /** Finished episodes of the iteration in progress. */
  iterationEpisodes: z.number().int().nonnegative(),
  random: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  configHash: z.string(),
});
export type Counters = z.infer<typeof CountersSchema>;

/** The counters of a new run: nothing played yet. */
export function newCounters(random: Counters['random'], configHash: string): Counters {
  return {
    iteration: 0,
    episodesStarted: 0,
    episodesFinished: 0,
    episodesAbandoned: 0,
    successes: 0,
    truncated: 0,
    steps: 0,
    transitionsWritten: 0,
    experienceLines: 0,
    episodeLines: 0,
    iterationEpisodes: 0,
    random,
    configHash,
  };
}

/** The draw queue and the iteration's outcomes in a checkpoint. */
export const DrawStateSchema = z.object({
  /** Task ids still to serve from the current batch. */
  queue: z.array(z.string()),
  /** Outcomes (1 success, 0 not) per task in the iteration in progress. */
  groups: z.array(z.object({ taskId: z.string(), rewards: z.array(z.number()) })),
});
