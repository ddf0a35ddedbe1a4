import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../random/seeded-random.js';
import { corridorTasks, optimalCorridorAction, playCorridor } from './corridor-domain.js';

describe('corridor expert play', () => {
  it('solves every layout in the optimal number of steps without noise', async () => {
    const tasks = corridorTasks(4);
    expect(tasks).toHaveLength(16);
    for (const task of tasks) {
      const { keyRoom, doorRoom } = task.meta as { keyRoom: number; doorRoom: number };
      const trajectory = await playCorridor(task, new SeededRandom(1), { noise: 0 });
      expect(trajectory.success).toBe(true);
      expect(trajectory.steps).toHaveLength(keyRoom + Math.abs(doorRoom - keyRoom) + 2);
      expect(trajectory.source).toBe('offline');
    }
  });

  it('reads the room and the key from the observation', () => {
    const [task] = corridorTasks(4).filter((candidate) => candidate.id === 'corridor-4-2-1');
    expect(optimalCorridorAction(task!, { text: 'You are in room 0.' })).toBe('go right');
    expect(optimalCorridorAction(task!, { text: 'You are in room 2. You see a key.' })).toBe(
      'take key',
    );
    expect(optimalCorridorAction(task!, { text: 'You are in room 2. You carry the key.' })).toBe(
      'go left',
    );
    expect(optimalCorridorAction(task!, { text: 'You are in room 1. You carry the key.' })).toBe(
      'open door',
    );
  });

  it('with noise, plays random admissible actions reproducibly and stops at maxSteps', async () => {
    const [task] = corridorTasks(5).slice(-1);
    const play = () =>
      playCorridor(task!, new SeededRandom(9), { noise: 1, maxSteps: 6, source: 'real' });
    const first = await play();
    expect(first.steps.length).toBeLessThanOrEqual(6);
    expect(first.source).toBe('real');
    for (const step of first.steps) expect(step.observation.actions).toContain(step.action);
    expect((await play()).steps.map((step) => step.action)).toEqual(
      first.steps.map((step) => step.action),
    );
  });
});
