import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatasetFormatError, DatasetNotFoundError } from '../errors.js';
import { JsonlWriter, readJsonl, writeJsonl } from './jsonl.js';
import { type TrajectoryInput, TrajectorySchema } from './schemas.js';

const trajectory: TrajectoryInput = {
  task: { id: 'corridor-3-1-2', domain: 'corridor', instruction: 'Open the door.' },
  steps: [
    { observation: { text: 'You are in room 0.' }, action: 'go right', reward: 0, done: false },
    { observation: { text: 'You are in room 1.' }, action: 'take key', reward: 1, done: true },
  ],
  finalObservation: { text: 'You pick up the key.' },
  source: 'offline',
  success: true,
};

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-jsonl-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function readAll(file: string) {
  const records = [];
  for await (const record of readJsonl(file, TrajectorySchema)) records.push(record);
  return records;
}

async function failureOf(lines: string[]): Promise<DatasetFormatError> {
  const file = join(directory, 'trajectories.jsonl');
  await writeFile(file, `${lines.join('\n')}\n`);
  const error = await readAll(file).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(DatasetFormatError.isInstance(error)).toBe(true);
  return error as DatasetFormatError;
}

describe('JSONL trajectories', () => {
  it('round-trips records and applies schema defaults', async () => {
    const file = join(directory, 'out.jsonl');
    expect(await writeJsonl(file, TrajectorySchema, [trajectory, trajectory])).toBe(2);
    const records = await readAll(file);
    expect(records).toHaveLength(2);
    expect(records[0]!.task.origin).toBe('seed');
    expect(records[0]!.steps[1]!.action).toBe('take key');
  });

  it('skips blank lines but counts them in line numbers', async () => {
    const good = JSON.stringify(trajectory);
    const error = await failureOf([good, '', good, '{"task": ']);
    expect(error.line).toBe(4);
  });

  it('names file and line for a line that is not JSON', async () => {
    const good = JSON.stringify(trajectory);
    const error = await failureOf([good, good, '{"task": {"id": "x",']);
    expect(error.file).toBe(join(directory, 'trajectories.jsonl'));
    expect(error.line).toBe(3);
    expect(error.field).toBeUndefined();
    expect(error.message).toContain(`${join(directory, 'trajectories.jsonl')}:3`);
    expect(error.message).toMatch(/invalid JSON/);
  });

  it('names the missing field', async () => {
    const missing = structuredClone(trajectory) as Record<string, unknown>;
    delete (missing.task as Record<string, unknown>).instruction;
    const error = await failureOf([JSON.stringify(trajectory), JSON.stringify(missing)]);
    expect(error.line).toBe(2);
    expect(error.field).toBe('task.instruction');
    expect(error.message).toContain(':2 (field `task.instruction`)');
  });

  it('names a field of the wrong type deep inside the record', async () => {
    const wrong = structuredClone(trajectory) as { steps: Array<Record<string, unknown>> };
    wrong.steps[1]!.reward = 'one';
    const error = await failureOf([JSON.stringify(wrong)]);
    expect(error.line).toBe(1);
    expect(error.field).toBe('steps.1.reward');
    expect(error.message).toMatch(/expected number/);
  });

  it('rejects a wrong enum value with the allowed values', async () => {
    const error = await failureOf([JSON.stringify({ ...trajectory, source: 'dream' })]);
    expect(error.field).toBe('source');
    expect(error.message).toMatch(/offline/);
  });

  it('says what to pass when the file does not exist', async () => {
    const file = join(directory, 'nope.jsonl');
    const error = await readAll(file).catch((thrown: unknown) => thrown);
    expect(DatasetNotFoundError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toMatch(/DREAMGYM_DATA_DIR/);
  });

  it('writer validates before writing and appends', async () => {
    const file = join(directory, 'append.jsonl');
    const writer = await JsonlWriter.open(file, TrajectorySchema);
    await writer.write(trajectory);
    await expect(writer.write({ ...trajectory, success: 'yes' } as never)).rejects.toThrow(
      /field `success`/,
    );
    await writer.close();
    const again = await JsonlWriter.open(file, TrajectorySchema);
    await again.write(trajectory);
    await again.close();
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(2);
  });

  it('writeAll appends a batch in one write, or nothing when one record is invalid', async () => {
    const file = join(directory, 'batch.jsonl');
    const writer = await JsonlWriter.open(file, TrajectorySchema);
    await writer.writeAll([trajectory, trajectory]);
    await expect(
      writer.writeAll([trajectory, { ...trajectory, success: 'yes' } as never]),
    ).rejects.toThrow(/batch\.jsonl:4.*field `success`/s);
    await writer.writeAll([]);
    await writer.close();
    expect(writer.written).toBe(2);
    expect(await readAll(file)).toHaveLength(2);
  });

  it('resolves to where each line lies in the file, also after reopening it for appending', async () => {
    const file = join(directory, 'spans.jsonl');
    const first = await JsonlWriter.open(file, TrajectorySchema);
    const [one] = await first.writeAll([{ ...trajectory, id: 'é-1' }]);
    await first.close();
    const again = await JsonlWriter.open(file, TrajectorySchema);
    expect(again.bytes).toBe(one!.end + 1);
    const spans = [
      one!,
      ...(await again.writeAll([
        { ...trajectory, id: 'ü-2' },
        { ...trajectory, id: 't-3' },
      ])),
      await again.write({ ...trajectory, id: 't-4' }),
    ];
    await again.close();
    const bytes = await readFile(file);
    expect(again.bytes).toBe(bytes.length);
    expect(
      spans.map((span) => JSON.parse(bytes.toString('utf8', span.start, span.end)).id),
    ).toEqual(['é-1', 'ü-2', 't-3', 't-4']);
  });

  it('writeJsonl leaves the old file intact when a record is invalid', async () => {
    const file = join(directory, 'atomic.jsonl');
    await writeJsonl(file, TrajectorySchema, [trajectory]);
    const before = await readFile(file, 'utf8');
    await expect(
      writeJsonl(file, TrajectorySchema, [trajectory, { ...trajectory, steps: 3 } as never]),
    ).rejects.toThrow(/field `steps`/);
    expect(await readFile(file, 'utf8')).toBe(before);
  });
});
