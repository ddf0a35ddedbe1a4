import { readJsonlLines } from '@dreamgym/core/mdp';
import { describe, expect, it } from 'vitest';
import { extractAlfworldTask, mapAlfworldObservation } from './state-mapper.js';
import { alfworldDataDirectory } from './test-data-directory.js';

const RESET =
  '-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a bed 1, a desk 1, and a shelf 1.\n\nYour task is to: look at alarmclock under the desklamp.';

describe('mapAlfworldObservation', () => {
  it('strips the banner and moves the task line to meta.task', () => {
    expect(mapAlfworldObservation({ text: RESET })).toEqual({
      text: 'You are in the middle of a room. Looking quickly around you, you see a bed 1, a desk 1, and a shelf 1.',
      meta: { task: 'look at alarmclock under the desklamp.' },
    });
  });

  it('keeps step feedback as it is', () => {
    expect(mapAlfworldObservation({ text: 'Nothing happens.' })).toEqual({
      text: 'Nothing happens.',
    });
  });

  it('lists admissible commands as actions, without help and duplicates', () => {
    const observation = mapAlfworldObservation({
      text: 'On the desk 1, you see a pen 1.',
      admissibleCommands: ['go to bed 1', ' help', 'take pen 1 from desk 1', 'go to bed 1', 'look'],
    });
    expect(observation.actions).toEqual(['go to bed 1', 'take pen 1 from desk 1', 'look']);
  });

  it('maps every first observation of the expert data to a room description plus its task', async () => {
    let count = 0;
    for await (const { value } of readJsonlLines(
      `${alfworldDataDirectory()}/expert_trajectories.jsonl`,
    )) {
      const first = (value as { conversations: { value: string }[] }).conversations[0]!.value;
      const observation = mapAlfworldObservation({ text: first });
      expect(observation.text).toMatch(
        /^You are in the middle of a room\. Looking quickly around you, you see .+\.$/,
      );
      expect(observation.text).not.toContain('Welcome');
      expect(observation.text).not.toContain('Your task is to');
      expect(observation.meta?.task).toBe(extractAlfworldTask(first));
      expect(observation.meta?.task).toMatch(/^[a-z].*\.$/);
      count += 1;
    }
    expect(count).toBe(3_554);
  });
});
