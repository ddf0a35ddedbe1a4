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
/** The heat game's recorded expert commands (`expert_trajectories.jsonl`). */
const HEAT_COMMANDS = [
  'go to sinkbasin 1',
  'take apple 1 from sinkbasin 1',
  'go to microwave 1',
  'heat apple 1 with microwave 1',
  'go to countertop 1',
  'put apple 1 in/on countertop 1',
];

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

  it('writes planner epsilon-expert and random episodes as valid trajectories', async () => {
    const output = join(directory, 'exploration.jsonl');
    const expert = await exploreAlfworld({
      output,
      url: server.url,
      dataDir,
      games: [lookAtLight],
      episodes: 1,
      randomShare: 0,
      expertPolicy: 'planner',
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
      expertPolicy: 'planner',
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
      expect(trajectory.steps.at(-1)).toMatchObject({
        reward: 0,
        done: true,
        truncated: true,
        info: { truncated: true },
      });
    }
    for (const trajectory of trajectories) {
      for (const step of trajectory.steps) expect(step.observation.actions).toContain(step.action);
      expect(trajectory.finalObservation?.text.length).toBeGreaterThan(0);
    }
  }, 120_000);

  async function read(output: string): Promise<Trajectory[]> {
    const trajectories: Trajectory[] = [];
    for await (const trajectory of readJsonl(output, TrajectorySchema))
      trajectories.push(trajectory);
    return trajectories;
  }
  const expertSteps = (trajectory: Trajectory) =>
    trajectory.steps.filter((step) => step.info?.policy === 'expert');

  it('replays the recorded expert commands of a game, without the planner', async () => {
    const output = join(directory, 'replay.jsonl');
    const summary = await exploreAlfworld({
      output,
      url: server.url,
      games: [heat],
      episodes: 1,
      randomShare: 0,
      perturbations: ['epsilon'],
      epsilon: 0,
    });
    expect(summary).toMatchObject({
      episodes: 1,
      successes: 1,
      truncated: 0,
      byPolicy: { 'perturbed-expert': { episodes: 1, successes: 1 } },
    });
    const [replay] = await read(output);
    expect(replay!.steps.map((step) => step.action)).toEqual(HEAT_COMMANDS);
    expect(replay!.steps.every((step) => step.info?.policy === 'expert')).toBe(true);
    expect(replay!.steps.at(-1)).toMatchObject({ reward: 1, done: true });
    expect(replay!.steps.at(-1)!.truncated).toBeUndefined();
    expect(replay!.meta).toMatchObject({
      exploration: 'perturbed-expert',
      perturbation: 'epsilon',
      epsilon: 0,
    });
  });

  it('skips one expert command that is not a go to, then keeps replaying', async () => {
    const output = join(directory, 'skip.jsonl');
    const summary = await exploreAlfworld({
      output,
      url: server.url,
      games: [heat],
      episodes: 4,
      randomShare: 0,
      perturbations: ['skip'],
      maxSteps: 8,
      seed: 1,
    });
    expect(summary.byPolicy['perturbed-expert'].episodes).toBe(4);
    const trajectories = await read(output);
    expect(trajectories).toHaveLength(4);
    for (const trajectory of trajectories) {
      const skipped = trajectory.meta!.skipped as { index: number; command: string };
      expect(trajectory.meta).toMatchObject({
        exploration: 'perturbed-expert',
        perturbation: 'skip',
      });
      expect(HEAT_COMMANDS[skipped.index]).toBe(skipped.command);
      expect(skipped.command).not.toMatch(/^go to /);
      // Up to the skip, the replay is exact; the skip is marked on the step played in its place.
      const marked = trajectory.steps.flatMap((step, index) =>
        step.info?.skippedExpert === undefined ? [] : [index],
      );
      expect(marked).toEqual([skipped.index]);
      expect(trajectory.steps.slice(0, skipped.index).map((step) => step.action)).toEqual(
        HEAT_COMMANDS.slice(0, skipped.index),
      );
      expect(trajectory.steps[skipped.index]!.action).not.toBe(skipped.command);
      // The expert steps are the recorded commands in order, the skipped one left out.
      const rest = HEAT_COMMANDS.filter((_, index) => index !== skipped.index);
      const played = expertSteps(trajectory).map((step) => step.action);
      let cursor = 0;
      for (const action of played) {
        cursor = rest.indexOf(action, cursor) + 1;
        expect(cursor, `${action} out of order in ${played.join(' | ')}`).toBeGreaterThan(0);
      }
      expect(trajectory.steps.at(-1)!.truncated === true).toBe(!trajectory.success);
    }
    // Skipping the take or the heat makes the rest of the recipe impossible: the replay drops
    // the commands that are not admissible and resumes at the next go to.
    const broken = trajectories.filter(
      (trajectory) => (trajectory.meta!.skipped as { index: number }).index < 5,
    );
    expect(broken.length).toBeGreaterThan(0);
    for (const trajectory of broken) {
      expect(trajectory.success).toBe(false);
      expect(trajectory.steps.at(-1)).toMatchObject({ truncated: true, info: { truncated: true } });
    }
    expect(
      trajectories.some((trajectory) =>
        trajectory.steps.some((step) => Array.isArray(step.info?.skippedInadmissible)),
      ),
    ).toBe(true);
  });

  it('follows the expert for a prefix, then acts randomly', async () => {
    const output = join(directory, 'prefix.jsonl');
    await exploreAlfworld({
      output,
      url: server.url,
      games: [heat],
      episodes: 2,
      randomShare: 0,
      perturbations: ['prefix'],
      maxSteps: 8,
      seed: 2,
    });
    for (const trajectory of await read(output)) {
      const prefix = trajectory.meta?.prefix as number;
      expect(prefix).toBeGreaterThanOrEqual(1);
      expect(prefix).toBeLessThan(HEAT_COMMANDS.length);
      expect(trajectory.steps.map((step) => step.info?.policy)).toEqual(
        trajectory.steps.map((_, index) => (index < prefix ? 'expert' : 'random')),
      );
      expect(trajectory.steps.slice(0, prefix).map((step) => step.action)).toEqual(
        HEAT_COMMANDS.slice(0, prefix),
      );
    }
  });

  it('marks the last step of an episode cut by maxSteps as truncated', async () => {
    const output = join(directory, 'truncated.jsonl');
    const summary = await exploreAlfworld({
      output,
      url: server.url,
      games: [lookAtLight],
      episodes: 2,
      randomShare: 0.5,
      perturbations: ['skip'],
      maxSteps: 3,
      seed: 4,
    });
    // The look-at game's expert needs 10 commands: 3 steps never win it.
    expect(summary).toMatchObject({
      episodes: 2,
      successes: 0,
      truncated: 2,
      byPolicy: {
        random: { episodes: 1, truncated: 1 },
        'perturbed-expert': { episodes: 1, truncated: 1 },
      },
    });
    for (const trajectory of await read(output)) {
      expect(trajectory.steps).toHaveLength(3);
      expect(trajectory.steps.at(-1)).toMatchObject({
        done: true,
        truncated: true,
        info: { truncated: true },
      });
      expect(trajectory.meta?.truncated).toBe(true);
      for (const step of trajectory.steps.slice(0, -1)) {
        expect(step.truncated).toBeUndefined();
        expect(step.info?.truncated).toBeUndefined();
      }
    }
  });

  it('writes the same episodes in the same order with two sessions', async () => {
    const play = async (concurrency: number) => {
      const output = join(directory, `concurrency-${concurrency}.jsonl`);
      const finished: number[] = [];
      const summary = await exploreAlfworld({
        output,
        url: server.url,
        games: [lookAtLight, heat],
        episodes: 4,
        maxSteps: 5,
        seed: 7,
        concurrency,
        onEpisode: (progress) => finished.push(progress.completed),
      });
      expect(finished).toEqual([1, 2, 3, 4]);
      return { summary, trajectories: await read(output) };
    };
    const one = await play(1);
    const two = await play(2);
    expect(two.summary).toEqual({ ...one.summary, output: two.summary.output });
    expect(one.summary.byPolicy).toMatchObject({
      random: { episodes: 2 },
      'perturbed-expert': { episodes: 2 },
    });
    const shape = (trajectories: Trajectory[]) =>
      trajectories.map((trajectory) => ({
        id: trajectory.id,
        meta: trajectory.meta,
        actions: trajectory.steps.map((step) => step.action),
      }));
    expect(shape(two.trajectories)).toEqual(shape(one.trajectories));
    expect(one.trajectories.map((trajectory) => trajectory.id)).toEqual(
      [0, 1, 2, 3].map((index) => expect.stringMatching(new RegExp(`^explore:7:${index}:train/`))),
    );
  });

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
