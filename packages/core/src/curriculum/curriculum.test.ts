import { describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
} from '../testing/corridor-domain.js';
import { Curriculum } from './curriculum.js';
import { MutationTaskGenerator } from './mutation-task-generator.js';
import { TaskPool } from './task-pool.js';
import { rolloutGroupsFromTrajectories } from './task-value.js';

const adapter = createCorridorAdapter();

/** One episode of a uniformly random policy in the real corridor environment. */
async function randomRollout(task: Task, random: SeededRandom, maxSteps: number) {
  const environment = new CorridorEnvironment({ maxSteps });
  let observation = await environment.reset(task);
  const steps = [];
  for (;;) {
    const action = random.choice(observation.actions ?? ['go right']);
    const result = await environment.step(action);
    steps.push({ observation, action, reward: result.reward, done: result.done });
    observation = result.observation;
    if (result.done) break;
  }
  await environment.close();
  return { task, steps };
}

function seedTasks(): Task[] {
  // Near tasks are solved by chance, far ones never: a mix of zero and non-zero variance.
  return [
    corridorTask({ length: 3, keyRoom: 0, doorRoom: 0 }),
    corridorTask({ length: 3, keyRoom: 1, doorRoom: 0 }),
    corridorTask({ length: 3, keyRoom: 0, doorRoom: 1 }),
    corridorTask({ length: 9, keyRoom: 8, doorRoom: 0 }),
    corridorTask({ length: 9, keyRoom: 0, doorRoom: 8 }),
    corridorTask({ length: 3, keyRoom: 2, doorRoom: 2 }),
  ];
}

describe('Curriculum with the embedded generator on the corridor domain', () => {
  it('grows the pool from informative tasks, within lambda, with lineage', async () => {
    const curriculum = new Curriculum({
      pool: new TaskPool(seedTasks()),
      generator: new MutationTaskGenerator({ adapter }),
      config: { lambda: 0.25, tasksToExpand: 2, variantsPerTask: 2 },
    });
    const random = new SeededRandom(2024);
    const batchSize = 8;
    const groupSize = 4;
    let grown = 0;
    for (let iteration = 0; iteration < 6; iteration += 1) {
      const batch = curriculum.sampleBatch(batchSize, random);
      const generatedInBatch = batch.filter((task) => task.origin === 'generated').length;
      expect(generatedInBatch).toBeLessThanOrEqual(Math.floor(0.25 * batchSize));
      if (curriculum.pool.generatedTasks().length >= 2) expect(generatedInBatch).toBe(2);
      const rollouts = [];
      for (const task of new Map(batch.map((t) => [t.id, t])).values()) {
        for (let i = 0; i < groupSize; i += 1) rollouts.push(await randomRollout(task, random, 6));
      }
      const values = curriculum.observe(rolloutGroupsFromTrajectories(rollouts), iteration);
      const growth = await curriculum.grow(iteration, random);
      const informative = values.filter((value) => value.variance > 0);
      if (informative.length === 0) {
        expect(growth.skipped).toBe('no-informative-task');
        continue;
      }
      expect(growth.expanded.length).toBe(Math.min(2, informative.length));
      for (let i = 1; i < growth.expanded.length; i += 1) {
        expect(growth.expanded[i - 1]!.variance).toBeGreaterThanOrEqual(
          growth.expanded[i]!.variance,
        );
      }
      const expandedIds = new Set(growth.expanded.map((value) => value.taskId));
      for (const value of growth.expanded) {
        expect(informative.map((v) => v.taskId)).toContain(value.taskId);
      }
      for (const task of growth.added) {
        expect(task).toMatchObject({ origin: 'generated', iteration });
        expect(expandedIds.has(task.parentId!)).toBe(true);
        expect(curriculum.pool.lineage(task.id).at(-1)!.origin).toBe('seed');
      }
      grown += growth.added.length;
    }
    expect(grown).toBeGreaterThan(0);
    expect(curriculum.pool.size).toBe(seedTasks().length + grown);
    const instructions = curriculum.pool.tasks().map((task) => task.instruction);
    expect(new Set(instructions).size).toBe(instructions.length);
    // The far tasks need 18 steps: never solved within 6, so zero variance, never expanded.
    expect(curriculum.pool.stats(seedTasks()[3]!.id)!.timesSampled).toBeGreaterThan(0);
    expect(curriculum.pool.stats(seedTasks()[3]!.id)!.timesExpanded).toBe(0);
    expect(curriculum.pool.stats(seedTasks()[4]!.id)!.timesExpanded).toBe(0);
  });

  it('expands only tasks observed since the last grow', async () => {
    const pool = new TaskPool(seedTasks());
    const curriculum = new Curriculum({
      pool,
      generator: new MutationTaskGenerator({ adapter }),
      config: { tasksToExpand: 1, variantsPerTask: 1 },
    });
    const [a, b] = seedTasks();
    curriculum.observe([{ taskId: a!.id, rewards: [1, 0] }], 0);
    const first = await curriculum.grow(0, new SeededRandom(1));
    expect(first.expanded.map((v) => v.taskId)).toEqual([a!.id]);
    expect(first.added).toHaveLength(1);
    expect((await curriculum.grow(1, new SeededRandom(1))).skipped).toBe('no-informative-task');
    curriculum.observe([{ taskId: b!.id, rewards: [1, 1, 1, 0] }], 2);
    const third = await curriculum.grow(2, new SeededRandom(1));
    expect(third.expanded).toEqual([
      { taskId: b!.id, variance: 0.1875, meanReward: 0.75, rollouts: 4 },
    ]);
    expect(pool.stats(a!.id)!.timesExpanded).toBe(1);
  });

  it('respects maxPoolSize, maxExpansionsPerTask and expandGenerated', async () => {
    const seeds = seedTasks();
    const full = new Curriculum({
      pool: new TaskPool(seeds),
      generator: new MutationTaskGenerator({ adapter }),
      config: { maxPoolSize: 7, variantsPerTask: 3 },
    });
    full.observe([{ taskId: seeds[1]!.id, rewards: [1, 0] }]);
    expect((await full.grow(0, new SeededRandom(3))).added).toHaveLength(1);
    full.observe([{ taskId: seeds[1]!.id, rewards: [1, 0] }]);
    expect((await full.grow(1, new SeededRandom(3))).skipped).toBe('pool-full');

    const limited = new Curriculum({
      pool: new TaskPool(seeds),
      generator: new MutationTaskGenerator({ adapter }),
      config: { maxExpansionsPerTask: 1, expandGenerated: false, variantsPerTask: 1 },
    });
    limited.observe([{ taskId: seeds[2]!.id, rewards: [0, 1] }]);
    const [child] = (await limited.grow(0, new SeededRandom(4))).added;
    limited.observe([
      { taskId: seeds[2]!.id, rewards: [0, 1] },
      { taskId: child!.id, rewards: [0, 1] },
    ]);
    expect((await limited.grow(1, new SeededRandom(4))).skipped).toBe('no-informative-task');
  });

  it('off (ablation): seed tasks only, no growth', async () => {
    const seeds = seedTasks();
    const pool = new TaskPool(seeds);
    pool.add([
      {
        ...corridorTask({ length: 3, keyRoom: 2, doorRoom: 0 }),
        origin: 'generated',
        parentId: seeds[0]!.id,
        iteration: 0,
      },
    ]);
    const curriculum = new Curriculum({
      pool,
      generator: new MutationTaskGenerator({ adapter }),
      config: { enabled: false, lambda: 1 },
    });
    const batch = curriculum.sampleBatch(12, new SeededRandom(1));
    expect(batch.every((task) => task.origin === 'seed')).toBe(true);
    curriculum.observe([{ taskId: seeds[1]!.id, rewards: [1, 0] }]);
    const growth = await curriculum.grow(0, new SeededRandom(1));
    expect(growth).toMatchObject({ skipped: 'disabled', added: [] });
    expect(pool.size).toBe(seeds.length + 1);
  });

  it('rejects a bad config and rollouts of unknown tasks, naming the field', () => {
    const make = (config: Record<string, unknown>) => () =>
      new Curriculum({
        pool: new TaskPool(seedTasks()),
        generator: new MutationTaskGenerator({ adapter }),
        config,
      });
    let error: unknown;
    try {
      make({ lambda: 1.5 })();
    } catch (caught) {
      error = caught;
    }
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).field).toBe('curriculum.lambda');
    expect(make({ tasksToExpand: 0 })).toThrow(/curriculum\.tasksToExpand/);
    const curriculum = make({})();
    expect(() => curriculum.observe([{ taskId: 'elsewhere', rewards: [1] }])).toThrow(
      /"elsewhere", which is not in the curriculum's pool/,
    );
  });

  it('round-trips through JSON, pending values included, and reports corruption', async () => {
    const seeds = seedTasks();
    const original = new Curriculum({
      pool: new TaskPool(seeds),
      generator: new MutationTaskGenerator({ adapter }),
      config: { tasksToExpand: 1, variantsPerTask: 2 },
    });
    original.observe([{ taskId: seeds[1]!.id, rewards: [1, 0, 0] }], 0);
    await original.grow(0, new SeededRandom(8));
    original.observe([{ taskId: seeds[2]!.id, rewards: [1, 0] }], 1);
    const text = JSON.stringify(original);
    const restored = Curriculum.fromJSON(JSON.parse(text), {
      generator: new MutationTaskGenerator({ adapter }),
      config: { tasksToExpand: 1, variantsPerTask: 2 },
    });
    expect(JSON.stringify(restored)).toBe(text);
    // Resumed and uninterrupted runs grow identically from the same random state.
    const [a, b] = await Promise.all([
      original.grow(1, new SeededRandom(9)),
      restored.grow(1, new SeededRandom(9)),
    ]);
    expect(b).toEqual(a);
    expect(a.added.length).toBeGreaterThan(0);

    const corrupt = JSON.parse(text);
    corrupt.pending[0].variance = -1;
    expect(() =>
      Curriculum.fromJSON(corrupt, {
        generator: new MutationTaskGenerator({ adapter }),
        source: 'ckpt/curriculum.json',
      }),
    ).toThrow(/ckpt\/curriculum\.json is corrupt: field `pending\.0\.variance`/);
    const badPool = JSON.parse(text);
    badPool.pool.entries[0].task.domain = '';
    let error: unknown;
    try {
      Curriculum.fromJSON(badPool, { generator: new MutationTaskGenerator({ adapter }) });
    } catch (caught) {
      error = caught;
    }
    expect(CheckpointError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/field `pool\.entries\.0\.task\.domain`/);
  });
});
