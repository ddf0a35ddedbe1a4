/**
 * `dreamgym data expert` end to end: the real ALFWorld engine started by the command, the
 * handcoded expert on one train game, the output read back by the adapter's loader.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAlfworldExpertTrajectories } from '@dreamgym/alfworld';
import type { Trajectory } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo } from '../cli.test-support.js';

const root = process.env.DREAMGYM_DATA_DIR;
if (!root || !existsSync(join(root, 'alfworld', 'train'))) {
  throw new Error(
    'Set DREAMGYM_DATA_DIR to the shared data folder (it must hold alfworld/train/).',
  );
}
const data = join(root, 'alfworld');
const GAME = 'train/look_at_obj_in_light-Bowl-None-DeskLamp-304/trial_T20190907_232204_574574';

const capture = (directory: string) => captureIo({ cwd: directory });

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-data-expert-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('dreamgym data expert', () => {
  it('writes expert trajectories that the adapter loader reads', async () => {
    const io = capture(directory);
    const code = await runCli(
      [
        'data',
        'expert',
        '--domain',
        'alfworld',
        '--data',
        data,
        '--out',
        'out/expert_trajectories.jsonl',
        '--game',
        `${GAME}/game.tw-pddl`,
      ],
      io,
    );
    expect(io.err()).toContain(`[1/1] written ${GAME} (3 commands`);
    expect(code).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ games: 1, written: 1, skipped: 0, failed: [] });
    const loaded: Trajectory[] = [];
    for await (const trajectory of loadAlfworldExpertTrajectories(join(directory, 'out')))
      loaded.push(trajectory);
    expect(loaded).toHaveLength(1);
    expect(loaded[0]).toMatchObject({
      id: `expert:${GAME}`,
      success: true,
      task: { id: GAME, meta: { taskType: 'look_at_obj_in_light' } },
    });
    expect(loaded[0]!.steps.map((step) => step.action)).toEqual([
      'go to shelf 1',
      'take bowl 2 from shelf 1',
      'use desklamp 1',
    ]);
  }, 120_000);

  it('names an unknown game and exits 2 without starting the engine', async () => {
    const io = capture(directory);
    const code = await runCli(
      [
        'data',
        'expert',
        '--domain',
        'alfworld',
        '--data',
        data,
        '--out',
        'never.jsonl',
        '--game',
        'train/pick_and_place_simple-Nothing-None-Shelf-999/trial_T0',
      ],
      io,
    );
    expect(code).toBe(2);
    expect(io.err()).toContain(
      'dreamgym data expert: No game file for "train/pick_and_place_simple-Nothing-None-Shelf-999/trial_T0"',
    );
    expect(io.err()).toContain(
      join(data, 'train/pick_and_place_simple-Nothing-None-Shelf-999/trial_T0/game.tw-pddl'),
    );
    expect(existsSync(join(directory, 'never.jsonl'))).toBe(false);
  });

  it('refuses a domain without expert generation and conflicting game flags', async () => {
    const io = capture(directory);
    expect(
      await runCli(
        ['data', 'expert', '--domain', 'alfworld', '--data', data, '--games', '2', '--game', GAME],
        io,
      ),
    ).toBe(2);
    expect(io.err()).toContain('Give either --games N or --game PATH');
  });
});
