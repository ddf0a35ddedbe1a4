import {
  type ChatReply,
  type OpenAICompatibleServer,
  type ReceivedChatRequest,
  startOpenAICompatibleServer,
} from '@dreamgym/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelOutputError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import { HashingEmbedder } from '../models/hashing-embedder.js';
import { OpenAICompatibleChatModel } from '../models/openai-compatible-chat-model.js';
import { SeededRandom } from '../random/seeded-random.js';
import { LlmTaskGenerator } from './llm-task-generator.js';
import type { TaskRejection } from './task-generator.js';

const adapter = {
  name: 'household',
  prompts: {
    environmentDescription:
      'A house with rooms, furniture and objects the agent can pick up and use.',
    agentInstructions: 'Act with one command per turn.',
    taskGenerationGuidance: 'Swap the object, its state (clean, hot, cool) or the receptacle.',
  },
};

const apple: Task = {
  id: 'seed-apple',
  domain: 'household',
  instruction: 'put a clean apple in the fridge',
  origin: 'seed',
  initialObservation: {
    text: 'You are in the kitchen. You see a fridge 1, a sinkbasin 1 and a cabinet 1.',
  },
  meta: { split: 'train', game: 'apple.tw-pddl' },
};
const lamp: Task = {
  id: 'seed-lamp',
  domain: 'household',
  instruction: 'examine the book with the desklamp',
  origin: 'seed',
  meta: {},
};
const pillow: Task = {
  id: 'seed-pillow',
  domain: 'household',
  instruction: 'find two pillows and put them on the sofa',
  origin: 'seed',
  meta: {},
};
const pool = [apple, lamp, pillow];

function userText(request: ReceivedChatRequest): string {
  const user = request.messages.find((message) => message.role === 'user');
  return typeof user?.content === 'string' ? user.content : '';
}

/** The parent the prompt asks to vary: the line after "Task to vary:". */
function parentOf(request: ReceivedChatRequest): string {
  const lines = userText(request).split('\n');
  return lines[lines.indexOf('Task to vary:') + 1] ?? '';
}

const json = (tasks: string[]): string => JSON.stringify({ tasks });

let server: OpenAICompatibleServer;
let model: OpenAICompatibleChatModel;

beforeAll(async () => {
  server = await startOpenAICompatibleServer();
  model = new OpenAICompatibleChatModel({
    baseURL: server.url,
    model: 'test-model',
    maxRetries: 0,
    timeoutMs: 10_000,
  });
});

afterAll(async () => {
  await server.close();
});

function answerPerParent(answers: Record<string, ChatReply>): void {
  server.setChat((request) => answers[parentOf(request)] ?? { type: 'error', status: 500 });
}

describe('LlmTaskGenerator over a real OpenAI-compatible HTTP server', () => {
  it('turns valid answers into generated tasks with lineage, in parent order', async () => {
    const before = server.requestsTo('/v1/chat/completions').length;
    answerPerParent({
      // The first parent's answer arrives last: the result must not depend on timing.
      [apple.instruction]: {
        type: 'message',
        delayMs: 150,
        content: json(['put a hot mug in the cabinet', 'put a clean tomato in the fridge']),
      },
      [lamp.instruction]: json(['examine the alarm clock with the desklamp']),
    });
    const generator = new LlmTaskGenerator({ model, adapter, embedder: new HashingEmbedder() });
    const rejections: TaskRejection[] = [];
    const tasks = await generator.generate([apple, lamp], 3, {
      iteration: 4,
      random: new SeededRandom(1),
      existing: pool,
      onReject: (rejection) => rejections.push(rejection),
    });
    expect(rejections).toEqual([]);
    expect(tasks.map((task) => [task.parentId, task.instruction])).toEqual([
      [apple.id, 'put a hot mug in the cabinet'],
      [apple.id, 'put a clean tomato in the fridge'],
      [lamp.id, 'examine the alarm clock with the desklamp'],
    ]);
    for (const task of tasks) {
      expect(task).toMatchObject({ origin: 'generated', iteration: 4, domain: 'household' });
      expect(task.id).toMatch(new RegExp(`^${task.parentId}~llm4-[0-9a-f]{10}$`));
      expect(task.meta).toEqual({ generator: 'llm', generatorModel: model.id });
    }
    expect(tasks[0]!.initialObservation).toEqual(apple.initialObservation);
    expect(tasks[2]!.initialObservation).toBeUndefined();

    const requests = server.requestsTo('/v1/chat/completions').slice(before);
    expect(requests).toHaveLength(2);
    const applePrompt = requests
      .map((record) => record.body as ReceivedChatRequest)
      .find((body) => parentOf(body) === apple.instruction)!;
    const prompt = userText(applePrompt);
    expect(prompt).toContain(adapter.prompts.taskGenerationGuidance);
    expect(prompt).toContain('Write 2 new tasks.');
    expect(prompt).toContain('same kinds of actions and skills');
    expect(prompt).toContain(`- ${lamp.instruction}`); // the other parent as an example
    expect(prompt).toContain(apple.initialObservation!.text);
    const system = applePrompt.messages[0]!.content as string;
    expect(system).toContain(adapter.prompts.environmentDescription);
    expect(applePrompt.response_format?.type).toBe('json_schema');
    expect(applePrompt.response_format?.json_schema?.name).toBe('generated_tasks');
    expect(applePrompt.temperature).toBe(0.8);
    expect(typeof applePrompt.seed).toBe('number');
  });

  it('rejects empty, too short, too long and domain-invalid instructions and surplus ones', async () => {
    answerPerParent({
      [apple.instruction]: json([
        '   ',
        'go',
        `put ${'very '.repeat(150)}clean apple in the fridge`,
        'put a banana in the fridge',
        'put  a cool   lettuce in the fridge ',
        'put a hot potato in the microwave',
        'put a clean plate in the cabinet',
      ]),
    });
    const rejections: TaskRejection[] = [];
    const generator = new LlmTaskGenerator({
      model,
      adapter,
      validate: (instruction) =>
        instruction.includes('banana') ? 'there is no banana in this house' : undefined,
    });
    const tasks = await generator.generate([apple], 2, {
      iteration: 1,
      random: new SeededRandom(2),
      existing: pool,
      onReject: (rejection) => rejections.push(rejection),
    });
    // White space is tidied; the third valid answer is one more than asked for.
    expect(tasks.map((task) => task.instruction)).toEqual([
      'put a cool lettuce in the fridge',
      'put a hot potato in the microwave',
    ]);
    expect(rejections.map((rejection) => [rejection.reason, rejection.detail])).toEqual([
      ['invalid', 'empty instruction'],
      ['invalid', 'instruction shorter than 10 characters'],
      ['invalid', 'instruction longer than 600 characters (779)'],
      ['invalid', 'there is no banana in this house'],
      ['surplus', 'the model wrote more than the 2 task(s) asked for'],
    ]);
  });

  it('skips a parent whose answer is malformed, and throws when every answer is', async () => {
    answerPerParent({
      [apple.instruction]: 'Sure! Here are some tasks: put a mug in the sink.',
      [lamp.instruction]: json(['examine the pen with the desklamp']),
    });
    const rejections: TaskRejection[] = [];
    const generator = new LlmTaskGenerator({ model, adapter });
    const tasks = await generator.generate([apple, lamp], 2, {
      iteration: 0,
      random: new SeededRandom(3),
      existing: pool,
      onReject: (rejection) => rejections.push(rejection),
    });
    expect(tasks.map((task) => task.instruction)).toEqual(['examine the pen with the desklamp']);
    expect(rejections).toEqual([
      expect.objectContaining({ reason: 'malformed-output', parentId: apple.id }),
    ]);
    expect(rejections[0]!.detail).toMatch(/holds no JSON/);

    answerPerParent({
      [apple.instruction]: '{"tasks": "put a mug in the sink"}',
      [lamp.instruction]: '{"tasks": [',
    });
    const failure = generator.generate([apple, lamp], 2, {
      iteration: 0,
      random: new SeededRandom(3),
      existing: pool,
    });
    await expect(failure).rejects.toSatisfy(ModelOutputError.isInstance);
    await expect(failure).rejects.toThrow(/no usable answer for any of 2 parent task\(s\)/);
  });

  it('rejects exact duplicates of the pool and of each other, and near-duplicates by embedding', async () => {
    answerPerParent({
      [apple.instruction]: json([
        'Put a clean apple in the fridge.', // the parent itself, re-cased
        'Find two pillows and put them on the sofa', // another pool task
        'put a clean mug in the fridge', // a new task (cosine 0.80 to the parent)
        'put a clean mug in the fridge', // the same again
        'then put a clean apple in the fridge', // the parent plus one word (cosine 0.93)
        'put a clean mug in the fridge now', // an earlier candidate plus one word
        'put a cold apple in the fridge', // a new task (cosine 0.78 to the parent)
      ]),
    });
    const rejections: TaskRejection[] = [];
    const generator = new LlmTaskGenerator({ model, adapter, embedder: new HashingEmbedder() });
    const tasks = await generator.generate([apple], 7, {
      iteration: 2,
      random: new SeededRandom(4),
      existing: pool,
      onReject: (rejection) => rejections.push(rejection),
    });
    expect(tasks.map((task) => task.instruction)).toEqual([
      'put a clean mug in the fridge',
      'put a cold apple in the fridge',
    ]);
    expect(rejections.map((r) => [r.reason, r.instruction, r.duplicateOf])).toEqual([
      ['exact-duplicate', 'Put a clean apple in the fridge.', apple.instruction],
      ['exact-duplicate', 'Find two pillows and put them on the sofa', pillow.instruction],
      ['exact-duplicate', 'put a clean mug in the fridge', 'put a clean mug in the fridge'],
      ['near-duplicate', 'then put a clean apple in the fridge', apple.instruction],
      ['near-duplicate', 'put a clean mug in the fridge now', 'put a clean mug in the fridge'],
    ]);
    for (const rejection of rejections.filter((r) => r.reason === 'near-duplicate')) {
      expect(rejection.similarity).toBeGreaterThanOrEqual(0.9);
      expect(rejection.similarity).toBeLessThan(1);
    }

    // Without an embedder only exact duplicates are caught.
    const exactOnly = new LlmTaskGenerator({ model, adapter });
    const loose = await exactOnly.generate([apple], 7, {
      iteration: 2,
      random: new SeededRandom(4),
      existing: pool,
    });
    expect(loose.map((task) => task.instruction)).toEqual([
      'put a clean mug in the fridge',
      'then put a clean apple in the fridge',
      'put a clean mug in the fridge now',
      'put a cold apple in the fridge',
    ]);
  });

  it('keeps the parent meta only when asked and propagates HTTP failures', async () => {
    answerPerParent({ [apple.instruction]: json(['put a clean egg in the fridge']) });
    const inherit = new LlmTaskGenerator({ model, adapter, inheritMeta: true });
    const [task] = await inherit.generate([apple], 1, {
      iteration: 0,
      random: new SeededRandom(5),
      existing: pool,
    });
    expect(task!.meta).toEqual({ ...apple.meta, generator: 'llm', generatorModel: model.id });

    server.setChat(() => ({ type: 'error', status: 401, message: 'bad key' }));
    await expect(
      inherit.generate([apple], 1, { iteration: 0, random: new SeededRandom(5), existing: pool }),
    ).rejects.toThrow(/401|bad key/);
  });
});
