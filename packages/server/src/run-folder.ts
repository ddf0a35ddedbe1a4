/**
 * What a served run's folder holds besides what every run's does (`RunLedger`): its counters
 * of episodes, the episode log, and the draw queue its checkpoints keep.
 */
import { LedgerCountersSchema, type RunLedger } from '@dreamgym/core/internal';
import { z } from 'zod';

/** One line per finished episode. */
export const EPISODE_LOG = 'episodes.jsonl';

const ServedCountersSchema = LedgerCountersSchema.extend({
  episodesStarted: z.number().int().nonnegative(),
  episodesFinished: z.number().int().nonnegative(),
  episodesAbandoned: z.number().int().nonnegative(),
  successes: z.number().int().nonnegative(),
  truncated: z.number().int().nonnegative(),
  transitionsWritten: z.number().int().nonnegative(),
  /** Lines of `episodes.jsonl` this checkpoint covers. */
  episodeLines: z.number().int().nonnegative(),
  /** Finished episodes of the iteration in progress. */
  iterationEpisodes: z.number().int().nonnegative(),
});
export type Counters = z.infer<typeof ServedCountersSchema>;

/**
 * The counters in a served run's checkpoints. Those written before the run ledger counted
 * the steps played as `steps`: the same figure as the mode's transitions.
 */
export function servedCountersSchema(mode: 'synthetic' | 'real'): z.ZodType<Counters> {
  return z.preprocess((raw) => {
    if (typeof raw !== 'object' || raw === null || !('steps' in raw)) return raw;
    const { steps, ...rest } = raw as Record<string, unknown>;
    return {
      ...rest,
      realTransitions: mode === 'real' ? steps : 0,
      syntheticTransitions: mode === 'synthetic' ? steps : 0,
    };
  }, ServedCountersSchema);
}

/** A new served run's counters besides the ledger's: nothing played yet. */
export const NEW_SERVED_COUNTERS = {
  episodesStarted: 0,
  episodesFinished: 0,
  episodesAbandoned: 0,
  successes: 0,
  truncated: 0,
  transitionsWritten: 0,
  episodeLines: 0,
  iterationEpisodes: 0,
} as const;

/** The ledger of a served run. */
export type ServedLedger = RunLedger<Counters>;

/** The draw queue and the iteration's outcomes in a checkpoint. */
export const DrawStateSchema = z.object({
  /** Task ids still to serve from the current batch. */
  queue: z.array(z.string()),
  /** Outcomes (1 success, 0 not) per task in the iteration in progress. */
  groups: z.array(z.object({ taskId: z.string(), rewards: z.array(z.number()) })),
});
