/**
 * The check every agent example passes: the agent of `agent.ts`, imported as is, trained in the
 * synthetic ALFWorld with SmolLM2 behind the model server: its model calls are captured with
 * their token ids, the LoRA adapter's weights move off their initialisation, and the agent's
 * next episodes are answered by the new adapter.
 *
 * An example with two ways of playing (the AI SDK agent's `train.ts`, which captures through the
 * provider's `fetch`, and `train-with-middleware.ts`, through `captureMiddleware`) is checked in
 * one training: its episodes take turns, the update learns from the calls both captured, and
 * after it each way plays an episode that must reach the new adapter. The training itself is the
 * code every example shares (`AgentTrainer`); what differs is how the calls are captured and
 * handed over, which one iteration and the episodes after it cover. The `ai` 6 example trains a
 * second iteration, on the calls the first adapter answered.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import type { AgentIterationMetrics } from '@dreamgym/agents';
import { type PlayEpisode, startAgentTraining } from './alfworld-agent-training.js';

const dataDir = resolve(process.env.DREAMGYM_DATA_DIR ?? resolve(import.meta.dirname, '../../shared/data'));
const sha = async (file: string) => createHash('sha256').update(await readFile(file)).digest('hex');

/** How many values of a PEFT adapter's `lora_B` tensors (fp16 or fp32 safetensors) are not zero. */
export async function nonZeroLoraB(file: string): Promise<number> {
  const bytes = await readFile(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.toString('utf8', 8, 8 + headerLength)) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const tensors = Object.entries(header).filter(([name]) => name.includes('lora_B'));
  expect(tensors.length, `${file} holds no lora_B tensor`).toBeGreaterThan(0);
  let nonZero = 0;
  for (const [, { dtype, data_offsets: [start, end] }] of tensors) {
    expect(['F16', 'F32']).toContain(dtype);
    const width = dtype === 'F16' ? 2 : 4;
    for (let offset = 8 + headerLength + start; offset < 8 + headerLength + end; offset += width) {
      // Zero is +0 or -0: every bit but the sign clear.
      const bits = width === 2 ? bytes.readUInt16LE(offset) & 0x7fff : bytes.readUInt32LE(offset) & 0x7fffffff;
      if (bits !== 0) nonZero += 1;
    }
  }
  return nonZero;
}

/**
 * Trains the agent of `agentFile` (whose module is `agent`, with exactly `exports`) through
 * `plays`, in turn, for `iterations` (default 1), and checks what the examples promise.
 */
export async function checkAgentTraining(options: {
  agentFile: string;
  agent: Record<string, unknown>;
  exports: string[];
  /** The example's ways of playing an episode (its `train*.ts` scripts' `playEpisode`). */
  plays: PlayEpisode[];
  /**
   * 2: a second iteration trains on the calls the first adapter answered, and its adapter
   * differs from the first.
   */
  iterations?: 1 | 2;
  /**
   * Then starts the training again on its run folder: it resumes after the iterations done, its
   * figures back and the last adapter served.
   */
  resume?: boolean;
}): Promise<void> {
  const { agentFile, agent, plays } = options;
  // Episodes take turns between the ways of playing; any `plays.length` episodes in a row
  // include each way once.
  let turn = 0;
  const play: PlayEpisode = (episode, endpoint, maxSteps) =>
    plays[turn++ % plays.length]!(episode, endpoint, maxSteps);
  const before = await sha(agentFile);
  expect(Object.keys(agent).sort()).toEqual(options.exports);
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-agent-example-'));
  try {
    const runDirectory = join(scratch, 'run');
    const start = () =>
      startAgentTraining({
        play,
        dataDir,
        runDirectory,
        trainTasks: 2,
        // The synthetic environment grounded in 200 offline games, not all 3,553: set-up ~2 s
        // of CPU instead of ~35 s, and the agent's episodes are the same kind.
        offlineLimit: 200,
        groupSize: 3,
        tasksPerIteration: 1,
        maxSteps: 2,
        // Judged outside the environment (`reportReward`): shorter actions are better, so the
        // rewards of a group differ and every iteration has a learning signal.
        judge: (episode) =>
          -episode.steps.reduce((total, step) => total + step.action.length, 0) /
          Math.max(1, episode.steps.length) / 100,
      });
    const training = await start();
    let trained: AgentIterationMetrics[] = [];
    try {
      const { trainer, capture, server, domain } = training;
      const first = await trainer.iteration();
      expect(first.episodes).toBe(3);
      expect(first.modelCalls).toBeGreaterThanOrEqual(3);
      expect(first.samples).toBeGreaterThan(0);
      expect(first.servedModel).not.toBe(server.modelName);
      const adapterOne = join(runDirectory, 'iteration-0001', 'adapter', 'adapter_model.safetensors');
      expect(existsSync(adapterOne)).toBe(true);
      // PEFT starts every lora_B at zero: the update moved the weights.
      expect(await nonZeroLoraB(adapterOne)).toBeGreaterThan(0);

      // After each update the agent's next episodes, one each way it plays, went to the new
      // adapter, and each call kept its prompt's and answer's token ids.
      const playAfterUpdate = async (servedModel: string) => {
        for (const _ of plays) {
          const next = await trainer.playEpisode(domain.seedTasks[0]!);
          expect(next.calls.length).toBeGreaterThan(0);
          for (const call of next.calls) {
            expect(call.model).toBe(servedModel);
            expect(call.promptTokenIds!.length).toBeGreaterThan(0);
            expect(call.completionTokenIds!.length).toBeGreaterThan(0);
          }
        }
      };
      await playAfterUpdate(first.servedModel);

      let last = first;
      if (options.iterations === 2) {
        last = await trainer.iteration();
        const adapterTwo = join(runDirectory, 'iteration-0002', 'adapter', 'adapter_model.safetensors');
        expect(last.samples).toBeGreaterThan(0);
        expect(last.servedModel).not.toBe(first.servedModel);
        // The weights moved between the two updates.
        expect(await sha(adapterTwo)).not.toBe(await sha(adapterOne));
        await playAfterUpdate(last.servedModel);
      }

      // The server answers as the adapter trained last.
      const { calls } = await capture.episode('probe', async () => {
        const response = await capture.fetch(`${server.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: server.modelName, messages: [{ role: 'user', content: 'Say hi.' }], max_tokens: 4 }),
        });
        expect(((await response.json()) as { model: string }).model).toBe(last.servedModel);
      });
      expect(calls[0]!.model).toBe(last.servedModel);
      expect(calls[0]!.promptTokenIds!.length).toBeGreaterThan(0);
      expect(calls[0]!.completionTokenIds!.length).toBeGreaterThan(0);
      expect(trainer.metrics.map((metrics) => metrics.servedModel)).toEqual(
        options.iterations === 2 ? [first.servedModel, last.servedModel] : [first.servedModel],
      );
      trained = [...trainer.metrics];
    } finally {
      await training.close();
    }
    if (options.resume) {
      // A new server and trainer on the run folder: the run goes on after its last iteration.
      const resumed = await start();
      try {
        const { trainer, server } = resumed;
        expect(trainer.metrics).toEqual(trained);
        expect(trainer.servedModel).not.toBe(server.modelName);
        const next = await trainer.playEpisode(resumed.domain.seedTasks[0]!);
        expect(next.calls.length).toBeGreaterThan(0);
        for (const call of next.calls) expect(call.model).toBe(trainer.servedModel);
        expect(next.calls[0]!.episodeId).toBe(
          `synthetic:${trained.length}:${resumed.domain.seedTasks[0]!.id}#1`,
        );
      } finally {
        await resumed.close();
      }
    }
    expect(await sha(agentFile)).toBe(before);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
