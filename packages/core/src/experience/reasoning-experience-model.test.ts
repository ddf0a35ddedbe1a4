import {
  type ChatResponder,
  type OpenAICompatibleServer,
  startOpenAICompatibleServer,
} from '@dreamgym/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { type Step, type Task, TaskSchema } from '../mdp/schemas.js';
import { OpenAICompatibleChatModel } from '../models/openai-compatible-chat-model.js';
import type { ScoredTransition } from '../replay/retriever.js';
import { earned } from './earned.test-support.js';
import type { ExperienceInput } from './experience-model.js';
import { ReasoningExperienceModel } from './reasoning-experience-model.js';

const description = 'A corridor of numbered rooms with a key and a locked door.';
const task: Task = TaskSchema.parse({
  id: 'corridor-1',
  domain: 'corridor',
  instruction: 'Take the key and open the door in room 1.',
});
const demo: ScoredTransition = {
  score: 0.93,
  transition: {
    id: 'offline-7#2',
    domain: 'corridor',
    taskId: 'corridor-2',
    instruction: 'Take the key and open the door in room 2.',
    stepIndex: 2,
    state: { text: 'You are in room 2. You see a door. You carry the key.' },
    action: 'open door',
    nextState: { text: 'You unlock and open the door.' },
    reward: 1,
    done: true,
    source: 'offline',
    trajectorySuccess: true,
  },
};
const input: ExperienceInput = {
  task,
  history: [
    {
      observation: { text: 'You enter the corridor.' },
      action: 'take key',
      reward: 0,
      done: false,
    },
  ],
  state: { text: 'You pick up the key. You are in room 0. You carry the key.' },
  action: 'go right',
  demos: [demo],
};

function answer(fields: Record<string, unknown>): string {
  return JSON.stringify({
    reasoning: 'Walking right from room 0 leads to room 1.',
    nextState: 'You walk to room 1. You are in room 1. You see a door.',
    done: false,
    success: false,
    reward: 0,
    ...fields,
  });
}

let server: OpenAICompatibleServer;
let replies: ChatResponder = () => answer({});

beforeAll(async () => {
  server = await startOpenAICompatibleServer({ chat: (...args) => replies(...args) });
});
afterAll(async () => {
  await server.close();
});

function model(options: { maxAttempts?: number; historyTokens?: number } = {}) {
  const chat = new OpenAICompatibleChatModel({
    baseURL: server.url,
    model: 'test-model',
    retryBaseDelayMs: 0,
    maxRetries: 1,
  });
  return new ReasoningExperienceModel({ chat, environmentDescription: description, ...options });
}

/** Scripts the next chat replies in order; the last one repeats. */
function script(...contents: Array<string | { content: string; finishReason: string }>) {
  const start = server.requestsTo('/v1/chat/completions').length;
  replies = (_request, index) => {
    const reply = contents[Math.min(index - start, contents.length - 1)]!;
    return typeof reply === 'string'
      ? reply
      : { type: 'message', content: reply.content, finishReason: reply.finishReason };
  };
  return () => server.requestsTo('/v1/chat/completions').slice(start);
}

describe('ReasoningExperienceModel over real HTTP', () => {
  it('prompts with description, task, demos, history, state and action, and reads a valid answer', async () => {
    const requests = script(answer({}));
    const prediction = await model().predict(input);
    expect(prediction).toMatchObject({
      reasoning: 'Walking right from room 0 leads to room 1.',
      observation: { text: 'You walk to room 1. You are in room 1. You see a door.' },
      reward: 0,
      done: false,
      success: false,
      info: { attempts: 1, promptDemoIds: ['offline-7#2'] },
    });
    const body = requests()[0]!.body as {
      messages: Array<{ content: string }>;
      response_format?: { type: string };
    };
    const prompt = body.messages.map((message) => message.content).join('\n');
    for (const part of [
      description,
      task.instruction,
      'You unlock and open the door.',
      '> take key',
      input.state.text,
      'Action: go right',
    ]) {
      expect(prompt).toContain(part);
    }
    expect(body.response_format?.type).toBe('json_schema');
  });

  it('gives the outcome reward only on a successful final step', async () => {
    script(answer({ done: true, success: true, reward: 0.2 }));
    const paid = model();
    expect(earned(paid, await paid.predict(input))).toMatchObject({
      reward: 1,
      done: true,
      success: true,
    });
    script(answer({ done: false, success: true, reward: 1 }));
    expect(earned(paid, await paid.predict(input))).toMatchObject({
      reward: 0,
      done: false,
      success: false,
    });
  });

  it('repairs JSON wrapped in prose and fences', async () => {
    script(`Sure, here it is:\n\`\`\`json\n${answer({})}\n\`\`\``);
    expect((await model().predict(input)).observation.text).toContain('room 1');
  });

  it('retries malformed, truncated and schema-violating answers', async () => {
    const full = answer({});
    const requests = script(
      'I think the agent walks right.',
      { content: full.slice(0, 40), finishReason: 'length' },
      answer({ done: 'yes', nextState: '' }),
      full,
    );
    const prediction = await model({ maxAttempts: 4 }).predict(input);
    expect(prediction.observation.text).toContain('room 1');
    expect(prediction.info).toMatchObject({ attempts: 4 });
    const failures = prediction.info?.repairedFailures as string[];
    expect(failures).toHaveLength(3);
    expect(failures[1]).toMatch(/cut off|maxTokens/);
    expect(requests()).toHaveLength(4);
  });

  it('ends the episode safely after the configured number of failures', async () => {
    const requests = script('not json', '{"reasoning": "x"}');
    const failing = model({ maxAttempts: 2 });
    expect(earned(failing, await failing.predict(input))).toMatchObject({
      observation: { text: input.state.text },
      reward: 0,
      done: true,
      success: false,
      info: { experienceModelFailure: true, attempts: 2 },
    });
    expect(requests()).toHaveLength(2);
  });

  it('drops the oldest history first to fit the token budget', async () => {
    const history: Step[] = Array.from({ length: 30 }, (_, index) => ({
      observation: { text: `observation number ${index} with some padding text` },
      action: `action-${index}`,
      reward: 0,
      done: false,
    }));
    const requests = script(answer({}));
    const prediction = await model({ historyTokens: 60 }).predict({ ...input, history });
    const prompt = (requests()[0]!.body as { messages: Array<{ content: string }> }).messages[1]!
      .content;
    expect(prompt).toContain('> action-29');
    expect(prompt).not.toContain('> action-0\n');
    expect(prediction.info?.historyStepsDropped).toBeGreaterThan(20);
  });

  it('synthesises an initial state', async () => {
    script(JSON.stringify({ reasoning: 'start', initialState: 'You enter the corridor.' }));
    await expect(model().initialState({ task, demos: [demo] })).resolves.toEqual({
      text: 'You enter the corridor.',
    });
  });

  it('rejects options without an environment description', () => {
    expect(
      () =>
        new ReasoningExperienceModel({
          chat: new OpenAICompatibleChatModel({ baseURL: server.url, model: 'm' }),
          environmentDescription: '',
        }),
    ).toThrow(ConfigError);
  });
});
