import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJsonl, type Trajectory, TrajectorySchema } from '@dreamgym/core';
import { afterAll, describe, expect, it } from 'vitest';
import { textworldTestDataset } from '../test-data-directory.js';
import { exploreTextworld } from './explore.js';

const { dir } = await textworldTestDataset();
const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-textworld-explore-'));
afterAll(() => rm(scratch, { recursive: true, force: true }));

async function read(file: string): Promise<Trajectory[]> {
  const trajectories: Trajectory[] = [];
  for await (const trajectory of readJsonl(file, TrajectorySchema)) trajectories.push(trajectory);
  return trajectories;
}

describe('exploreTextworld', () => {
  it('plays random and perturbed-walkthrough episodes on training games, the same for any concurrency', async () => {
    const progress: number[] = [];
    const one = await exploreTextworld({
      dataDir: dir,
      output: join(scratch, 'one.jsonl'),
      episodes: 8,
      maxSteps: 30,
      seed: 5,
      onEpisode: ({ completed }) => progress.push(completed),
    });
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(one.episodes).toBe(8);
    expect(one.byPolicy.random.episodes).toBe(4);
    const episodes = await read(join(scratch, 'one.jsonl'));
    expect(episodes.every((episode) => String(episode.task.meta.split) === 'train')).toBe(true);
    expect(new Set(episodes.map((episode) => episode.meta?.exploration))).toEqual(
      new Set(['random', 'perturbed-walkthrough']),
    );
    // Failures as well as successes: a skipped step, a random walk, a burned ingredient.
    expect(episodes.some((episode) => !episode.success)).toBe(true);
    for (const episode of episodes) {
      const last = episode.steps.at(-1)!;
      expect(last.done).toBe(true);
      expect(last.reward).toBe(episode.success ? 1 : 0);
    }
    const two = await exploreTextworld({
      dataDir: dir,
      output: join(scratch, 'two.jsonl'),
      episodes: 8,
      maxSteps: 30,
      seed: 5,
      concurrency: 2,
    });
    expect(two).toEqual({ ...one, output: join(scratch, 'two.jsonl') });
    expect(await read(join(scratch, 'two.jsonl'))).toEqual(episodes);
  }, 180_000);
});
