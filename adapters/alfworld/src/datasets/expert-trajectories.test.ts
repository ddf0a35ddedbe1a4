import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DatasetFormatError, type Trajectory, TrajectorySchema } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { alfworldDataDirectory } from '../test-data-directory.js';
import { loadAlfworldExpertTrajectories } from './expert-trajectories.js';

async function collect(iterable: AsyncIterable<Trajectory>): Promise<Trajectory[]> {
  const items: Trajectory[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

describe('loadAlfworldExpertTrajectories', () => {
  it('loads all 3,554 train trajectories as successful offline episodes', async () => {
    const trajectories = await collect(loadAlfworldExpertTrajectories(alfworldDataDirectory()));
    expect(trajectories).toHaveLength(3_554);
    const first = trajectories[0]!;
    expect(TrajectorySchema.safeParse(first).success).toBe(true);
    expect(first.task).toMatchObject({
      id: 'train/look_at_obj_in_light-AlarmClock-None-DeskLamp-301/trial_T20190907_174127_043461',
      domain: 'alfworld',
      instruction: 'look at alarmclock under the desklamp.',
      origin: 'seed',
      meta: {
        taskType: 'look_at_obj_in_light',
        split: 'train',
        objectType: 'alarmclock',
        receptacleType: 'desklamp',
        scene: 301,
      },
    });
    expect(first.task.initialObservation?.text).toMatch(/^You are in the middle of a room\./);
    expect(first.steps[0]!).toMatchObject({ action: 'go to shelf 1', reward: 0, done: false });
    expect(first.steps[1]!.observation.text).toBe('On the shelf 1, you see nothing.');
    for (const trajectory of trajectories) {
      const last = trajectory.steps.at(-1)!;
      expect(last.reward).toBe(1);
      expect(last.done).toBe(true);
      expect(trajectory.steps.slice(0, -1).every((step) => step.reward === 0 && !step.done)).toBe(
        true,
      );
      expect(trajectory.success).toBe(true);
      expect(trajectory.source).toBe('offline');
    }
    const steps = trajectories.reduce((total, trajectory) => total + trajectory.steps.length, 0);
    expect(steps).toBe(60_628);
  });

  it('respects limit and splits', async () => {
    const directory = alfworldDataDirectory();
    expect(await collect(loadAlfworldExpertTrajectories(directory, { limit: 5 }))).toHaveLength(5);
    expect(
      await collect(loadAlfworldExpertTrajectories(directory, { splits: ['valid_seen'] })),
    ).toHaveLength(0);
    await expect(
      collect(loadAlfworldExpertTrajectories(directory, { splits: ['test'] })),
    ).rejects.toSatisfy(ConfigError.isInstance);
  });

  it('names file, line and field of a malformed record', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'alfworld-expert-'));
    const file = join(directory, 'expert_trajectories.jsonl');
    const good = {
      game: 'train/pick_and_place_simple-Apple-None-Fridge-1/trial_T1',
      task_type: 'pick_and_place_simple',
      conversations: [
        {
          from: 'human',
          value: 'You are in the middle of a room.\n\nYour task is to: put some apple on fridge.',
        },
        { from: 'gpt', value: 'go to fridge 1' },
        { from: 'human', value: 'The fridge 1 is closed.' },
      ],
    };
    const cases: [object, string][] = [
      [
        { ...good, conversations: [...good.conversations, good.conversations[1]] },
        'conversations.3.from',
      ],
      [
        {
          ...good,
          conversations: [
            good.conversations[0],
            { from: 'gpt', value: 'go fridge' },
            good.conversations[2],
          ],
        },
        'conversations.1.value',
      ],
      [
        {
          ...good,
          conversations: [{ from: 'human', value: 'no task' }, ...good.conversations.slice(1)],
        },
        'conversations.0.value',
      ],
      [{ ...good, game: 'train/pick_and_place_simple/trial_T1' }, 'game'],
    ];
    try {
      for (const [record, field] of cases) {
        await writeFile(file, `${JSON.stringify(good)}\n${JSON.stringify(record)}\n`);
        const error = await collect(loadAlfworldExpertTrajectories(directory)).catch(
          (caught) => caught,
        );
        expect(DatasetFormatError.isInstance(error), field).toBe(true);
        expect(error).toMatchObject({ file, line: 2, field });
        expect(error.message).toContain(`${file}:2`);
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
