/** Helpers of a served run's folder: its logs. */
import { open } from 'node:fs/promises';

/** Opens the run's logs for appending. */
export async function openLogs(paths: { experience: string; episodes: string }) {
  return {
    experience: await open(paths.experience, 'a'),
    episodes: await open(paths.episodes, 'a'),
  };
}
