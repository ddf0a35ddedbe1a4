/**
 * The loop's curriculum on a domain whose every task says one sentence (what tells the tasks
 * apart is the first state), and the warning when every variant of an iteration is rejected.
 * The corridor domain, its offline experience and the embedded defaults, as in the loop test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DomainAdapter } from '../adapter.js';
import type { Task } from '../mdp/schemas.js';
import { createCorridorAdapter } from '../testing/corridor-domain.js';
import { corridorLoop, corridorSeedTasks } from './corridor-loop.test-support.js';
import type { DreamGymConfigInput } from './dreamgym-config.js';

const SENTENCE = 'Take the key and open the door.';

/** A corridor task that names neither room: a map in its first state shows them. */
function oneSentence(task: Task): Task {
  const { keyRoom, doorRoom } = task.meta as { keyRoom: number; doorRoom: number };
  const first = task.initialObservation!;
  return {
    ...task,
    instruction: SENTENCE,
    initialObservation: {
      ...first,
      text: `${first.text} A map on the wall: the key is in room ${keyRoom}, the door in room ${doorRoom}.`,
    },
  };
}

const corridor = createCorridorAdapter();
const config: DreamGymConfigInput = {
  iterations: 4,
  evaluation: { environments: [] },
  simToReal: { realTransitionBudget: 0 },
};

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-loop-curriculum-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('DreamGymLoop curriculum, tasks that share one instruction sentence', () => {
  it('adds the variants whose first state is new', async () => {
    const adapter: DomainAdapter = {
      ...corridor,
      mutateTask: (task, random) => {
        const child = corridor.mutateTask(task, random);
        return child && oneSentence(child);
      },
    };
    const logs: string[] = [];
    const loop = await corridorLoop(
      join(directory, 'run'),
      { adapter, seedTasks: corridorSeedTasks().map(oneSentence), log: (line) => logs.push(line) },
      config,
    );
    const { metrics } = await loop.run();
    expect(metrics.at(-1)!.generatedTasks).toBeGreaterThan(0);
    expect(logs.filter((line) => line.includes('the curriculum added no task'))).toEqual([]);
  }, 120_000);

  it('says so, why and what to do, when every variant of an iteration is rejected', async () => {
    // A mutation that changes only what neither the instruction nor the first state shows.
    const adapter: DomainAdapter = {
      ...corridor,
      mutateTask: (task, random) => ({
        ...task,
        id: `${task.id}~${random.int(1e6)}`,
        origin: 'generated',
        parentId: task.id,
        meta: { ...task.meta, variant: random.int(1e6) },
      }),
    };
    const logs: string[] = [];
    const loop = await corridorLoop(
      join(directory, 'run'),
      { adapter, seedTasks: corridorSeedTasks().map(oneSentence), log: (line) => logs.push(line) },
      config,
    );
    const { metrics } = await loop.run();
    expect(metrics.at(-1)!.generatedTasks).toBe(0);
    const warnings = logs.filter((line) => line.includes('the curriculum added no task'));
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings[0]).toMatch(
      /^warning: iteration \d+: the curriculum added no task: all \d+ candidates for \d+ expanded tasks? were rejected \(\d+ exact-duplicate\), e\.g\. "Take the key and open the door\.": same instruction as "Take the key and open the door\." \(task corridor-8-\d-\d\), from the same first state\. What to do: a variant is a duplicate when its instruction is a pool task's .* give tasks that share a sentence their own first state \(`initialObservation`\) \(docs\/adding-a-benchmark\.md, step 7\)\.$/,
    );
  }, 120_000);
});
