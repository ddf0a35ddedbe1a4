import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readJsonl } from '../mdp/jsonl.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
} from '../testing/corridor-domain.js';
import {
  ArtTrajectoryGroupRecordSchema,
  exportArt,
  exportTrl,
  exportVerl,
  TrlStepRecordSchema,
  toTrlRecords,
  toVerlRecords,
  VerlStepRecordSchema,
} from './exporters.js';
import { GrpoTrainer } from './grpo-trainer.js';
import { PpoTrainer } from './ppo-trainer.js';

const directory = await mkdtemp(join(tmpdir(), 'dreamgym-export-'));
afterAll(() => rm(directory, { recursive: true, force: true }));

const adapter = createCorridorAdapter();
const tasks = [
  corridorTask({ length: 4, keyRoom: 1, doorRoom: 2 }),
  corridorTask({ length: 4, keyRoom: 2, doorRoom: 3 }),
];
const exportOptions = { agentInstructions: adapter.prompts.agentInstructions };

async function trainedOnce(kind: 'grpo' | 'ppo') {
  const options = {
    policy: new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 }),
    tasks,
    environmentFactory: () => new CorridorEnvironment({ maxSteps: 8 }),
    maxSteps: 8,
    random: new SeededRandom(2),
    rolloutsPerTask: 4,
    loss: { klCoefficient: 0.01 },
  };
  const trainer = kind === 'grpo' ? new GrpoTrainer(options) : new PpoTrainer(options);
  const { scored } = await trainer.step();
  await trainer.close();
  return scored;
}

async function readAll<T>(file: string, schema: Parameters<typeof readJsonl>[1]): Promise<T[]> {
  const records: T[] = [];
  for await (const record of readJsonl(file, schema)) records.push(record as T);
  return records;
}

describe('exporters', () => {
  it('write TRL prompt-completion records with rewards and advantages per step', async () => {
    const rollouts = await trainedOnce('grpo');
    const file = join(directory, 'trl.jsonl');
    const steps = rollouts.reduce((total, scored) => total + scored.rollout.steps.length, 0);
    expect(await exportTrl(file, rollouts, exportOptions)).toBe(steps);
    const records = await readAll<import('./exporters.js').TrlStepRecord>(
      file,
      TrlStepRecordSchema,
    );
    expect(records).toHaveLength(steps);
    const first = records[0]!;
    const scored = rollouts[0]!;
    expect(first.prompt[0]!.role).toBe('system');
    expect(first.prompt[0]!.content).toContain('go left');
    expect(first.prompt[1]!.content).toContain(scored.rollout.task.instruction);
    expect(first.prompt[1]!.content).toContain('Admissible actions:');
    expect(first.completion).toEqual([
      { role: 'assistant', content: `<action>${scored.rollout.steps[0]!.action}</action>` },
    ]);
    expect(first.advantage).toBe(scored.advantages[0]);
    expect(first.reward).toBe(scored.rollout.totalReward);
    expect(first.group_id).toBe(scored.rollout.task.id);
    expect(first.logprob).toBeCloseTo(scored.rollout.steps[0]!.logprob!, 6);
    // Every step of an episode carries the episode's (GRPO) advantage.
    const ofFirst = records.filter((record) => record.trajectory_id === scored.rollout.id);
    expect(new Set(ofFirst.map((record) => record.advantage)).size).toBe(1);
    // Later steps show the history in the prompt.
    const later = ofFirst.find((record) => record.step_index === 1);
    if (later) expect(later.prompt[1]!.content).toContain('Previous actions:');
  });

  it('write verl DataProto fields with GAE returns and log-probabilities', async () => {
    const rollouts = await trainedOnce('ppo');
    const file = join(directory, 'verl.jsonl');
    await exportVerl(file, rollouts, exportOptions);
    const records = await readAll<import('./exporters.js').VerlStepRecord>(
      file,
      VerlStepRecordSchema,
    );
    const scored = rollouts.at(-1)!;
    const last = records.at(-1)!;
    expect(last.uid).toBe(scored.rollout.groupId);
    expect(last.traj_uid).toBe(scored.rollout.id);
    expect(last.data_source).toBe('corridor');
    expect(last.returns).toBe(scored.returns!.at(-1));
    expect(last.advantages).toBe(scored.advantages.at(-1));
    expect(last.ref_log_prob).toBeCloseTo(last.old_log_probs!, 6);
    expect(last.episode_lengths).toBe(scored.rollout.steps.length);
    expect(last.active_masks).toBe(true);
  });

  it('write one ART trajectory group per task, agent turns as choices', async () => {
    const rollouts = await trainedOnce('grpo');
    const file = join(directory, 'art.jsonl');
    expect(await exportArt(file, rollouts, exportOptions)).toBe(2);
    const groups = await readAll<import('./exporters.js').ArtTrajectoryGroupRecord>(
      file,
      ArtTrajectoryGroupRecordSchema,
    );
    expect(groups[0]!.trajectories).toHaveLength(4);
    const trajectory = groups[0]!.trajectories[0]!;
    const scored = rollouts[0]!;
    const choices = trajectory.messages_and_choices.filter((item) => 'message' in item);
    expect(choices).toHaveLength(scored.rollout.steps.length);
    expect(trajectory.messages_and_choices[0]).toMatchObject({ role: 'system' });
    expect(trajectory.reward).toBe(scored.rollout.totalReward);
    expect(trajectory.metrics.advantage).toBe(scored.advantages[0]);
    expect(trajectory.metadata.task_id).toBe(scored.rollout.task.id);
  });

  it('write what the policy recorded: its messages, output and token ids, never a rebuilt prompt', async () => {
    const rollouts = await trainedOnce('grpo');
    const [first, second] = rollouts[0]!.rollout.steps;
    const messages = [
      { role: 'system' as const, content: 'the exact system message' },
      { role: 'user' as const, content: 'the exact user message' },
    ];
    first!.policyInfo = {
      messages,
      output: '<action>go right</action>',
      llm: { kind: 'sequence', prompt: [1, 2, 3], completion: [7, 8], behaviour: [-0.5, -0.25] },
    };
    second!.policyInfo = {
      messages,
      output: '<action>take key</action>',
      llm: {
        kind: 'choice',
        prompt: [1, 2, 4],
        candidates: [[5], [6, 9]],
        choice: 1,
        behaviour: -0.1,
      },
    };
    const trl = toTrlRecords(rollouts, exportOptions);
    expect(trl[0]).toMatchObject({
      prompt: messages,
      completion: [{ role: 'assistant', content: '<action>go right</action>' }],
      prompt_token_ids: [1, 2, 3],
      completion_token_ids: [7, 8],
      completion_logprobs: [-0.5, -0.25],
    });
    expect(trl[1]).toMatchObject({
      prompt_token_ids: [1, 2, 4],
      completion_token_ids: [6, 9],
      completion_logprobs: null,
    });
    const untouched = trl.find((record) => record.trajectory_id !== rollouts[0]!.rollout.id)!;
    expect(untouched.prompt_token_ids).toBeNull();
    expect(untouched.prompt[0]!.content).toContain('go left');
    const verl = toVerlRecords(rollouts, exportOptions);
    expect(verl[0]).toMatchObject({
      raw_prompt: messages,
      response: '<action>go right</action>',
      prompt_token_ids: [1, 2, 3],
      response_token_ids: [7, 8],
      response_log_probs: [-0.5, -0.25],
    });
    for (const record of trl) TrlStepRecordSchema.parse(record);
    for (const record of verl) VerlStepRecordSchema.parse(record);
  });
});
