import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeededRandom } from '@dreamgym/core';
import type { CurriculumSnapshot } from '@dreamgym/core/curriculum';
import { CheckpointStore } from '@dreamgym/core/training';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CRASH_ACTION } from './corridor-replica.test-support.js';
import { corridorDomain, playEpisode, TestClient } from './corridor-run.test-support.js';
import { CLOSE_CODES } from './protocol/openenv-messages.js';
import { type ServedDreamGym, serveDreamGym } from './serve-dreamgym.js';
import type { WorkerPoolStats } from './worker-pool.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const replicaModule = new URL('./corridor-replica.test-support.ts', import.meta.url).href;

/** A served corridor run: `count` worker processes, or none (`0`: all in the serving process). */
async function serveWithWorkers(count: number) {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-workers-'));
  cleanup.push(() => rm(directory, { recursive: true, force: true }));
  const domain = await corridorDomain();
  const served = await serveDreamGym({
    ...domain,
    config: {
      seed: 5,
      tasksPerIteration: 2,
      rolloutsPerTask: 4,
      maxSteps: 12,
      curriculum: { lambda: 0.5, tasksToExpand: 2, variantsPerTask: 2 },
      // Small batches: several write-backs reach the workers while episodes play.
      writeBackBatch: { transitions: 8, milliseconds: 10 },
    },
    server: { port: 0 },
    runDirectory: directory,
    ...(count > 0 ? { workers: { count, replicaModule } } : {}),
  });
  cleanup.push(() => served.close());
  return { served, domain, directory };
}

async function status(served: ServedDreamGym) {
  return (await (await fetch(`${served.url}/dreamgym/status`)).json()) as {
    episodes: { finished: number };
    steps: number;
    buffer: { size: number; written: number };
    workers: WorkerPoolStats;
  };
}

async function connect(served: ServedDreamGym): Promise<TestClient> {
  const client = await TestClient.connect(served.url);
  cleanup.push(async () => {
    client.socket.terminate();
  });
  return client;
}

describe('serve with worker processes', () => {
  it('serves one curriculum and one buffer from two workers: no write-back is lost', async () => {
    const { served, domain, directory } = await serveWithWorkers(2);
    const clients = await Promise.all([0, 1, 2, 3].map(() => connect(served)));
    // Sessions are spread: two environments on each worker.
    await clients[0]!.request({ type: 'state' });
    await vi.waitFor(async () => {
      const figures = await status(served);
      expect(figures.workers.workers.map((worker) => worker.environments)).toEqual([2, 2]);
    });
    const played = await Promise.all(
      clients.map(async (client, index) => {
        const random = new SeededRandom(index + 1);
        let steps = 0;
        for (let episode = 0; episode < 3; episode += 1) {
          steps += (await playEpisode(client, { noise: 0.3, random })).steps;
        }
        return steps;
      }),
    );
    const steps = played.reduce((sum, each) => sum + each, 0);
    const figures = await status(served);
    expect(figures.episodes.finished).toBe(12);
    expect(figures.steps).toBe(steps);
    expect(figures.buffer.written).toBe(steps);
    // Every worker's replica holds what the writer holds, after the same batches.
    expect(figures.workers.alive).toBe(2);
    for (const worker of figures.workers.workers) {
      expect(worker.bufferSize).toBe(domain.replayBuffer.size);
      expect(worker.appliedSequence).toBe(figures.workers.workers[0]!.appliedSequence);
      // Each replica's index, as its own buffer reports it.
      expect(worker.searchIndex).toEqual(domain.replayBuffer.stats().index);
    }
    expect(figures.workers.workers[0]!.appliedSequence).toBeGreaterThan(1);
    const experience = (await readFile(join(directory, 'experience.jsonl'), 'utf8')).trim();
    expect(experience.split('\n')).toHaveLength(steps);
  });

  it('gives the curriculum and the buffer what one process gives them from the same seeded episodes', async () => {
    // Two sessions play in turn (so the order of episodes is the same in both runs); after each
    // episode the write-backs are flushed and every replica holds them, as one process's buffer
    // does, so each episode retrieves from the same buffer in both runs.
    const run = async (count: number) => {
      const { served, domain, directory } = await serveWithWorkers(count);
      const clients = await Promise.all([0, 1].map(() => connect(served)));
      const randoms = [new SeededRandom(11), new SeededRandom(12)];
      const episodes = [];
      for (let round = 0; round < 8; round += 1) {
        for (const [index, client] of clients.entries()) {
          episodes.push(await playEpisode(client, { noise: 0.3, random: randoms[index] }));
          const figures = await status(served);
          if (count > 0) {
            expect(figures.workers.workers.map((worker) => worker.environments)).toEqual([1, 1]);
            await vi.waitFor(
              async () => {
                for (const worker of (await status(served)).workers.workers) {
                  expect(worker.bufferSize).toBe(domain.replayBuffer.size);
                }
              },
              { timeout: 15_000, interval: 20 },
            );
          }
        }
      }
      await served.close();
      const checkpoint = await new CheckpointStore(join(directory, 'checkpoints')).load();
      return {
        episodes,
        episodeLines: (await readFile(join(directory, 'episodes.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map((line) => {
            // All but the episode ids and seconds (which differ between runs).
            const { episodeId: _id, seconds: _seconds, ...kept } = JSON.parse(line);
            return kept;
          }),
        curriculum: checkpoint!.json('curriculum') as CurriculumSnapshot,
        bufferSize: domain.replayBuffer.size,
      };
    };
    const inProcess = await run(0);
    const withWorkers = await run(2);
    // Two iterations of 8 episodes: the curriculum observed two groups' rewards and grew twice.
    expect(inProcess.episodes).toHaveLength(16);
    expect(withWorkers.episodes).toEqual(inProcess.episodes);
    expect(withWorkers.episodeLines).toEqual(inProcess.episodeLines);
    expect(inProcess.episodeLines.map((line) => line.iteration)).toEqual(
      [0, 1].flatMap((iteration) => Array<number>(8).fill(iteration)),
    );
    // Its task statistics are there to compare: tasks observed twice (one group per iteration).
    expect(
      inProcess.curriculum.pool.entries.filter((entry) => entry.stats.timesObserved > 0).length,
    ).toBeGreaterThan(0);
    expect(withWorkers.curriculum).toEqual(inProcess.curriculum);
    expect(withWorkers.bufferSize).toBe(inProcess.bufferSize);
  }, 120_000);

  it('restarts a crashed worker, closes its sessions with 1012 and keeps the others', async () => {
    const { served, domain } = await serveWithWorkers(2);
    const doomed = await connect(served);
    const survivor = await connect(served);
    await playEpisode(survivor, { random: new SeededRandom(3) });
    const reset = await doomed.request({ type: 'reset', data: {} });
    expect(reset.type).toBe('observation');
    doomed.socket.send(JSON.stringify({ type: 'step', data: { action: CRASH_ACTION } }));
    const closed = await doomed.closed;
    expect(closed.code).toBe(CLOSE_CODES.serviceRestart);
    expect(closed.reason).toMatch(/worker restarted/);
    // The other worker's session never noticed.
    const again = await playEpisode(survivor, { random: new SeededRandom(4) });
    expect(again.steps).toBeGreaterThan(0);
    await vi.waitFor(
      async () => {
        const figures = await status(served);
        expect(figures.workers.restarts).toBe(1);
        expect(figures.workers.alive).toBe(2);
      },
      { timeout: 15_000, interval: 100 },
    );
    // The replacement caught up with every write-back, and serves new sessions.
    const fresh = await connect(served);
    await connect(served);
    await playEpisode(fresh, { random: new SeededRandom(5) });
    const figures = await status(served);
    for (const worker of figures.workers.workers) {
      expect(worker.bufferSize).toBe(domain.replayBuffer.size);
    }
    expect(figures.workers.workers.map((worker) => worker.environments).sort()).toEqual([1, 2]);
  });

  it('ends an HTTP episode whose worker crashed with a 503 that says to reset', async () => {
    const { served } = await serveWithWorkers(2);
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${served.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as { detail?: unknown } };
    };
    const reset = await post('/reset', { episode_id: 'doomed' });
    expect(reset.status).toBe(200);
    // The crash comes just after the step's answer (as the replica's bug is written).
    expect(
      (await post('/step', { episode_id: 'doomed', action: { action: CRASH_ACTION } })).status,
    ).toBe(200);
    await vi.waitFor(async () => expect((await status(served)).workers.restarts).toBe(1), {
      timeout: 15_000,
      interval: 100,
    });
    const lost = await post('/step', { episode_id: 'doomed', action: { action: 'look' } });
    expect(lost.status).toBe(503);
    expect(String(lost.body.detail)).toMatch(
      /Episode "doomed" ended: the worker process .* stopped .* POST \/reset to start a new episode/,
    );
    // The episode is over, and a new one is served.
    expect((await post('/step', { episode_id: 'doomed', action: { action: 'look' } })).status).toBe(
      409,
    );
    expect((await post('/reset', { episode_id: 'again' })).status).toBe(200);
  });

  it('refuses a replica module without createReplica, with a clear error', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-workers-'));
    cleanup.push(() => rm(directory, { recursive: true, force: true }));
    const domain = await corridorDomain();
    await expect(
      serveDreamGym({
        ...domain,
        server: { port: 0 },
        runDirectory: directory,
        workers: { count: 1, replicaModule: new URL('./task-source.ts', import.meta.url).href },
      }),
    ).rejects.toThrow(/could not build its replica: .*exports no createReplica/);
  });
});
