import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, readJsonl, type Trajectory, TrajectorySchema } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alfworldDataDirectory } from '../test-data-directory.js';
import { START_HOOK_TIMEOUT_MS, startTestEngineServer } from './engine-server.test-support.js';
import { exploreAlfworld } from './explore.js';
import type { AlfworldServerProcess } from './server-process.js';

const dataDir = alfworldDataDirectory();
const lookAtLight =
  'train/look_at_obj_in_light-AlarmClock-None-DeskLamp-301/trial_T20190907_174127_043461';
const heat =
  'train/pick_heat_then_place_in_recep-Apple-None-CounterTop-2/trial_T20190908_112534_364453';

describe('exploreAlfworld on the real engine', () => {
  let server: AlfworldServerProcess;
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dreamgym-explore-'));
    server = await startTestEngineServer(dataDir);
  }, START_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    await rm(directory, { recursive: true, force: true });
  });

  it('writes expert, epsilon-expert and random episodes as valid trajectories', async () => {
    const output = join(directory, 'exploration.jsonl');
    const expert = await exploreAlfworld({
      output,
      url: server.url,
      dataDir,
      games: [lookAtLight],
      episodes: 1,
      randomShare: 0,
      epsilon: 0,
    });
    expect(expert).toMatchObject({
      episodes: 1,
      successes: 1,
      byPolicy: { 'epsilon-expert': { episodes: 1, successes: 1 } },
    });
    const mixed = await exploreAlfworld({
      output,
      append: true,
      url: server.url,
      dataDir,
      games: [heat],
      episodes: 1,
      randomShare: 0,
      epsilon: 0.4,
      seed: 3,
      maxSteps: 25,
    });
    const random = await exploreAlfworld({
      output,
      append: true,
      url: server.url,
      games: [lookAtLight, heat],
      episodes: 2,
      randomShare: 1,
      maxSteps: 4,
      seed: 5,
    });
    expect(random).toMatchObject({ episodes: 2, successes: 0, steps: 8 });

    const trajectories: Trajectory[] = [];
    for await (const trajectory of readJsonl(output, TrajectorySchema))
      trajectories.push(trajectory);
    expect(trajectories).toHaveLength(4);
    expect(new Set(trajectories.map((trajectory) => trajectory.id)).size).toBe(4);
    const [won, epsilonExpert, ...randoms] = trajectories;
    expect(won!.success).toBe(true);
    expect(won!.steps.every((step) => step.info?.policy === 'expert')).toBe(true);
    expect(won!.steps.at(-1)).toMatchObject({ reward: 1, done: true });
    expect(won!.task).toMatchObject({
      id: lookAtLight,
      domain: 'alfworld',
      instruction: 'look at alarmclock under the desklamp.',
      meta: { game: lookAtLight, split: 'train', taskType: 'look_at_obj_in_light' },
    });
    const policies = new Set(epsilonExpert!.steps.map((step) => step.info?.policy));
    expect(policies).toEqual(new Set(['expert', 'random']));
    expect(epsilonExpert!.meta).toMatchObject({ exploration: 'epsilon-expert', epsilon: 0.4 });
    expect(mixed.steps).toBe(epsilonExpert!.steps.length);
    for (const trajectory of randoms) {
      expect(trajectory).toMatchObject({
        success: false,
        source: 'offline',
        meta: { exploration: 'random' },
      });
      expect(trajectory.steps).toHaveLength(4);
      expect(trajectory.steps.at(-1)).toMatchObject({ reward: 0, done: true });
    }
    for (const trajectory of trajectories) {
      for (const step of trajectory.steps) expect(step.observation.actions).toContain(step.action);
      expect(trajectory.finalObservation?.text.length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('refuses evaluation games', async () => {
    await expect(
      exploreAlfworld({
        output: join(directory, 'never.jsonl'),
        url: server.url,
        games: ['valid_unseen/pick_and_place_simple-Book-None-SideTable-329/trial_T1'],
      }),
    ).rejects.toSatisfy(
      (error: unknown) => ConfigError.isInstance(error) && /train games only/.test(error.message),
    );
  });
});
