/**
 * The run folder's append-only logs: `experience.jsonl` (every transition the run added to
 * the replay buffer, with its iteration) and `metrics.jsonl`. A checkpoint records how many
 * lines of each belong to it; on resume the logs are cut back to that and the experience is
 * re-added to a fresh buffer, so the buffer is exactly what an uninterrupted run would hold.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { CheckpointError } from '../errors.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import { readJsonl } from '../mdp/jsonl.js';
import { type Transition, TransitionSchema } from '../mdp/schemas.js';
import type { ReplayBuffer } from '../replay/replay-buffer.js';

/** The experience log's name in a run folder. */
export const EXPERIENCE_LOG = 'experience.jsonl';

/** One line of `experience.jsonl`: a transition the run added to the buffer, with its iteration. */
const ExperienceLineSchema = z.object({
  iteration: z.number().int().nonnegative(),
  transition: TransitionSchema,
});
export type ExperienceRecord = z.infer<typeof ExperienceLineSchema>;

/** The text of experience records as log lines (each line ended). */
export function experienceText(records: readonly ExperienceRecord[]): string {
  return records
    .map(({ iteration, transition }) => `${JSON.stringify({ iteration, transition })}\n`)
    .join('');
}

/**
 * Re-adds the experience log to a buffer, one iteration's batch at a time (as first added);
 * with `lines`, only the log's first `lines` lines (those a checkpoint covers). Resolves to
 * the number of transitions re-added.
 */
export async function replayExperience(
  file: string,
  buffer: ReplayBuffer,
  lines = Number.POSITIVE_INFINITY,
): Promise<number> {
  let batch: Transition[] = [];
  let batchIteration: number | undefined;
  let read = 0;
  for await (const line of readJsonl(file, ExperienceLineSchema)) {
    if (read === lines) break;
    read += 1;
    if (batchIteration !== undefined && line.iteration !== batchIteration) {
      await buffer.add(batch);
      batch = [];
    }
    batchIteration = line.iteration;
    batch.push(line.transition);
  }
  if (batch.length > 0) await buffer.add(batch);
  if (read < lines && Number.isFinite(lines)) {
    throw new CheckpointError(
      `${file} holds ${read} lines but the checkpoint covers ${lines}; the run folder is damaged.`,
      { path: file },
    );
  }
  return read;
}

/** Keeps the first `lines` lines of a text file (drops what a crashed run wrote after its checkpoint). */
export async function truncateLines(file: string, lines: number): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    if (lines === 0) return;
    throw new CheckpointError(
      `${file} is missing but the checkpoint covers ${lines} lines of it.`,
      { path: file },
    );
  }
  const kept = text.split('\n').slice(0, lines);
  if (kept.length < lines || kept.some((line) => line.trim() === '')) {
    throw new CheckpointError(
      `${file} holds fewer lines than the checkpoint covers (${lines}); the run folder is damaged.`,
      { path: file },
    );
  }
  await writeFileAtomic(file, lines === 0 ? '' : `${kept.join('\n')}\n`);
}
