import { describe, expect, it } from 'vitest';
import { TrajectorySchema } from './schemas.js';
import { trajectoryToTransitions } from './transitions.js';

const trajectory = TrajectorySchema.parse({
  id: 'traj-1',
  task: { id: 't1', domain: 'corridor', instruction: 'Open the door.' },
  steps: [
    { observation: { text: 's0' }, action: 'go right', reward: 0, done: false },
    { observation: { text: 's1' }, action: 'take key', reward: 0, done: false },
    { observation: { text: 's2' }, action: 'open door', reward: 1, done: true },
  ],
  finalObservation: { text: 's3' },
  source: 'offline',
  success: true,
});

describe('trajectoryToTransitions', () => {
  it('links each step to the next state and labels the outcome', () => {
    const transitions = trajectoryToTransitions(trajectory);
    expect(
      transitions.map((t) => [t.state.text, t.action, t.nextState.text, t.reward, t.done]),
    ).toEqual([
      ['s0', 'go right', 's1', 0, false],
      ['s1', 'take key', 's2', 0, false],
      ['s2', 'open door', 's3', 1, true],
    ]);
    expect(transitions.map((t) => t.id)).toEqual(['traj-1#0', 'traj-1#1', 'traj-1#2']);
    expect(transitions.every((t) => t.trajectorySuccess === true && t.source === 'offline')).toBe(
      true,
    );
  });

  it('drops the last step when its outcome was never observed', () => {
    const { finalObservation: _, ...withoutFinal } = trajectory;
    const transitions = trajectoryToTransitions(withoutFinal);
    expect(transitions).toHaveLength(2);
    expect(transitions.at(-1)!.nextState.text).toBe('s2');
  });
});
