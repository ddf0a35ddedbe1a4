/** Helpers of a served run's folder: the configuration hash, its logs, and what a resume re-reads. */
import { existsSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import {
  CheckpointError,
  type ReplayBuffer,
  readJsonl,
  type Transition,
  TransitionSchema,
} from '@dreamgym/core';
import { writeFileAtomic } from '@dreamgym/core/internal';
import { z } from 'zod';

/** One line of `experience.jsonl`. */
export const ExperienceLineSchema = z.object({
  iteration: z.number().int().nonnegative(),
  transition: TransitionSchema,
});

/** FNV-1a of a value's JSON: tells a checkpoint's configuration from another. */
export function stableHash(value: unknown): string {
  let hash = 0x811c9dc5;
  const text = JSON.stringify(value);
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** Keeps the first `lines` lines of a log (drops what a crashed server wrote after its checkpoint). */
export async function truncateLines(file: string, lines: number): Promise<void> {
  const text = existsSync(file) ? await readFile(file, 'utf8') : '';
  const kept = text.split('\n').slice(0, lines);
  if (kept.length < lines || kept.some((line) => line.trim() === '')) {
    throw new CheckpointError(
      `${file} holds fewer lines than the checkpoint covers (${lines}); the run folder is damaged.`,
      { path: file },
    );
  }
  await writeFileAtomic(file, lines === 0 ? '' : `${kept.join('\n')}\n`);
}

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
