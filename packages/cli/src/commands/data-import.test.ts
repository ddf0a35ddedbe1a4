/**
 * `dreamgym data import` end to end on a real captured trace (`__fixtures__/captured-trace.jsonl`:
 * an AI SDK agent on SmolLM2 behind `dreamgym model serve`, in the corridor, once inside an
 * episode with its outcome line and once as a deployed agent; recorded by
 * `@dreamgym/agents`' capture): the trajectories it writes are read back by core's loader and
 * built into a replay buffer by `dreamgym buffer build --offline`; bad records fail at file:line.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJsonl, type Trajectory, TrajectorySchema } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo } from '../cli.test-support.js';

const FIXTURE = join(import.meta.dirname, '__fixtures__', 'captured-trace.jsonl');

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-data-import-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function collect<T>(records: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const record of records) all.push(record);
  return all;
}

describe('dreamgym data import', () => {
  it('writes offline trajectories that core reads and the replay buffer takes', async () => {
    const io = captureIo({ cwd: directory });
    const code = await runCli(
      ['data', 'import', '--trace', FIXTURE, '--domain', 'corridor', '--out', 'out/imported.jsonl'],
      io,
    );
    expect(io.err()).toBe('');
    expect(code).toBe(0);
    const summary = JSON.parse(io.out()) as Record<string, unknown>;
    expect(summary).toEqual({
      output: join(directory, 'out/imported.jsonl'),
      calls: 5,
      trajectories: 2,
      steps: 5,
      successes: 0,
      withoutOutcome: 1,
      withoutActions: 0,
      withoutFinalObservation: 1,
    });
    const trajectories: Trajectory[] = await collect(
      readJsonl(join(directory, 'out/imported.jsonl'), TrajectorySchema),
    );
    expect(trajectories.map((trajectory) => trajectory.steps.map((step) => step.action))).toEqual([
      ['go right', 'go left'],
      ['go right', 'go left', 'go right'],
    ]);
    const [episode, deployed] = trajectories as [Trajectory, Trajectory];
    expect(episode).toMatchObject({
      id: 'import:corridor#1',
      source: 'offline',
      success: false,
      task: {
        domain: 'corridor',
        instruction: 'The key is in room 1. Take the key and open the door in room 2.',
      },
      finalObservation: {
        text: 'You walk to room 0. You are in room 0. The room is empty.',
        actions: ['go right'],
      },
    });
    expect(episode.steps.map((step) => step.reward)).toEqual([0, 0.25]);
    expect(episode.steps[1]!.observation.text).toMatch(/^You walk to room 1\./);
    expect(deployed.meta).toMatchObject({ outcome: 'unknown', importedFrom: `${FIXTURE}:4` });

    const build = captureIo({ cwd: directory });
    const built = await runCli(
      [
        'buffer',
        'build',
        '--domain',
        'corridor',
        '--no-dataset',
        '--offline',
        'out/imported.jsonl',
        '--out',
        'buffer',
        '--json',
      ],
      build,
    );
    expect(build.err()).not.toMatch(/error/i);
    expect(built).toBe(0);
    // Every step with a known next state is a transition: all of the episode's (its outcome
    // line gave the last one), all but the last of the deployed agent's.
    expect(JSON.parse(build.out())).toMatchObject({
      trajectories: 2,
      transitions: 4,
      stats: { bySource: { offline: 2 }, byDomain: { corridor: 2 } },
    });
  });

  it('names the file and line of a bad record, and the flags it needs', async () => {
    const lines = readFileSync(FIXTURE, 'utf8').trim().split('\n');
    const bad = join(directory, 'bad.jsonl');
    const call = JSON.parse(lines[3]!) as { toolCalls: Array<{ arguments: string }> };
    call.toolCalls[0]!.arguments = '{"move": "go right"}';
    await writeFile(
      bad,
      `${[...lines.slice(0, 3), JSON.stringify(call), ...lines.slice(4)].join('\n')}\n`,
    );
    const io = captureIo({ cwd: directory });
    expect(
      await runCli(
        ['data', 'import', '--trace', bad, '--domain', 'corridor', '--out', 'x.jsonl'],
        io,
      ),
    ).toBe(2);
    expect(io.err()).toContain(
      `${bad}:4 (field \`toolCalls.0.arguments\`): The arguments have no string "action"`,
    );
    const fixed = captureIo({ cwd: directory });
    expect(
      await runCli(
        [
          'data',
          'import',
          '--trace',
          bad,
          '--domain',
          'corridor',
          '--out',
          'x.jsonl',
          '--argument',
          'move',
        ],
        fixed,
      ),
    ).toBe(2);
    // With --argument move, the other calls' arguments are the ones without it.
    expect(fixed.err()).toMatch(new RegExp(`${bad}:1 .*no string "move"`));

    const missing = captureIo({ cwd: directory });
    expect(
      await runCli(['data', 'import', '--domain', 'corridor', '--out', 'x.jsonl'], missing),
    ).toBe(2);
    expect(missing.err()).toMatch(/--trace FILE is required/);
    const absent = captureIo({ cwd: directory });
    expect(
      await runCli(
        ['data', 'import', '--trace', 'nowhere.jsonl', '--domain', 'corridor', '--out', 'x.jsonl'],
        absent,
      ),
    ).toBe(2);
    expect(absent.err()).toMatch(/nowhere\.jsonl does not exist/);
  });
});
