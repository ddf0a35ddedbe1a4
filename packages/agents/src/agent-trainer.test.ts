/**
 * `AgentTrainer`'s run folder, where it is refused before any model or trainer starts (the
 * training itself, with SmolLM2, is checked by the agent examples' tests).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@dreamgym/core';
import { CorridorEnvironment, corridorTasks, createCorridorAdapter } from '@dreamgym/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentTrainer } from './agent-trainer.js';

let directory: string | undefined;
afterEach(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe('AgentTrainer run folder', () => {
  it('refuses a folder an earlier AgentTrainer kept (progress.json), saying what to do', async () => {
    directory = await mkdtemp(join(tmpdir(), 'dreamgym-agent-trainer-'));
    await writeFile(
      join(directory, 'progress.json'),
      JSON.stringify({ iteration: 1, lastUpdate: join(directory, 'iteration-0001'), metrics: [] }),
    );
    const start = AgentTrainer.start({
      baseURL: 'http://127.0.0.1:9/v1',
      model: 'smollm2',
      modelPath: join(directory, 'model.gguf'),
      environment: () => new CorridorEnvironment({ maxSteps: 4 }),
      adapter: createCorridorAdapter(),
      tasks: corridorTasks(4),
      play: async () => {},
      runDirectory: directory,
    });
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow(
      `${join(directory, 'progress.json')} is the record of an earlier AgentTrainer, which this version cannot resume (it keeps checkpoints/ and metrics.jsonl). Start a new runDirectory; the adapters in ${directory}/iteration-*/adapter stay usable.`,
    );
  });
});
