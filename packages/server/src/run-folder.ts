/** Helpers of a served run's folder: its logs, and what a resume re-reads. */
import { open } from 'node:fs/promises';
import { type ReplayBuffer, readJsonl, type Transition, TransitionSchema } from '@dreamgym/core';
import { z } from 'zod';

/** One line of `experience.jsonl`. */
export const ExperienceLineSchema = z.object({
  iteration: z.number().int().nonnegative(),
  transition: TransitionSchema,
});

/** Opens the run's logs for appending. */
export async function openLogs(paths: { experience: string; episodes: string }) {
  return {
    experience: await open(paths.experience, 'a'),
    episodes: await open(paths.episodes, 'a'),
  };
}

/** Re-adds the run's experience to the buffer, one iteration's batch at a time. */
export async function replayExperience(file: string, buffer: ReplayBuffer): Promise<void> {
  let batch: Transition[] = [];
  let batchIteration: number | undefined;
  for await (const line of readJsonl(file, ExperienceLineSchema)) {
    if (batchIteration !== undefined && line.iteration !== batchIteration) {
      await buffer.add(batch);
      batch = [];
    }
    batchIteration = line.iteration;
    batch.push(line.transition);
  }
  if (batch.length > 0) await buffer.add(batch);
}
