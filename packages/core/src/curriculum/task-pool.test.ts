import { describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError, InvalidArgumentError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import { corridorTask } from '../testing/corridor-domain.js';
import { batchComposition, TaskPool } from './task-pool.js';

function seeds(count: number): Task[] {
  return Array.from({ length: count }, (_, index) =>
    corridorTask({ length: 6, keyRoom: index % 6, doorRoom: (index + 2) % 6 }, `seed-${index}`),
  );
}

function child(parent: Task, index: number, iteration = 1): Task {
  return {
    ...parent,
    id: `${parent.id}~${index}`,
    instruction: `${parent.instruction} Variant ${index}.`,
    origin: 'generated',
    parentId: parent.id,
    iteration,
  };
}

function poolWith(seedCount: number, generatedCount: number): TaskPool {
  const pool = new TaskPool(seeds(seedCount));
  const parents = pool.seedTasks();
  pool.add(
    Array.from({ length: generatedCount }, (_, index) =>
      child(parents[index % parents.length]!, index),
    ),
  );
  return pool;
}

describe('batchComposition', () => {
  it('gives floor(lambda * size) generated tasks, capped by those available', () => {
    expect(batchComposition(10, 0.3, 100)).toEqual({ seed: 7, generated: 3 });
    expect(batchComposition(10, 0.35, 100)).toEqual({ seed: 7, generated: 3 });
    expect(batchComposition(10, 0.3, 2)).toEqual({ seed: 8, generated: 2 });
    expect(batchComposition(10, 0.3, 0)).toEqual({ seed: 10, generated: 0 });
    expect(batchComposition(3, 0.2, 100)).toEqual({ seed: 3, generated: 0 }); // floor(0.6)
    expect(batchComposition(1, 0.5, 100)).toEqual({ seed: 1, generated: 0 });
    expect(batchComposition(0, 0.5, 100)).toEqual({ seed: 0, generated: 0 });
    expect(batchComposition(8, 0, 100)).toEqual({ seed: 8, generated: 0 });
    expect(batchComposition(8, 1, 100)).toEqual({ seed: 0, generated: 8 });
    expect(batchComposition(8, 1, 5)).toEqual({ seed: 3, generated: 5 });
  });

  it('does not lose a task to float rounding: 0.29 * 100 is 29', () => {
    expect(0.29 * 100).toBeLessThan(29);
    expect(batchComposition(100, 0.29, 1000).generated).toBe(29);
    expect(batchComposition(10, 0.7, 1000).generated).toBe(7);
  });

  it('rejects a bad size or lambda', () => {
    expect(() => batchComposition(-1, 0.3, 1)).toThrow(InvalidArgumentError);
    expect(() => batchComposition(2.5, 0.3, 1)).toThrow(InvalidArgumentError);
    expect(() => batchComposition(4, 1.2, 1)).toThrow(/lambda must be in \[0, 1\]/);
    expect(() => batchComposition(4, Number.NaN, 1)).toThrow(ConfigError);
  });
});

describe('TaskPool.sampleBatch', () => {
  it('holds the lambda bound exactly over many seeded batches', () => {
    const random = new SeededRandom(11);
    for (const lambda of [0, 0.2, 0.25, 0.3, 0.5, 0.77, 1]) {
      for (const [seedCount, generatedCount] of [
        [5, 0],
        [5, 1],
        [3, 4],
        [12, 30],
      ] as const) {
        const pool = poolWith(seedCount, generatedCount);
        for (const size of [1, 2, 3, 5, 8, 13, 40]) {
          for (let draw = 0; draw < 5; draw += 1) {
            const batch = pool.sampleBatch(size, lambda, random);
            const generated = batch.filter((task) => task.origin === 'generated').length;
            expect(batch).toHaveLength(size);
            expect(generated).toBe(Math.min(Math.floor(lambda * size + 1e-9), generatedCount));
            expect(generated).toBeLessThanOrEqual(lambda * size + 1e-9);
            for (const task of batch) expect(pool.has(task.id)).toBe(true);
          }
        }
      }
    }
  });

  it('is all seed tasks while none are generated, and with lambda 0', () => {
    const random = new SeededRandom(2);
    expect(
      poolWith(4, 0)
        .sampleBatch(6, 1, random)
        .every((t) => t.origin === 'seed'),
    ).toBe(true);
    expect(
      poolWith(4, 9)
        .sampleBatch(6, 0, random)
        .every((t) => t.origin === 'seed'),
    ).toBe(true);
  });

  it('draws without repeats while the group lasts and counts samples', () => {
    const pool = poolWith(6, 10);
    const batch = pool.sampleBatch(10, 0.4, new SeededRandom(3));
    const ids = batch.map((task) => task.id);
    expect(new Set(ids).size).toBe(10); // 6 seed + 4 generated, all distinct
    const total = pool.tasks().reduce((sum, task) => sum + pool.stats(task.id)!.timesSampled, 0);
    expect(total).toBe(10);
    for (const id of ids) expect(pool.stats(id)!.timesSampled).toBe(1);
    // 9 seed places over 3 seed tasks: each exactly 3 times.
    const small = poolWith(3, 0);
    const counts = new Map<string, number>();
    for (const task of small.sampleBatch(9, 0.3, new SeededRandom(4))) {
      counts.set(task.id, (counts.get(task.id) ?? 0) + 1);
    }
    expect([...counts.values()]).toEqual([3, 3, 3]);
  });

  it('is reproducible from the random state', () => {
    const a = poolWith(8, 8).sampleBatch(8, 0.5, new SeededRandom(9));
    const b = poolWith(8, 8).sampleBatch(8, 0.5, new SeededRandom(9));
    const c = poolWith(8, 8).sampleBatch(8, 0.5, new SeededRandom(10));
    expect(b.map((t) => t.id)).toEqual(a.map((t) => t.id));
    expect(c.map((t) => t.id)).not.toEqual(a.map((t) => t.id));
  });

  it('says what to do when there are no seed tasks', () => {
    expect(() => new TaskPool().sampleBatch(4, 0.5, new SeededRandom(1))).toThrow(
      /no seed tasks.*load seed tasks/,
    );
    expect(new TaskPool().sampleBatch(0, 0.5, new SeededRandom(1))).toEqual([]);
  });
});

describe('TaskPool lineage', () => {
  it('records parentId, iteration and origin, and walks lineage and children', () => {
    const pool = new TaskPool(seeds(2));
    const root = pool.get('seed-0')!;
    const first = child(root, 1, 1);
    const second = child(first, 2, 3);
    pool.add([first, second]);
    expect(pool.get(second.id)).toMatchObject({
      origin: 'generated',
      parentId: first.id,
      iteration: 3,
    });
    expect(pool.lineage(second.id).map((t) => t.id)).toEqual([second.id, first.id, 'seed-0']);
    expect(pool.children('seed-0').map((t) => t.id)).toEqual([first.id]);
    expect(pool.seedTasks()).toHaveLength(2);
    expect(pool.generatedTasks()).toHaveLength(2);
    expect(pool.lineage('unknown')).toEqual([]);
  });

  it('rejects duplicate ids, orphans and invalid tasks, naming the field, and adds nothing', () => {
    const pool = new TaskPool(seeds(2));
    const root = pool.get('seed-0')!;
    const expectConfigError = (action: () => unknown, field: string, message: RegExp) => {
      let error: unknown;
      try {
        action();
      } catch (caught) {
        error = caught;
      }
      expect(ConfigError.isInstance(error)).toBe(true);
      expect((error as ConfigError).field).toBe(field);
      expect((error as Error).message).toMatch(message);
    };
    expectConfigError(
      () => pool.add([child(root, 1), { ...child(root, 2), id: 'seed-1' }]),
      '1.id',
      /already taken/,
    );
    expectConfigError(
      () => pool.add([{ ...child(root, 3), parentId: 'nowhere' }]),
      '0.parentId',
      /not in the pool/,
    );
    expectConfigError(
      () => pool.add([{ ...child(root, 4), parentId: undefined }]),
      '0.parentId',
      /no parentId/,
    );
    expectConfigError(
      () => pool.add([{ ...child(root, 5), instruction: '' }]),
      '0.instruction',
      /pool/,
    );
    expect(pool.size).toBe(2);
    // A parent earlier in the same call is fine.
    const first = child(root, 6);
    pool.add([first, child(first, 7)]);
    expect(pool.size).toBe(4);
  });

  it('records values and expansions and refuses unknown tasks', () => {
    const pool = new TaskPool(seeds(1));
    pool.recordValue({ taskId: 'seed-0', variance: 0.25, meanReward: 0.5, rollouts: 4 }, 7);
    pool.recordExpanded('seed-0');
    expect(pool.stats('seed-0')).toEqual({
      timesSampled: 0,
      timesObserved: 1,
      timesExpanded: 1,
      lastVariance: 0.25,
      lastMeanReward: 0.5,
      lastObservedIteration: 7,
    });
    expect(() => pool.recordExpanded('nope')).toThrow(
      /"nope" is not in the curriculum's task pool/,
    );
  });
});

describe('TaskPool JSON snapshots', () => {
  it('round-trips tasks, lineage and statistics through JSON text', () => {
    const pool = poolWith(3, 4);
    pool.sampleBatch(5, 0.4, new SeededRandom(1));
    pool.recordValue({ taskId: 'seed-1', variance: 0.1875, meanReward: 0.25, rollouts: 4 }, 2);
    pool.recordExpanded('seed-1');
    const restored = TaskPool.fromJSON(JSON.parse(JSON.stringify(pool)));
    expect(restored.toJSON()).toEqual(pool.toJSON());
    expect(restored.tasks().map((t) => t.id)).toEqual(pool.tasks().map((t) => t.id));
    const generated = restored.generatedTasks()[0]!;
    expect(restored.lineage(generated.id)).toHaveLength(2);
    expect(restored.stats('seed-1')).toEqual(pool.stats('seed-1'));
  });

  it('names the field of a corrupt snapshot', () => {
    const snapshot: unknown = JSON.parse(JSON.stringify(poolWith(2, 2)));
    /** The snapshot with the field at `path` set to `value`, or removed when `value` is undefined. */
    const corrupt = (path: Array<string | number>, value?: unknown): unknown => {
      const copy = structuredClone(snapshot);
      let node = copy as Record<string | number, unknown>;
      for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
      const last = path.at(-1)!;
      if (value === undefined) delete node[last];
      else node[last] = value;
      return copy;
    };
    const attempt = (value: unknown): CheckpointError => {
      try {
        TaskPool.fromJSON(value, { source: 'run/checkpoint-3/curriculum.json' });
      } catch (error) {
        expect(CheckpointError.isInstance(error)).toBe(true);
        return error as CheckpointError;
      }
      throw new Error('fromJSON accepted a corrupt snapshot');
    };
    const missing = attempt(corrupt(['entries', 3, 'task', 'instruction']));
    expect(missing.message).toMatch(/run\/checkpoint-3\/curriculum\.json/);
    expect(missing.message).toMatch(/field `entries\.3\.task\.instruction`/);
    expect(missing.path).toBe('run/checkpoint-3/curriculum.json');
    expect(attempt(corrupt(['entries', 1, 'stats', 'timesSampled'], -2)).message).toMatch(
      /field `entries\.1\.stats\.timesSampled`/,
    );
    expect(attempt(corrupt(['version'], 2)).message).toMatch(/field `version`/);
    expect(attempt(corrupt(['entries', 2, 'task', 'parentId'], 'ghost')).message).toMatch(
      /field `entries\.2\.task\.parentId`.*"ghost"/,
    );
    expect(attempt(corrupt(['entries', 1, 'task', 'id'], 'seed-0')).message).toMatch(
      /field `entries\.1\.task\.id`: duplicate task id "seed-0"/,
    );
    expect(attempt(corrupt(['entries'], 'nope')).message).toMatch(/field `entries`/);
  });
});
