/**
 * Writes the ALFWorld experience-model SFT set at full scale without a teacher: every distinct
 * transition of the expert trajectories, in the compact prompt format with k=3 retrieved
 * demonstrations (as `dreamgym annotate` exports it), with an empty reasoning R*. The one
 * local model (SmolLM2-135M) writes no usable reasoning, so this set trains the next-state
 * part of the paper's SFT loss only; `trainers/python/experience_sft.py` trains on it.
 *
 * Usage: DREAMGYM_DATA_DIR=../shared/data npx tsx experience-sft-set.ts --out DIR [--limit N]
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createAlfworldAdapter } from '@dreamgym/alfworld';
import {
  HashingEmbedder,
  ReplayBuffer,
  type Trajectory,
  trajectoryToTransitions,
} from '@dreamgym/core';
import { exportExperienceSft, type ReasoningTrace } from '@dreamgym/core/annotate';
import { compactExperienceFormat } from '@dreamgym/core/experience';

const { values } = parseArgs({
  options: { out: { type: 'string' }, limit: { type: 'string' } },
});
const dataRoot = process.env.DREAMGYM_DATA_DIR;
if (!dataRoot || !values.out) {
  throw new Error('Set DREAMGYM_DATA_DIR and pass --out DIR.');
}
const data = resolve(dataRoot, 'alfworld');
const adapter = createAlfworldAdapter({ dataDir: data });
const trajectories: Trajectory[] = [];
for await (const trajectory of adapter.datasets.trajectories.load(data, {
  ...(values.limit ? { limit: Number(values.limit) } : {}),
})) {
  trajectories.push({ ...trajectory, id: trajectory.id ?? `offline:${trajectories.length}` });
}
const replayBuffer = ReplayBuffer.create({
  embedder: new HashingEmbedder({ dimension: 256 }),
  index: { type: 'flat' },
});
await replayBuffer.add(
  trajectories.flatMap((trajectory) =>
    trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id! }),
  ),
);
// Every transition gets the same empty trace: the answer is the next state, done and success.
const emptyTrace: ReasoningTrace = {
  key: '',
  reasoning: '',
  teacher: 'none',
  trajectoryId: '',
  stepIndex: 0,
};
const traces = { get: () => emptyTrace } as unknown as ReadonlyMap<string, ReasoningTrace>;
const directory = resolve(values.out);
await mkdir(directory, { recursive: true });
const counts = await exportExperienceSft({
  trajectories,
  traces,
  environmentDescription: adapter.prompts.environmentDescription,
  file: join(directory, 'sft.jsonl'),
  format: compactExperienceFormat(),
  retriever: replayBuffer,
  k: 3,
  domain: adapter.name,
  parseAction: (text) => adapter.parseAction(text),
});
await replayBuffer.close();
process.stdout.write(
  `${trajectories.length} trajectories, ${replayBuffer.size} transitions: ${JSON.stringify(counts)}\n`,
);
