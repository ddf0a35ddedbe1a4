import { describe, expect, it } from 'vitest';
import type { Step, Task, Trajectory } from '../mdp/schemas.js';
import { worldOf } from '../mdp/task-world.js';
import { WorldMemory } from './world-memory.js';

function parse(text: string) {
  const match = /^(take|put|go to|open) (.+?)(?: (?:from|in) (.+))?$/.exec(text);
  if (!match) throw new Error(`not a command: ${text}`);
  return { type: match[1]!, args: [match[2]!, ...(match[3] ? [match[3]] : [])], text };
}

const task = (id: string, meta: Record<string, unknown> = {}): Task => ({
  id,
  domain: 'toy',
  instruction: 'put a key in box.',
  origin: 'seed',
  meta,
});

/** An episode: [action, the observation it led to]... */
function episode(
  id: string,
  pairs: Array<[string, string]>,
  source: Trajectory['source'] = 'offline',
): Trajectory {
  const steps: Step[] = pairs.map(([action], index) => ({
    observation: { text: index === 0 ? 'a room' : pairs[index - 1]![1] },
    action,
    reward: 0,
    done: false,
  }));
  return {
    task: task(id),
    steps,
    finalObservation: { text: pairs.at(-1)![1] },
    source,
    success: false,
  };
}

describe('WorldMemory', () => {
  const memory = WorldMemory.fromTrajectories(
    [
      episode('game-1', [
        ['go to shelf 1', 'On the shelf 1, you see a key 1.'],
        ['take key 1 from shelf 1', 'You pick up the key 1 from the shelf 1.'],
        ['go to table 1', 'On the table 1, you see nothing.'],
        ['go to shelf 1', 'On the shelf 1, you see nothing.'],
      ]),
      episode('game-2', [['go to shelf 1', 'On the shelf 1, you see a pen 2.']]),
      episode('game-3', [['go to shelf 1', 'On the shelf 1, you see a lamp 1.']], 'synthetic'),
    ],
    { parseAction: parse },
  );

  it("answers a one-entity action as the task's own world first showed it", () => {
    expect(memory.worlds).toBe(2);
    expect(memory.size).toBe(3);
    expect(memory.recall(task('game-1'), [], 'go to shelf 1')).toBe(
      'On the shelf 1, you see a key 1.',
    );
    expect(memory.recall(task('game-2'), [], 'go to shelf 1')).toBe(
      'On the shelf 1, you see a pen 2.',
    );
    // A variation of game 1 (another instruction, the same room).
    expect(memory.recall(task('game-1~pen', { world: 'game-1' }), [], 'go to shelf 1')).toBe(
      'On the shelf 1, you see a key 1.',
    );
  });

  it('knows nothing of unseen worlds, synthetic guesses, two-entity actions, or places the episode changed', () => {
    expect(memory.recall(task('game-3'), [], 'go to shelf 1')).toBeUndefined();
    expect(memory.recall(task('game-1'), [], 'take key 1 from shelf 1')).toBeUndefined();
    expect(memory.recall(task('game-1'), [], 'go to drawer 1')).toBeUndefined();
    expect(
      memory.recall(task('game-1'), [{ action: 'take key 1 from shelf 1' }], 'go to shelf 1'),
    ).toBeUndefined();
  });

  it('adds real episodes as they come, keeping what it already remembered', () => {
    const grown = WorldMemory.fromTrajectories([], { parseAction: parse });
    expect(grown.recall(task('game-4'), [], 'open drawer 1')).toBeUndefined();
    grown.add([
      episode('game-4', [['open drawer 1', 'You open the drawer 1. It holds a cup 1.']], 'real'),
    ]);
    grown.add([
      episode('game-4', [['open drawer 1', 'You open the drawer 1. It is empty.']], 'real'),
    ]);
    expect(grown.recall(task('game-4'), [], 'open drawer 1')).toBe(
      'You open the drawer 1. It holds a cup 1.',
    );
  });

  it('names the world by meta.world, else the task id', () => {
    expect(worldOf(task('a'))).toBe('a');
    expect(worldOf(task('a~b', { world: 'a' }))).toBe('a');
  });
});
