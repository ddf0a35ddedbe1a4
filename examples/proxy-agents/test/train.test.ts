/**
 * The two agents of this example, started as plain subprocesses with OPENAI_BASE_URL at the
 * recording proxy and MCP_URL at the environment's MCP tools, trained with SmolLM2: their calls
 * are recorded with token ids under their episodes, the LoRA adapter's weights move, the agents'
 * later calls reach the new adapter, a restarted trainer resumes, and the agents' files are
 * unchanged.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { corridorTasks } from '@dreamgym/core/testing';
import { describe, expect, it } from 'vitest';
import { nonZeroLoraB } from '../../agent-training.test-support.js';
import { AGENTS, type AgentName, startProxyTraining } from '../train.js';

const sha = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

describe('agents DreamGym does not touch, trained by their base URL', () => {
  for (const agent of Object.keys(AGENTS) as AgentName[]) {
    it(`${agent}: records its calls, updates the adapter, routes its later calls to it, resumes`, async () => {
      const file = AGENTS[agent].file;
      const before = await sha(file);
      const scratch = await mkdtemp(join(tmpdir(), `dreamgym-proxy-${agent}-`));
      const runDirectory = join(scratch, 'run');
      try {
        const training = await startProxyTraining({ agent, runDirectory });
        let servedAfter: string;
        try {
          const { trainer, server } = training;
          const first = await trainer.iteration();
          expect(first.episodes).toBe(2);
          expect(first.modelCalls).toBeGreaterThanOrEqual(2);
          expect(first.samples).toBeGreaterThan(0);
          expect(first.handOvers).toBe(1);
          expect(first.servedModel).not.toBe(server.modelName);
          servedAfter = first.servedModel;
          const adapter = join(runDirectory, 'iteration-0001', 'adapter', 'adapter_model.safetensors');
          expect(await nonZeroLoraB(adapter)).toBeGreaterThan(0);
          const next = await trainer.playEpisode(corridorTasks(3)[0]!);
          expect(next.records.length).toBeGreaterThan(0);
          for (const record of next.records) {
            expect(record.model).toBe(first.servedModel);
            expect(record.episodeId).toBe(next.episodeId);
            expect(record.promptTokenIds.length).toBeGreaterThan(0);
            expect(record.completionTokenIds.length).toBeGreaterThan(0);
          }
        } finally {
          await training.close();
        }
        const resumed = await startProxyTraining({ agent, runDirectory });
        try {
          expect(resumed.trainer.metrics).toHaveLength(1);
          expect(resumed.trainer.servedModel).toBe(servedAfter);
          expect(resumed.trainer.proxy.model).toBe(servedAfter);
        } finally {
          await resumed.close();
        }
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
      expect(await sha(file)).toBe(before);
    }, 600_000);
  }
});
