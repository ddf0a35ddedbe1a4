import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, SeededRandom, type Task } from '@dreamgym/core';
import { describeAdapterConformance } from '@dreamgym/core/testing/vitest';
import { describe, expect, it } from 'vitest';
import { createAlfworldAdapter } from './adapter.js';
import { expertRecordToTrajectory } from './datasets/expert-trajectories.js';
import { alfworldDataDirectory } from './test-data-directory.js';
import { buildAlfworldVocabulary } from './vocabulary.js';

const dataDirectory = alfworldDataDirectory();
// A small, fixed sample of real records: the first 40 lines of the expert data.
const records = readFileSync(join(dataDirectory, 'expert_trajectories.jsonl'), 'utf8')
  .split('\n')
  .slice(0, 40)
  .map((line) => JSON.parse(line));
const trajectories = records.map((record, index) =>
  expertRecordToTrajectory(record, { file: 'expert_trajectories.jsonl', line: index + 1 }),
);
const vocabulary = buildAlfworldVocabulary(trajectories);
const adapter = createAlfworldAdapter({ vocabulary });

const goodRecord = JSON.stringify(records[0]);
const gameDirectory = 'train/pick_and_place_simple-Apple-None-Fridge-1/trial_T1';

describeAdapterConformance('alfworld', {
  adapter,
  validActions: [
    'go to countertop 1',
    'take apple 1 from countertop 1',
    'put apple 1 in/on fridge 1',
    'open drawer 2',
    'close drawer 2',
    'clean mug 1 with sinkbasin 1',
    'heat potato 1 with microwave 1',
    'cool apple 1 with fridge 1',
    'slice bread 1 with knife 1',
    'use desklamp 1',
    'examine shelf 10',
    'inventory',
    'look',
  ],
  invalidActions: [
    'put apple 1 in fridge 1',
    'take the apple',
    'go north',
    'toggle desklamp 1',
    '',
  ],
  rawObservations: records.flatMap((record: { conversations: { value: string }[] }) =>
    record.conversations
      .filter((_, index) => index % 2 === 0)
      .slice(0, 4)
      .map((turn) => ({ text: turn.value })),
  ),
  tasks: trajectories.map((trajectory) => trajectory.task as Task),
  malformedDatasets: [
    {
      description: 'a line that is not JSON',
      loader: 'trajectories',
      files: { 'expert_trajectories.jsonl': `${goodRecord}\n{"game": \n` },
      expected: { file: 'expert_trajectories.jsonl', line: 2 },
    },
    {
      description: 'a record without conversations',
      loader: 'trajectories',
      files: {
        'expert_trajectories.jsonl': `${goodRecord}\n${JSON.stringify({ ...records[0], conversations: undefined })}\n`,
      },
      expected: { file: 'expert_trajectories.jsonl', line: 2, field: 'conversations' },
    },
    {
      description: 'a turn value of the wrong type',
      loader: 'trajectories',
      files: {
        'expert_trajectories.jsonl': `${goodRecord}\n${goodRecord}\n${JSON.stringify({
          ...records[0],
          conversations: [{ from: 'human', value: 42 }],
        })}\n`,
      },
      expected: { file: 'expert_trajectories.jsonl', line: 3, field: 'conversations.0.value' },
    },
    {
      description: 'a game file that is not JSON',
      loader: 'tasks',
      files: { [`${gameDirectory}/game.tw-pddl`]: '{\n  "grammar": "x",\n  oops\n}' },
      expected: { file: `${gameDirectory}/game.tw-pddl`, line: 3 },
    },
    {
      description: 'a game file without a PDDL problem',
      loader: 'tasks',
      files: { [`${gameDirectory}/game.tw-pddl`]: JSON.stringify({ grammar: 'x' }) },
      expected: { file: `${gameDirectory}/game.tw-pddl`, field: 'pddl_problem' },
    },
  ],
  datasetDirectory: dataDirectory,
});

describe('createAlfworldAdapter', () => {
  it('builds the mutation vocabulary from dataDir on first use', async () => {
    const dataDir = alfworldDataDirectory();
    const adapter = createAlfworldAdapter({ dataDir });
    let task: Task | undefined;
    for await (const loaded of adapter.datasets.tasks.load(dataDir, { limit: 1 })) task = loaded;
    const mutated = adapter.mutateTask(task!, new SeededRandom(4));
    expect(mutated?.origin).toBe('generated');
    expect(mutated?.parentId).toBe(task!.id);
    expect(adapter.experienceHints?.revisitActionTypes).toContain('go to');
    expect(() =>
      createAlfworldAdapter({ dataDir: '/nonexistent' }).mutateTask(task!, new SeededRandom(1)),
    ).toThrow(/expert_trajectories\.jsonl is missing.*dataDir/);
  });

  it('rejects invalid options with a ConfigError naming the field', () => {
    expect(() => createAlfworldAdapter({ real: { port: -1 } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'real.port' }),
    );
    expect(ConfigError).toBeDefined();
  });

  it('explores and generates experts on its data folder, refusing a setting they do not take', async () => {
    const output = join(alfworldDataDirectory(), 'never-written.jsonl');
    // Refused before any engine starts: nothing is written.
    await expect(createAlfworldAdapter().explore!({ output })).rejects.toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', field: 'dataDir' }),
    );
    const adapter = createAlfworldAdapter({ dataDir: alfworldDataDirectory() });
    await expect(adapter.explore!({ output, settings: { epsilonn: 0.2 } })).rejects.toThrow(
      /Invalid ALFWorld exploration option.*epsilonn/,
    );
    await expect(
      adapter.generateExpertTrajectories!({ output, settings: { expert: 'oracle' } }),
    ).rejects.toThrow(/Invalid ALFWorld expert generation option `expert`/);
  });

  it('maps raw engine output through toObservation', () => {
    expect(
      adapter.toObservation({ text: '-= Welcome to TextWorld, ALFRED! =-\n\nYou arrive at loc 1.' })
        .text,
    ).toBe('You arrive at loc 1.');
  });
});
