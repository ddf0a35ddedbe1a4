import { describe, expect, it } from 'vitest';
import type { DomainAdapter } from '../adapter.js';
import type { Environment } from '../mdp/environment.js';
import type { StepResult, Task } from '../mdp/schemas.js';
import {
  type AdapterConformanceOptions,
  adapterConformanceChecks,
  type EnvironmentConformanceOptions,
  environmentConformanceChecks,
} from './conformance.js';
import { CorridorEnvironment, corridorTask, createCorridorAdapter } from './corridor-domain.js';
import {
  describeAdapterConformance,
  describeEnvironmentConformance,
} from './describe-conformance.js';

const task = corridorTask({ length: 4, keyRoom: 2, doorRoom: 1 });
const solution = ['go right', 'go right', 'take key', 'go left', 'open door'];
const environmentOptions: EnvironmentConformanceOptions = {
  createEnvironment: async () => new CorridorEnvironment(),
  tasks: [task, corridorTask({ length: 2, keyRoom: 0, doorRoom: 1 })],
  solution,
};

const trajectoryLine = JSON.stringify({
  task,
  steps: [{ observation: { text: 'room 0' }, action: 'go right', reward: 0, done: false }],
  source: 'offline',
  success: false,
});
const adapterOptions: AdapterConformanceOptions = {
  adapter: createCorridorAdapter(),
  validActions: ['go left', 'Go Right ', 'take key', 'open door'],
  invalidActions: ['fly', '', 'go up'],
  rawObservations: ['You are in room 0. You see a key.'],
  tasks: [task],
  malformedDatasets: [
    {
      description: 'a line that is not JSON',
      loader: 'trajectories',
      files: { 'trajectories.jsonl': `${trajectoryLine}\n{oops\n` },
      expected: { file: 'trajectories.jsonl', line: 2 },
    },
    {
      description: 'a task without an instruction',
      loader: 'tasks',
      files: {
        'tasks.jsonl': `${JSON.stringify(task)}\n${JSON.stringify({ id: 'x', domain: 'corridor' })}\n`,
      },
      expected: { file: 'tasks.jsonl', line: 2, field: 'instruction' },
    },
    {
      description: 'a step reward of the wrong type',
      loader: 'trajectories',
      files: { 'trajectories.jsonl': trajectoryLine.replace('"reward":0', '"reward":"0"') },
      expected: { file: 'trajectories.jsonl', line: 1, field: 'steps.0.reward' },
    },
  ],
};

// The reference domain passes the suite as users run it.
describeEnvironmentConformance('corridor', environmentOptions);
describeEnvironmentConformance('corridor without a solution (random play)', {
  ...environmentOptions,
  solution: undefined,
  maxSteps: 200,
});
describeAdapterConformance('corridor', adapterOptions);

async function failures(checks: Array<{ name: string; run(): Promise<void> }>) {
  const failed: Record<string, string> = {};
  for (const check of checks) {
    await check.run().catch((error: Error) => {
      failed[check.name] = error.message;
    });
  }
  return failed;
}

/** Wraps a working environment and breaks one part of its contract. */
function brokenEnvironment(
  breakage: Partial<Pick<Environment, 'step' | 'close'>> & {
    wrapStep?: (result: StepResult) => StepResult;
  },
): () => Promise<Environment> {
  return async () => {
    const inner = new CorridorEnvironment();
    return {
      reset: (t: Task) => inner.reset(t),
      step:
        breakage.step ??
        (async (action: string) => (breakage.wrapStep ?? ((r) => r))(await inner.step(action))),
      close: breakage.close ?? (() => inner.close()),
    };
  };
}

describe('the conformance suite catches broken environments', () => {
  it('flags an environment whose step() never throws', async () => {
    const failed = await failures(
      environmentConformanceChecks({
        ...environmentOptions,
        createEnvironment: brokenEnvironment({
          step: async () => ({
            observation: { text: 'ok' },
            reward: 0,
            done: false,
            truncated: false,
            info: {},
          }),
        }),
      }),
    );
    expect(failed['step() before reset() throws EnvironmentStateError']).toMatch(
      /the call succeeded/,
    );
    expect(
      failed['an episode ends with done, step() after done throws, reset() starts again'],
    ).toMatch(/did not end the episode/);
    expect(
      failed['an action outside the grammar is answered, not thrown, and flagged invalid'],
    ).toMatch(/invalidAction/);
  });

  it('flags observations that break the schema', async () => {
    const failed = await failures(
      environmentConformanceChecks({
        ...environmentOptions,
        createEnvironment: brokenEnvironment({
          wrapStep: (result) => ({ ...result, reward: Number.NaN }),
        }),
      }),
    );
    expect(
      failed['an episode ends with done, step() after done throws, reset() starts again'],
    ).toMatch(/reward/);
  });

  it('flags a close() that leaves the environment usable', async () => {
    const failed = await failures(
      environmentConformanceChecks({
        ...environmentOptions,
        createEnvironment: brokenEnvironment({ close: async () => {} }),
      }),
    );
    expect(Object.keys(failed)).toEqual([
      'close() is idempotent and the environment refuses work after it',
    ]);
  });
});

describe('the conformance suite catches broken adapters', () => {
  it('flags a lenient grammar, bad candidates, a bad mutation and loaders without locations', async () => {
    const good = createCorridorAdapter();
    const broken: DomainAdapter = {
      ...good,
      parseAction: (text) => ({ type: 'any', args: [], text }),
      candidateActions: () => ['go left', 'go left'],
      mutateTask: (t) => ({ ...t }),
      datasets: {
        trajectories: {
          async *load() {
            yield* [];
            throw new Error('bad data');
          },
        },
        tasks: good.datasets.tasks,
      },
    };
    const failed = await failures(adapterConformanceChecks({ ...adapterOptions, adapter: broken }));
    expect(
      failed['parseAction() rejects invalid actions with ActionParseError naming the action'],
    ).toMatch(/must throw ActionParseError/);
    expect(failed['candidateActions() proposes unique actions the grammar accepts']).toMatch(
      /duplicates/,
    );
    expect(
      failed['mutateTask() returns undefined or a new generated task derived from its parent'],
    ).toMatch(/generated/);
    expect(failed['datasets.trajectories rejects a line that is not JSON with file:line']).toMatch(
      /DatasetFormatError/,
    );
    expect(failed['loaders report a missing dataset directory with DatasetNotFoundError']).toMatch(
      /DatasetNotFoundError/,
    );
    expect(
      failed['datasets.tasks rejects a task without an instruction with file:line'],
    ).toBeUndefined();
  });
});
