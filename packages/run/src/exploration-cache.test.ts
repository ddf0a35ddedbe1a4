/**
 * The exploration cache against the real ALFWorld engine and data: one run plays and keeps
 * the file, the next reuses it without playing; a temporary file left by a crash is never
 * taken for the cache, and a failed run leaves no file.
 */
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJsonl, type Trajectory, TrajectorySchema } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExplorationDataOptions,
  ensureExplorationData,
  explorationCachePath,
} from './exploration-cache.js';
import { dataRoot } from './run.test-support.js';

const dataDir = join(dataRoot(), 'alfworld');

async function read(path: string): Promise<Trajectory[]> {
  const trajectories: Trajectory[] = [];
  for await (const trajectory of readJsonl(path, TrajectorySchema)) trajectories.push(trajectory);
  return trajectories;
}

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-exploration-cache-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('ensureExplorationData', () => {
  const settings = (cacheDir: string, lines: string[]): ExplorationDataOptions => ({
    domain: 'alfworld',
    dataDir,
    episodes: 2,
    seed: 3,
    maxSteps: 3,
    randomShare: 0.5,
    cacheDir,
    log: (line) => lines.push(line),
  });

  it('plays and keeps the episodes once, then reuses the file without playing', async () => {
    const cacheDir = join(directory, 'once');
    const firstLog: string[] = [];
    const first = await ensureExplorationData(settings(cacheDir, firstLog));
    expect(first.reused).toBe(false);
    expect(first.path).toBe(await explorationCachePath(settings(cacheDir, [])));
    expect(first.path.startsWith(join(cacheDir, 'alfworld-'))).toBe(true);
    expect(first.summary).toMatchObject({ output: first.path, episodes: 2 });
    expect(firstLog.filter((line) => / exploration 2\/2 /.test(line))).toHaveLength(1);
    const trajectories = await read(first.path);
    expect(trajectories.map((trajectory) => trajectory.meta?.exploration).sort()).toEqual([
      'perturbed-expert',
      'random',
    ]);
    for (const trajectory of trajectories) expect(trajectory.steps).toHaveLength(3);
    expect((await readdir(cacheDir)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    const written = await stat(first.path);

    const secondLog: string[] = [];
    const second = await ensureExplorationData(settings(cacheDir, secondLog));
    expect(second).toEqual({ ...first, reused: true });
    expect(secondLog).toEqual([expect.stringMatching(/^exploration: reusing .* \(2 episodes\)$/)]);
    expect((await stat(first.path)).mtimeMs).toBe(written.mtimeMs);

    // Other settings are another entry.
    const otherSeed = { ...settings(cacheDir, []), seed: 4 };
    expect(await explorationCachePath(otherSeed)).not.toBe(first.path);
  });

  it('never takes a leftover temporary file for the cache, and a failed run leaves no file', async () => {
    const cacheDir = join(directory, 'crash');
    await mkdir(cacheDir, { recursive: true });
    const path = await explorationCachePath(settings(cacheDir, []));
    const leftover = `${path}.999-deadbeef.tmp`;
    await writeFile(leftover, '{"id":"explore:3:0:train/half');
    const lines: string[] = [];
    const made = await ensureExplorationData(settings(cacheDir, lines));
    expect(made).toMatchObject({ path, reused: false, summary: { episodes: 2 } });
    expect(await read(path)).toHaveLength(2);

    // A run that fails after it wrote an episode (here its progress log throws) leaves
    // neither the file nor its temporary file.
    const failing: ExplorationDataOptions = {
      ...settings(cacheDir, []),
      seed: 5,
      log: (line) => {
        if (/ exploration 1\/2 /.test(line)) throw new Error('interrupted after one episode');
      },
    };
    await expect(ensureExplorationData(failing)).rejects.toThrow('interrupted after one episode');
    const failedPath = await explorationCachePath(failing);
    expect(await readdir(cacheDir)).toEqual(
      [path, leftover, path.replace(/\.jsonl$/, '.summary.json')]
        .map((file) => file.slice(cacheDir.length + 1))
        .sort(),
    );
    expect(failedPath).not.toBe(path);
  }, 60_000);

  it('names the file after the content of the data folder expert file, not its time', async () => {
    const data = join(directory, 'stamped-data');
    await mkdir(data, { recursive: true });
    const expertFile = join(data, 'expert_trajectories.jsonl');
    await writeFile(expertFile, '{"a":1}\n');
    const options = { ...settings(join(directory, 'stamped'), []), dataDir: data };
    const before = await explorationCachePath(options);
    // Copied or mounted again: a new modification time, the same content, the same file.
    await utimes(expertFile, new Date(2_000_000_000_000), new Date(2_000_000_000_000));
    expect(await explorationCachePath(options)).toBe(before);
    // New demonstrations of the same size: a new file.
    await writeFile(expertFile, '{"a":2}\n');
    expect(await explorationCachePath(options)).not.toBe(before);
  });

  it('defaults to $DREAMGYM_CACHE_DIR/exploration', async () => {
    const { cacheDir: _, ...rest } = settings('unused', []);
    const path = await explorationCachePath({ ...rest, env: { DREAMGYM_CACHE_DIR: directory } });
    expect(path.startsWith(join(directory, 'exploration', 'alfworld-'))).toBe(true);
    expect(path.endsWith('.jsonl')).toBe(true);
  });
});
