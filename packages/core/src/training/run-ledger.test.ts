import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CheckpointError, ConfigError } from '../errors.js';
import type { Transition } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { SeededRandom } from '../random/seeded-random.js';
import { ReplayBuffer } from '../replay/replay-buffer.js';
import { corridorTasks, playCorridor } from '../testing/corridor-domain.js';
import { CheckpointStore } from './checkpoint-store.js';
import { LedgerCountersSchema, RunLedger, type RunLedgerOpenOptions } from './run-ledger.js';

/** A loop-like owner: its own counter, a metrics log beside the experience. */
const CountersSchema = LedgerCountersSchema.extend({
  metricsLines: z.number().int().nonnegative(),
  episodes: z.number().int().nonnegative(),
});
type Counters = z.infer<typeof CountersSchema>;

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-run-ledger-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const spec = () => ({
  runDirectory: directory,
  holds: 'a run',
  configFile: 'config.json',
  counters: CountersSchema,
  logs: { 'metrics.jsonl': 'metricsLines' as const },
});

const settings = { iterations: 3, seed: 4 };

function open(options: Partial<RunLedgerOpenOptions<Counters>> = {}) {
  return RunLedger.open(spec(), {
    settings,
    config: settings,
    seed: settings.seed,
    counters: { metricsLines: 0, episodes: 0 },
    ...options,
  });
}

/** One played corridor episode per call, as transitions. */
async function episodeTransitions(index: number): Promise<Transition[]> {
  const trajectory = await playCorridor(corridorTasks(4)[index % 4]!, new SeededRandom(index), {
    noise: 0.3,
    maxSteps: 6,
  });
  return trajectoryToTransitions(trajectory, { trajectoryId: `synthetic:0:${index}` });
}

const lines = async (file: string) =>
  (await readFile(join(directory, file), 'utf8')).split('\n').filter(Boolean);
const buffer = () => ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 32 }) });

describe('RunLedger', () => {
  it('starts a run: its configuration file, empty logs, counters at zero with the hash', async () => {
    const { ledger, checkpoint } = await open();
    expect(checkpoint).toBeUndefined();
    expect(JSON.parse(await readFile(join(directory, 'config.json'), 'utf8'))).toEqual(settings);
    expect(await lines('experience.jsonl')).toEqual([]);
    expect(await lines('metrics.jsonl')).toEqual([]);
    expect(ledger.counters).toMatchObject({
      iteration: 0,
      realTransitions: 0,
      syntheticTransitions: 0,
      experienceLines: 0,
      metricsLines: 0,
      episodes: 0,
      random: new SeededRandom(4).getState(),
    });
    expect(ledger.counters.configHash).toMatch(/^[0-9a-f]{8}$/);
    expect(ledger.trajectoryId('synthetic', 'task#1')).toBe('synthetic:0:task#1');
    ledger.counters.iteration = 7;
    expect(ledger.trajectoryId('real', 3)).toBe('real:7:3');
  });

  it('resumed mid-iteration, cuts the logs back to the checkpoint, re-adds its experience and continues the random stream', async () => {
    const { ledger } = await open();
    const first = await episodeTransitions(0);
    await ledger.appendExperience(first.map((transition) => ({ iteration: 0, transition })));
    await ledger.appendLines('metrics.jsonl', [JSON.stringify({ iteration: 0 })]);
    ledger.counters.iteration = 1;
    ledger.counters.episodes = 4;
    ledger.random.nextUint32();
    const name = await ledger.save({ note: 'one' });
    expect(name).toBe('iteration-000001');
    const continued = [ledger.random.nextUint32(), ledger.random.nextUint32()];
    // The next iteration, cut short by a crash before its checkpoint.
    const second = await episodeTransitions(1);
    await ledger.appendExperience(second.map((transition) => ({ iteration: 1, transition })));
    await ledger.appendLines('metrics.jsonl', [JSON.stringify({ iteration: 1 })]);
    expect(await lines('experience.jsonl')).toHaveLength(first.length + second.length);

    const replayed = buffer();
    const { ledger: resumed, checkpoint } = await open({ resume: true, replayBuffer: replayed });
    expect(checkpoint!.name).toBe('iteration-000001');
    expect(checkpoint!.json('note')).toBe('one');
    expect(resumed.counters).toMatchObject({
      iteration: 1,
      experienceLines: first.length,
      metricsLines: 1,
      episodes: 4,
    });
    const experience = await lines('experience.jsonl');
    expect(experience.map((line) => JSON.parse(line).transition.id)).toEqual(
      first.map((transition) => transition.id),
    );
    expect(await lines('metrics.jsonl')).toEqual([JSON.stringify({ iteration: 0 })]);
    expect([...replayed.transitions()].map((transition) => transition.id)).toEqual(
      first.map((transition) => transition.id),
    );
    expect([resumed.random.nextUint32(), resumed.random.nextUint32()]).toEqual(continued);
    // The resumed run appends after what the checkpoint covers.
    await resumed.appendExperience(second.map((transition) => ({ iteration: 1, transition })));
    expect(resumed.counters.experienceLines).toBe(first.length + second.length);
  });

  it('refuses a folder that holds a checkpoint unless asked to resume', async () => {
    const { ledger } = await open();
    await ledger.save({});
    await expect(open()).rejects.toThrow(ConfigError);
    await expect(open()).rejects.toThrow(
      `${directory} already holds a run (checkpoint iteration-000000). Pass --resume to continue it, or choose another --run-dir.`,
    );
  });

  it('refuses to resume with another configuration, naming its file, unless the owner accepts the change', async () => {
    const { ledger } = await open();
    await ledger.save({});
    const other = { ...settings, iterations: 5 };
    const refused = open({ resume: true, settings: other });
    await expect(refused).rejects.toThrow(CheckpointError);
    await expect(open({ resume: true, settings: other })).rejects.toThrow(
      `The checkpoint in ${directory} was written with another configuration (see ${join(directory, 'config.json')}). Resume with the same settings, or start a new --run-dir.`,
    );
    const { ledger: extended } = await open({
      resume: true,
      settings: other,
      onConfigChange: (counters, checkpoint) => {
        expect(checkpoint.name).toBe('iteration-000000');
        counters.configHash = 'accepted';
      },
    });
    expect(extended.counters.configHash).toBe('accepted');
  });

  it('names the file when a checkpoint holds counters of another version, or a log it covers is gone', async () => {
    const store = new CheckpointStore(join(directory, 'checkpoints'));
    await store.save('iteration-000002', { counters: { iteration: 2, steps: 10 } });
    await expect(open({ resume: true })).rejects.toThrow(CheckpointError);
    await expect(open({ resume: true })).rejects.toThrow(
      new RegExp(
        `^${join(directory, 'checkpoints', 'iteration-000002', 'counters.json')} holds counters this version cannot read \\(.*realTransitions.*\\); the run was written by another version\\. Start a new --run-dir\\.$`,
      ),
    );

    await rm(join(directory, 'checkpoints'), { recursive: true });
    const { ledger } = await open();
    await ledger.appendExperience(
      (await episodeTransitions(2)).map((transition) => ({ iteration: 0, transition })),
    );
    await ledger.save({});
    await writeFile(join(directory, 'experience.jsonl'), '');
    await expect(open({ resume: true })).rejects.toThrow(
      `${join(directory, 'experience.jsonl')} holds fewer lines than the checkpoint covers`,
    );
  });

  it('counts only the logs it keeps', async () => {
    const { ledger } = await open();
    await expect(ledger.appendLines('episodes.jsonl', ['{}'])).rejects.toThrow(
      'episodes.jsonl is not a log of this run folder.',
    );
  });
});
