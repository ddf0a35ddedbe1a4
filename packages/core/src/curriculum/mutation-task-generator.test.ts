import { describe, expect, it } from 'vitest';
import type { Task } from '../mdp/schemas.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { SeededRandom } from '../random/seeded-random.js';
import { corridorTask, createCorridorAdapter } from '../testing/corridor-domain.js';
import { MutationTaskGenerator } from './mutation-task-generator.js';
import { normalizeInstruction } from './task-deduplicator.js';
import type { TaskRejection } from './task-generator.js';

const adapter = createCorridorAdapter();

describe('MutationTaskGenerator on the corridor domain', () => {
  it('writes valid corridor tasks with lineage, spread over the parents', async () => {
    const parents = [
      corridorTask({ length: 8, keyRoom: 1, doorRoom: 5 }),
      corridorTask({ length: 8, keyRoom: 6, doorRoom: 2 }),
    ];
    const generator = new MutationTaskGenerator({ adapter });
    const tasks = await generator.generate(parents, 5, {
      iteration: 3,
      random: new SeededRandom(1),
      existing: parents,
    });
    expect(tasks).toHaveLength(5);
    expect(tasks.filter((t) => t.parentId === parents[0]!.id)).toHaveLength(3);
    expect(tasks.filter((t) => t.parentId === parents[1]!.id)).toHaveLength(2);
    for (const task of tasks) {
      expect(task).toMatchObject({ origin: 'generated', iteration: 3, domain: 'corridor' });
      expect(task.meta).toMatchObject({ length: 8 });
      // The instruction matches the layout the environment will build from meta.
      const { keyRoom, doorRoom } = task.meta as { keyRoom: number; doorRoom: number };
      expect(task.instruction).toBe(
        `The key is in room ${keyRoom}. Take the key and open the door in room ${doorRoom}.`,
      );
    }
    expect(new Set(tasks.map((t) => t.id)).size).toBe(5);
  });

  it('rejects exact duplicates of the pool and of each other, retrying for the missing ones', async () => {
    // A 2-room corridor has 4 layouts; one is the parent, one is already in the pool.
    const parent = corridorTask({ length: 2, keyRoom: 0, doorRoom: 1 });
    const existing = [parent, corridorTask({ length: 2, keyRoom: 1, doorRoom: 1 })];
    const rejections: TaskRejection[] = [];
    const generator = new MutationTaskGenerator({ adapter, maxRounds: 50 });
    const tasks = await generator.generate([parent], 6, {
      iteration: 1,
      random: new SeededRandom(5),
      existing,
      onReject: (rejection) => rejections.push(rejection),
    });
    const instructions = tasks.map((t) => normalizeInstruction(t.instruction));
    expect(new Set(instructions).size).toBe(tasks.length);
    for (const task of existing) {
      expect(instructions).not.toContain(normalizeInstruction(task.instruction));
    }
    // Only the 2 remaining layouts can be new.
    expect(tasks).toHaveLength(2);
    expect(rejections.length).toBeGreaterThan(0);
    expect(
      rejections.every((r) => r.reason === 'exact-duplicate' && r.parentId === parent.id),
    ).toBe(true);
    expect(rejections[0]!.detail).toMatch(/same instruction as/);
  });

  it('is reproducible from the random state', async () => {
    const parent = corridorTask({ length: 10, keyRoom: 3, doorRoom: 7 });
    const run = (seed: number) =>
      new MutationTaskGenerator({ adapter }).generate([parent], 4, {
        iteration: 0,
        random: new SeededRandom(seed),
        existing: [parent],
      });
    const [a, b, c] = await Promise.all([run(42), run(42), run(43)]);
    expect(b).toEqual(a);
    expect(c.map((t) => t.id)).not.toEqual(a.map((t) => t.id));
  });

  it('reports parents the adapter cannot mutate', async () => {
    const foreign: Task = {
      id: 'not-a-corridor',
      domain: 'corridor',
      instruction: 'Do something else entirely.',
      origin: 'seed',
      meta: {},
    };
    const rejections: TaskRejection[] = [];
    const tasks = await new MutationTaskGenerator({ adapter }).generate([foreign], 3, {
      iteration: 0,
      random: new SeededRandom(1),
      existing: [foreign],
      onReject: (rejection) => rejections.push(rejection),
    });
    expect(tasks).toEqual([]);
    expect(rejections).toEqual([
      expect.objectContaining({ reason: 'mutation-failed', parentId: 'not-a-corridor' }),
    ]);
  });

  it('names the field when the adapter returns an invalid task', async () => {
    const parent = corridorTask({ length: 4, keyRoom: 1, doorRoom: 2 });
    const broken = {
      name: 'broken',
      mutateTask: (task: Task) => ({ ...task, id: `${task.id}-x`, instruction: '' }),
    };
    await expect(
      new MutationTaskGenerator({ adapter: broken }).generate([parent], 1, {
        iteration: 0,
        random: new SeededRandom(1),
        existing: [parent],
      }),
    ).rejects.toThrow(
      /broken adapter's mutateTask\(\) returned an invalid task .* field `instruction`/,
    );
  });

  it('with an embedder also rejects near-duplicates; the threshold must suit the domain', async () => {
    // Corridor instructions differ only in two room numbers: HashingEmbedder puts them at
    // a cosine of about 0.92-0.97, so 0.9 calls every new layout that starts from the same
    // first state (room 0 empty) a near-duplicate, and 0.99 none. A layout with the key or
    // the door in room 0 starts from another state: another task, whatever its instruction.
    const parent = corridorTask({ length: 10, keyRoom: 3, doorRoom: 7 });
    const rejections: TaskRejection[] = [];
    const strict = new MutationTaskGenerator({
      adapter,
      embedder: new HashingEmbedder(),
      similarityThreshold: 0.9,
      maxRounds: 2,
    });
    const others = await strict.generate([parent], 3, {
      iteration: 0,
      random: new SeededRandom(6),
      existing: [parent],
      onReject: (rejection) => rejections.push(rejection),
    });
    expect(others.map((task) => task.initialObservation!.text)).toEqual([
      'You enter the corridor. You are in room 0. You see a door.',
    ]);
    expect(rejections.length).toBeGreaterThanOrEqual(3);
    for (const rejection of rejections) {
      expect(rejection.reason).toBe('near-duplicate');
      expect(rejection.similarity).toBeGreaterThanOrEqual(0.9);
      expect(rejection.detail).toMatch(/from the same first state$/);
    }
    const lenient = new MutationTaskGenerator({
      adapter,
      embedder: new HashingEmbedder(),
      similarityThreshold: 0.99,
    });
    const some = await lenient.generate([parent], 3, {
      iteration: 0,
      random: new SeededRandom(6),
      existing: [parent],
    });
    expect(some).toHaveLength(3);
  });
});
