/**
 * The __TITLE__ adapter against core's conformance suite. Every check fails with a
 * NotImplementedError until its part is written; replace the example data below with real
 * records of the domain as you go (docs/adding-a-benchmark.md).
 */
import type { Task } from '@dreamgym/core';
import {
  describeAdapterConformance,
  describeEnvironmentConformance,
} from '@dreamgym/core/testing/vitest';
import { describe, expect, it } from 'vitest';
import { create__PASCAL__Adapter } from './adapter.js';
import { __CAMEL__RealUnavailable } from './real/connect.js';

const adapter = create__PASCAL__Adapter();

// Replace with a real task of the benchmark (as your tasks loader yields it).
const task: Task = {
  id: '__NAME__:example',
  domain: '__NAME__',
  instruction: 'An example instruction of the benchmark.',
  origin: 'seed',
  meta: { split: 'train' },
};

const trajectoryLine = JSON.stringify({
  task,
  steps: [
    { observation: { text: 'the first state' }, action: 'an action', reward: 0, done: false },
  ],
  source: 'offline',
  success: false,
});

describeAdapterConformance('__NAME__', {
  adapter,
  // Replace: actions your grammar accepts, and some it must reject.
  validActions: ['an action of the grammar'],
  invalidActions: ['', 'an action outside the grammar'],
  // Replace: raw outputs recorded from the real environment (in __fixtures__/).
  rawObservations: ['a raw output of the real environment'],
  tasks: [task],
  // Keep the file names and lines in step with your loaders' layout.
  malformedDatasets: [
    {
      description: 'a trajectory line that is not JSON',
      loader: 'trajectories',
      files: { 'trajectories.jsonl': `${trajectoryLine}\n{"task": \n` },
      expected: { file: 'trajectories.jsonl', line: 2 },
    },
    {
      description: 'a task without an instruction',
      loader: 'tasks',
      files: { 'tasks.jsonl': `${JSON.stringify({ ...task, instruction: undefined })}\n` },
      expected: { file: 'tasks.jsonl', line: 1, field: 'instruction' },
    },
  ],
});

// The real environment's checks need its engine: where this machine lacks it, they are
// skipped, each with the reason __CAMEL__RealUnavailable gives (src/real/connect.ts).
describeEnvironmentConformance(
  '__NAME__ real environment',
  {
    createEnvironment: () => adapter.connectReal({}),
    tasks: [task],
  },
  { skip: __CAMEL__RealUnavailable() },
);

describe('create__PASCAL__Adapter', () => {
  it('proposes candidate actions the grammar accepts for a state', () => {
    // Replace with a state of the domain that has something to act on.
    const candidates = adapter.candidateActions({ text: 'a state of the domain' }, []);
    expect(candidates.length).toBeGreaterThan(0);
    for (const candidate of candidates) adapter.parseAction(candidate);
  });

  it('rejects invalid options with a ConfigError naming the field', () => {
    expect(() => create__PASCAL__Adapter({ real: { maxSteps: 0 } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'real.maxSteps' }),
    );
  });
});
