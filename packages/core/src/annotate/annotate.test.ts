/**
 * Annotation bookkeeping (resume, de-duplication, torn lines, failures) and the SFT export's
 * shape, on real corridor trajectories. The teacher here is a counting stand-in whose answers
 * the test knows; the real local model writes traces in @dreamgym/cli's `dreamgym annotate` test.
 */
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ModelError, ModelOutputError } from '../errors.js';
import { compactExperienceFormat } from '../experience/experience-format.js';
import type { Trajectory } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import type {
  ChatModel,
  StructuredChatRequest,
  StructuredChatResponse,
} from '../models/chat-model.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { SeededRandom } from '../random/seeded-random.js';
import { ReplayBuffer } from '../replay/replay-buffer.js';
import { corridorTask, playCorridor } from '../testing/corridor-domain.js';
import { annotateReasoning, readReasoningTraces, transitionKey } from './reasoning-annotator.js';
import { ExperienceSftExampleSchema, exportExperienceSft } from './sft-export.js';

/** A teacher that answers with the action it was asked about, and fails where told. */
function teacher(failOn: (action: string) => 'output' | 'server' | undefined = () => undefined) {
  const asked: string[] = [];
  const model: ChatModel & { asked: string[] } = {
    id: 'teacher-test',
    asked,
    complete: () => Promise.reject(new Error('not used')),
    stats: () => ({
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
      requests: 0,
      retries: 0,
      failures: 0,
      attempts: 0,
      formatFallbacks: 0,
    }),
    async completeStructured<S extends z.ZodType>(request: StructuredChatRequest<S>) {
      const user = request.messages.at(-1)!.content;
      const action = /Action: (.*)/.exec(user)![1]!;
      asked.push(action);
      const failure = failOn(action);
      if (failure === 'output') throw new ModelOutputError('cut off', { output: '' });
      if (failure === 'server') throw new ModelError('server down');
      const value = request.schema.parse({ reasoning: `Because of ${action}.` });
      return {
        text: JSON.stringify(value),
        value,
        mode: 'json_schema',
        usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
      } as StructuredChatResponse<z.output<S>>;
    },
  };
  return model;
}

let directory: string;
let trajectories: Trajectory[];
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-annotate-'));
  const random = new SeededRandom(4);
  trajectories = [];
  for (let index = 0; index < 6; index += 1) {
    const task = corridorTask(
      { length: 4, keyRoom: 1 + (index % 2), doorRoom: 3 },
      `corridor-${index % 3}`,
    );
    trajectories.push({
      ...(await playCorridor(task, random, { noise: 0.2, source: 'real' })),
      id: `trajectory-${index}`,
    });
  }
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('annotateReasoning', () => {
  it('annotates each distinct transition once, and resumes where a run stopped', async () => {
    const file = join(directory, 'traces.jsonl');
    const all = trajectories.flatMap((trajectory) =>
      trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id! }),
    );
    const distinct = new Set(all.map(transitionKey)).size;
    expect(distinct).toBeLessThan(all.length);

    const first = teacher();
    const partial = await annotateReasoning({
      teacher: first,
      trajectories,
      environmentDescription: 'A corridor.',
      file,
      limit: 3,
    });
    expect(partial).toMatchObject({
      annotated: 3,
      existing: 0,
      transitions: distinct,
      duplicates: all.length - distinct,
      failed: 0,
    });

    // A crash mid-write leaves a torn last line; the next run cuts it and goes on.
    await appendFile(file, '{"key": "torn", "reas');
    const second = teacher();
    const rest = await annotateReasoning({
      teacher: second,
      trajectories,
      environmentDescription: 'A corridor.',
      file,
      concurrency: 3,
    });
    expect(rest).toMatchObject({ annotated: distinct - 3, existing: 3, failed: 0 });
    expect(second.asked).toHaveLength(distinct - 3);

    const traces = await readReasoningTraces(file);
    expect(traces.size).toBe(distinct);
    for (const transition of all) {
      expect(traces.get(transitionKey(transition))?.reasoning).toBe(
        `Because of ${transition.action}.`,
      );
    }
    const again = await annotateReasoning({
      teacher: teacher(),
      trajectories,
      environmentDescription: 'A corridor.',
      file,
    });
    expect(again).toMatchObject({ annotated: 0, existing: distinct });
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(distinct);
  });

  it('leaves malformed answers for a later run, and stops on a server failure', async () => {
    const file = join(directory, 'failing.jsonl');
    const counts = await annotateReasoning({
      teacher: teacher((action) => (action === 'go left' ? 'output' : undefined)),
      trajectories,
      environmentDescription: 'A corridor.',
      file,
    });
    expect(counts.failed).toBeGreaterThan(0);
    expect(counts.annotated + counts.failed).toBe(counts.transitions);
    await expect(
      annotateReasoning({
        teacher: teacher(() => 'server'),
        trajectories,
        environmentDescription: 'A corridor.',
        file,
      }),
    ).rejects.toSatisfy(ModelError.isInstance);
    expect((await readReasoningTraces(file)).size).toBe(counts.annotated);
  });
});

describe('exportExperienceSft', () => {
  it('writes chat examples in the model format, reasoning before the next state, with demos from other trajectories', async () => {
    const tracesFile = join(directory, 'traces.jsonl');
    const traces = await readReasoningTraces(tracesFile);
    const buffer = ReplayBuffer.create({
      embedder: new HashingEmbedder({ dimension: 64 }),
      index: { type: 'flat' },
    });
    await buffer.add(
      trajectories.flatMap((trajectory) =>
        trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id! }),
      ),
    );
    const file = join(directory, 'sft.jsonl');
    const format = compactExperienceFormat();
    const counts = await exportExperienceSft({
      trajectories,
      traces: new Map([...traces].slice(1)),
      environmentDescription: 'A corridor.',
      file,
      format,
      retriever: buffer,
      k: 2,
    });
    await buffer.close();
    expect(counts.missingTrace).toBe(1);
    expect(counts.examples).toBe(traces.size - 1);
    const lines = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => ExperienceSftExampleSchema.parse(JSON.parse(line)));
    expect(lines).toHaveLength(counts.examples);
    for (const example of lines) {
      expect(example.messages.map((message) => message.role)).toEqual([
        'system',
        'user',
        'assistant',
      ]);
      const answer = format.schema.parse(JSON.parse(example.messages[2]!.content));
      expect(Object.keys(answer)[0]).toBe('reasoning');
      expect(answer.reasoning).toMatch(/^Because of /);
      expect(example.meta.format).toBe('compact');
      const trajectory = trajectories.find(
        (candidate) => candidate.id === example.meta.trajectoryId,
      )!;
      const next = trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id! })[
        example.meta.stepIndex
      ]!;
      expect(answer.nextState).toBe(next.nextState.text);
      for (const id of example.meta.demoIds)
        expect(id.startsWith(`${example.meta.trajectoryId}#`)).toBe(false);
    }
  });
});
