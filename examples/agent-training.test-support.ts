/**
 * The check both agent examples pass: the agent of `agent.ts`, imported as is, trained in the
 * synthetic ALFWorld with SmolLM2 behind the model server: its model calls are captured with
 * their token ids, the LoRA adapter's weights change, and the agent's later calls are answered
 * by the new adapter.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { type PlayEpisode, startAgentTraining } from './alfworld-agent-training.js';

const dataDir = resolve(process.env.DREAMGYM_DATA_DIR ?? resolve(import.meta.dirname, '../../shared/data'));
const sha = async (file: string) => createHash('sha256').update(await readFile(file)).digest('hex');

/**
 * Trains the agent of `agentFile` (whose module is `agent`, with exactly `exports`) for two
 * iterations through `play`, and checks what the examples promise.
 */
export async function checkAgentTraining(options: {
  agentFile: string;
  agent: Record<string, unknown>;
  exports: string[];
  play: PlayEpisode;
  /** More checks on the trained set-up, before it is closed. */
  afterTraining?: (training: Awaited<ReturnType<typeof startAgentTraining>>) => Promise<void>;
}): Promise<void> {
  const { agentFile, agent, play } = options;
  const before = await sha(agentFile);
  expect(Object.keys(agent).sort()).toEqual(options.exports);
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-agent-example-'));
  try {
    const runDirectory = join(scratch, 'run');
    const training = await startAgentTraining({
      play,
      dataDir,
      runDirectory,
      trainTasks: 2,
      groupSize: 3,
      tasksPerIteration: 1,
      maxSteps: 2,
      // Judged outside the environment (`reportReward`): shorter actions are better, so the
      // rewards of a group differ and every iteration has a learning signal.
      judge: (episode) =>
        -episode.steps.reduce((total, step) => total + step.action.length, 0) /
        Math.max(1, episode.steps.length) / 100,
    });
    try {
      const { trainer, capture, server } = training;
      const first = await trainer.iteration();
      expect(first.episodes).toBe(3);
      expect(first.modelCalls).toBeGreaterThanOrEqual(3);
      expect(first.samples).toBeGreaterThan(0);
      expect(first.servedModel).not.toBe(server.modelName);
      const adapterOne = join(runDirectory, 'iteration-0001', 'adapter', 'adapter_model.safetensors');
      expect(existsSync(adapterOne)).toBe(true);

      const second = await trainer.iteration();
      const adapterTwo = join(runDirectory, 'iteration-0002', 'adapter', 'adapter_model.safetensors');
      expect(second.samples).toBeGreaterThan(0);
      // The weights moved between the two updates.
      expect(await sha(adapterTwo)).not.toBe(await sha(adapterOne));

      // Every call of the second iteration went to the first iteration's adapter, and the
      // server answered as that adapter; each kept the prompt's and answer's token ids.
      const calls: Array<{ model: string; promptTokenIds?: number[]; completionTokenIds?: number[]; toolCalls: unknown[] }> = [];
      const { calls: playCalls } = await capture.episode('probe', async () => {
        const response = await capture.fetch(`${server.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: server.modelName, messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 4 }),
        });
        expect(((await response.json()) as { model: string }).model).toBe(second.servedModel);
      });
      calls.push(...playCalls);
      expect(calls[0]!.model).toBe(second.servedModel);
      expect(calls[0]!.promptTokenIds!.length).toBeGreaterThan(0);
      expect(calls[0]!.completionTokenIds!.length).toBeGreaterThan(0);
      expect(trainer.metrics.map((metrics) => metrics.servedModel)).toEqual([first.servedModel, second.servedModel]);
      await options.afterTraining?.(training);
    } finally {
      await training.close();
    }
    expect(await sha(agentFile)).toBe(before);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
