import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatasetFormatError, type Trajectory } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWebarenaTrajectories } from './trajectories.js';

const RECORDED = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '__fixtures__',
  'trajectories',
);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'dreamgym-trajectories-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const collect = async (iterable: AsyncIterable<Trajectory>) => {
  const items: Trajectory[] = [];
  for await (const item of iterable) items.push(item);
  return items;
};

describe('loadWebarenaTrajectories', () => {
  it('loads a trajectory recorded from a browser episode (task 149 on stand-in pages)', async () => {
    const [trajectory, ...rest] = await collect(loadWebarenaTrajectories(RECORDED));
    expect(rest).toHaveLength(0);
    expect(trajectory).toMatchObject({
      task: { id: 'webarena:149', domain: 'webarena-lite' },
      source: 'offline',
      success: true,
    });
    expect(trajectory!.steps.map((step) => step.action)).toEqual([
      'click [3]',
      'type [7] [2/1/23] [0]',
      'type [8] [2/28/23] [0]',
      'click [9]',
      'stop []',
    ]);
    expect(trajectory!.steps[0]!.observation.text).toMatch(
      /^Tab 0 \(current\): Dashboard \/ Magento Admin\nURL: /,
    );
    expect(trajectory!.steps.at(-1)).toMatchObject({ reward: 1, done: true });
  });

  it('rejects another domain, and actions outside the grammar, with file, line and field', async () => {
    const line = (await import('node:fs'))
      .readFileSync(join(RECORDED, 'task-149.jsonl'), 'utf8')
      .trim();
    const record = JSON.parse(line);
    const foreign = { ...record, task: { ...record.task, domain: 'webshop' } };
    const badAction = {
      ...record,
      steps: [{ ...record.steps[0], action: 'click on the Reports link' }],
    };
    await writeFile(join(scratch, 'episodes.jsonl'), `${line}\n${JSON.stringify(foreign)}\n`);
    const wrongDomain = await collect(loadWebarenaTrajectories(scratch)).catch(
      (error: unknown) => error,
    );
    expect(DatasetFormatError.isInstance(wrongDomain)).toBe(true);
    expect(wrongDomain).toMatchObject({ line: 2, field: 'task.domain' });
    await writeFile(join(scratch, 'episodes.jsonl'), `${JSON.stringify(badAction)}\n`);
    await expect(collect(loadWebarenaTrajectories(scratch))).rejects.toMatchObject({
      line: 1,
      field: 'steps.0.action',
    });
  });

  it('says how to get trajectories when a directory has none', async () => {
    const empty = await mkdtemp(join(scratch, 'empty-'));
    await expect(collect(loadWebarenaTrajectories(empty))).rejects.toThrow(/dreamgym data record/);
  });
});
