/**
 * Expert generation on the real engine, checked against ALFWorld's own demonstrations:
 * for these train games the handcoded expert reproduces the shared
 * `expert_trajectories.jsonl` turn for turn (every command and every observation, the
 * welcome text included). The shared file was made with unseeded random choices (which
 * of two identical objects, a fallback move), so games whose demonstration drew one
 * differently cannot be replayed (14 of 24 sampled train games were identical); the games
 * here drew none, and cover three task types (one picks two objects).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DatasetNotFoundError, readJsonl } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AlfworldExpertRecord,
  AlfworldExpertRecordSchema,
  EXPERT_TRAJECTORIES_FILE,
  loadAlfworldExpertTrajectories,
} from '../datasets/expert-trajectories.js';
import { alfworldDataDirectory } from '../test-data-directory.js';
import { START_HOOK_TIMEOUT_MS, startTestEngineServer } from './engine-server.test-support.js';
import { type AlfworldExpertProgress, generateAlfworldExpertTrajectories } from './expert.js';
import type { AlfworldServerProcess } from './server-process.js';

const dataDir = alfworldDataDirectory();
const GAMES = [
  'train/look_at_obj_in_light-Bowl-None-DeskLamp-304/trial_T20190907_232204_574574',
  'train/pick_and_place_simple-CellPhone-None-Bed-306/trial_T20190909_012724_686117',
  'train/pick_two_obj_and_place-AlarmClock-None-Desk-307/trial_T20190907_013652_494441',
];

async function readRecords(file: string): Promise<AlfworldExpertRecord[]> {
  const records: AlfworldExpertRecord[] = [];
  for await (const record of readJsonl(file, AlfworldExpertRecordSchema)) records.push(record);
  return records;
}

describe('generateAlfworldExpertTrajectories on the real engine', () => {
  let server: AlfworldServerProcess;
  let directory: string;
  let shared: Map<string, AlfworldExpertRecord>;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dreamgym-expert-'));
    const records = await readRecords(join(dataDir, EXPERT_TRAJECTORIES_FILE));
    shared = new Map(records.map((record) => [record.game, record]));
    server = await startTestEngineServer(dataDir);
  }, START_HOOK_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    await rm(directory, { recursive: true, force: true });
  });

  it("reproduces the shared file's trajectories for train games, and resumes", async () => {
    const out = join(directory, 'expert.jsonl');
    const progress: AlfworldExpertProgress[] = [];
    const summary = await generateAlfworldExpertTrajectories({
      out,
      url: server.url,
      dataDir,
      games: GAMES,
      onProgress: (event) => progress.push(event),
    });
    expect(summary).toMatchObject({ games: 3, written: 3, skipped: 0, failed: [] });
    expect(progress.map(({ index, status }) => [index, status])).toEqual([
      [1, 'written'],
      [2, 'written'],
      [3, 'written'],
    ]);
    const generated = await readRecords(out);
    expect(generated.map((record) => record.game)).toEqual(GAMES);
    for (const record of generated) {
      // The whole record: game, task type, every command and every observation.
      expect(record).toEqual(shared.get(record.game));
    }
    // The adapter's loader reads the output as it reads the shared file.
    const copy = join(directory, 'data');
    await mkdir(copy);
    await writeFile(join(copy, EXPERT_TRAJECTORIES_FILE), await readFile(out));
    const loaded = [];
    for await (const trajectory of loadAlfworldExpertTrajectories(copy)) loaded.push(trajectory);
    expect(loaded.map((trajectory) => trajectory.task.id)).toEqual(GAMES);
    expect(loaded.every((trajectory) => trajectory.success)).toBe(true);

    // Resumable: a second run skips what is there and appends nothing.
    const again = await generateAlfworldExpertTrajectories({
      out,
      url: server.url,
      dataDir,
      games: GAMES,
    });
    expect(again).toMatchObject({ written: 0, skipped: 3, failed: [] });
    expect(await readRecords(out)).toHaveLength(3);
  }, 180_000);

  it('follows the PDDL planner when asked (it knows where things are: no search)', async () => {
    const out = join(directory, 'planner.jsonl');
    const game = GAMES[0]!;
    const summary = await generateAlfworldExpertTrajectories({
      out,
      url: server.url,
      games: [game],
      expert: 'planner',
    });
    expect(summary).toMatchObject({ written: 1, failed: [] });
    const [record] = await readRecords(out);
    const commands = record!.conversations.filter((turn) => turn.from === 'gpt');
    expect(commands.length).toBeLessThanOrEqual(
      shared.get(game)!.conversations.filter((turn) => turn.from === 'gpt').length,
    );
    expect(record!.conversations[0]).toEqual(shared.get(game)!.conversations[0]);
  }, 120_000);

  it('reports a game the expert does not solve within maxSteps and writes nothing for it', async () => {
    const out = join(directory, 'unsolved.jsonl');
    const progress: AlfworldExpertProgress[] = [];
    const summary = await generateAlfworldExpertTrajectories({
      out,
      url: server.url,
      games: [GAMES[1]!],
      maxSteps: 2,
      onProgress: (event) => progress.push(event),
    });
    expect(summary).toMatchObject({
      written: 0,
      failed: [{ game: GAMES[1], reason: 'not solved within 2 commands (maxSteps)' }],
    });
    expect(progress).toMatchObject([{ status: 'failed', steps: 2 }]);
    expect(await readFile(out, 'utf8')).toBe('');
  }, 60_000);

  it('names an unknown game and refuses evaluation games before starting anything', async () => {
    const out = join(directory, 'never.jsonl');
    await expect(
      generateAlfworldExpertTrajectories({
        out,
        dataDir,
        games: ['train/pick_and_place_simple-Nothing-None-Shelf-999/trial_T0'],
      }),
    ).rejects.toSatisfy(
      (error: unknown) =>
        DatasetNotFoundError.isInstance(error) &&
        error.path ===
          join(
            dataDir,
            'train/pick_and_place_simple-Nothing-None-Shelf-999/trial_T0/game.tw-pddl',
          ) &&
        /No game file for "train\/pick_and_place_simple-Nothing-None-Shelf-999\/trial_T0"/.test(
          error.message,
        ),
    );
    await expect(
      generateAlfworldExpertTrajectories({
        out,
        dataDir,
        games: ['valid_unseen/pick_and_place_simple-Book-None-SideTable-329/trial_T1'],
      }),
    ).rejects.toSatisfy(
      (error: unknown) => ConfigError.isInstance(error) && /evaluation split/.test(error.message),
    );
  });
});
