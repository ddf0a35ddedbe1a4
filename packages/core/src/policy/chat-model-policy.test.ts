import {
  type OpenAICompatibleServer,
  type ReceivedChatRequest,
  startOpenAICompatibleServer,
} from '@dreamgym/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAICompatibleChatModel } from '../models/openai-compatible-chat-model.js';
import { SeededRandom } from '../random/seeded-random.js';
import { collectRollouts } from '../rollout/rollout.js';
import {
  CorridorEnvironment,
  corridorTask,
  createCorridorAdapter,
} from '../testing/corridor-domain.js';
import { toTrlRecords } from '../training/exporters.js';
import { locateAgentAnswer } from './agent-prompt.js';
import { ChatModelPolicy, spanLogprob } from './chat-model-policy.js';

const adapter = createCorridorAdapter();
const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 2 });
const observation = {
  text: 'You are in room 1. You see a key.',
  actions: ['go left', 'go right', 'take key'],
};

function userText(request: ReceivedChatRequest): string {
  return String(request.messages.at(-1)?.content ?? '');
}

/** A scripted agent: takes the key, opens the door, else walks right, reading the prompt. */
function corridorAgent(request: ReceivedChatRequest): string {
  const text = userText(request);
  const admissible = text.slice(text.indexOf('Admissible actions:'));
  if (admissible.includes('take key')) return 'I see the key. <action>take key</action>';
  if (admissible.includes('open door')) return 'The door is here. <action>open door</action>';
  return 'Keep walking. <action>go right</action>';
}

let server: OpenAICompatibleServer;
let model: OpenAICompatibleChatModel;
beforeAll(async () => {
  server = await startOpenAICompatibleServer();
  model = new OpenAICompatibleChatModel({
    baseURL: server.url,
    model: 'test-model',
    maxRetries: 0,
  });
});
afterAll(() => server.close());

describe('ChatModelPolicy over real HTTP', () => {
  it('prompts with the agent template and returns the action with its log-probability', async () => {
    server.setCapabilities({ logprobs: true });
    server.setChat(() => ({
      type: 'message',
      content: 'Think. <action>take key</action>',
      logprobs: [
        { token: 'Think. ', logprob: -0.5 },
        { token: '<action>', logprob: -0.1 },
        { token: 'take', logprob: -0.2 },
        { token: ' key', logprob: -0.3 },
        { token: '</action>', logprob: -0.05 },
      ],
    }));
    const policy = new ChatModelPolicy({
      model,
      agentInstructions: adapter.prompts.agentInstructions,
    });
    const decision = await policy.act(observation, {
      task,
      history: [],
      random: new SeededRandom(1),
    });
    expect(decision.action).toBe('take key');
    expect(decision.logprob).toBeCloseTo(-0.5, 12);
    expect(decision.rewardPenalty).toBeUndefined();
    const request = server.requestsTo('/v1/chat/completions').at(-1)!.body as ReceivedChatRequest;
    expect(request.logprobs).toBe(true);
    expect(String(request.messages[0]!.content)).toContain('go left');
    expect(String(request.messages[0]!.content)).toContain('<action></action>');
    expect(userText(request)).toContain(task.instruction);
    expect(userText(request)).toContain('Admissible actions: go left; go right; take key');
    expect(policy.stats()).toMatchObject({
      decisions: 1,
      withLogprob: 1,
      invalid: 0,
      unparsable: 0,
    });
  });

  it('gives no log-probability when the server ignores logprobs', async () => {
    server.setCapabilities({ logprobs: false });
    server.setChat(() => 'Hmm. <action>go right</action>');
    const policy = new ChatModelPolicy({ model, agentInstructions: 'Act.' });
    const decision = await policy.act(observation, { task, history: [] });
    expect(decision).toMatchObject({ action: 'go right' });
    expect(decision.logprob).toBeUndefined();
    server.setCapabilities({ logprobs: true });
  });

  it('canonicalises through the domain grammar and matches admissible actions loosely', async () => {
    server.setChat(() => '<action>  Take KEY </action>');
    const grammar = new ChatModelPolicy({
      model,
      agentInstructions: 'Act.',
      parseAction: adapter.parseAction,
    });
    expect((await grammar.act(observation, { task, history: [] })).action).toBe('take key');
    server.setChat(() => '<action>Take   KEY</action>');
    const loose = new ChatModelPolicy({ model, agentInstructions: 'Act.' });
    expect((await loose.act(observation, { task, history: [] })).action).toBe('take key');
  });

  it('counts and penalises unparsable and invalid outputs, with the configured fallback', async () => {
    const start = server.requestsTo('/v1/chat/completions').length;
    // Align the responder's counter with this test's first request.
    server.setChat((_request, index) => {
      const local = index - start;
      return local % 3 === 0
        ? 'I am not sure what to do.'
        : local % 3 === 1
          ? '<action>fly away</action>'
          : '<action>open door</action>';
    });
    const skip = new ChatModelPolicy({
      model,
      agentInstructions: 'Act.',
      invalidAnswerPenalty: -0.5,
    });
    const unparsable = await skip.act(observation, { task, history: [] });
    expect(unparsable.action).toBe('I am not sure what to do.');
    expect(unparsable.rewardPenalty).toBe(-0.5);
    expect(unparsable.info).toMatchObject({
      invalidAction: true,
      unparsable: true,
      fallback: 'skip',
    });
    const invalid = await skip.act(observation, { task, history: [] });
    expect(invalid.action).toBe('fly away');
    expect(invalid.info).toMatchObject({
      invalidAction: true,
      invalidReason: 'not an admissible action',
    });
    const notAdmissible = await skip.act(observation, { task, history: [] });
    expect(notAdmissible.rewardPenalty).toBe(-0.5);
    expect(skip.stats()).toMatchObject({ decisions: 3, unparsable: 1, invalid: 2 });

    const first = new ChatModelPolicy({
      model,
      agentInstructions: 'Act.',
      invalidAnswerFallback: 'first-candidate',
    });
    expect((await first.act(observation, { task, history: [] })).action).toBe('go left');
    const fixed = new ChatModelPolicy({
      model,
      agentInstructions: 'Act.',
      invalidAnswerFallback: { action: 'go right' },
      parseAction: adapter.parseAction,
    });
    const grammar = await fixed.act(observation, { task, history: [] });
    expect(grammar.action).toBe('go right');
    expect(String(grammar.info!.invalidReason)).toContain('not a corridor action');
    expect(
      () => new ChatModelPolicy({ model, agentInstructions: 'x', invalidAnswerPenalty: 1 }),
    ).toThrow(/invalidAnswerPenalty/);
  });

  it('solves a corridor in rollouts, and its exports keep the real prompts and outputs', async () => {
    server.setChat((request) => corridorAgent(request));
    const policy = new ChatModelPolicy({
      model,
      agentInstructions: adapter.prompts.agentInstructions,
      parseAction: adapter.parseAction,
    });
    const rollouts = await collectRollouts({
      policy,
      tasks: [task, corridorTask({ length: 5, keyRoom: 2, doorRoom: 4 })],
      rolloutsPerTask: 2,
      random: new SeededRandom(3),
      environmentFactory: () => new CorridorEnvironment({ maxSteps: 10 }),
      maxSteps: 10,
      concurrency: 4,
    });
    expect(rollouts.every((rollout) => rollout.success)).toBe(true);
    expect(rollouts[0]!.steps.map((step) => step.action)).toEqual([
      'go right',
      'take key',
      'go right',
      'open door',
    ]);
    for (const step of rollouts[0]!.steps) expect(step.logprob).toBeLessThan(0);
    const records = toTrlRecords(
      rollouts.map((rollout) => ({ rollout, advantages: rollout.steps.map(() => 0) })),
      { agentInstructions: 'unused when the policy recorded its prompt' },
    );
    expect(records[1]!.completion[0]!.content).toBe('I see the key. <action>take key</action>');
    expect(records[1]!.prompt[1]!.content).toContain('Previous actions: go right');
    expect(records[1]!.prompt[0]!.content).toContain('Think step by step');
    expect(records[1]!.prompt[0]!.content).toContain(adapter.prompts.agentInstructions);
  });
});

describe('action extraction', () => {
  it('takes the last non-empty tagged block and its character range', () => {
    const text = 'Maybe <action>go left</action>. No: <action> go right </action>';
    const found = locateAgentAnswer(text)!;
    expect(found.action).toBe('go right');
    expect(text.slice(found.start, found.end)).toBe('go right');
    expect(locateAgentAnswer('no block <action>  </action>')).toBeUndefined();
    const plain = '\n  take key  \nmore';
    const line = locateAgentAnswer(plain, 'plain')!;
    expect(line.action).toBe('take key');
    expect(plain.slice(line.start, line.end)).toBe('take key');
    expect(locateAgentAnswer(' \n ', 'plain')).toBeUndefined();
  });

  it('sums the log-probabilities of the tokens overlapping the action', () => {
    const tokens = [
      { token: 'a <act', logprob: -1 },
      { token: 'ion>go', logprob: -2 },
      { token: ' left<', logprob: -3 },
      { token: '/action>', logprob: -4 },
    ];
    const text = 'a <action>go left</action>';
    const { start, end } = locateAgentAnswer(text)!;
    expect(spanLogprob(text, tokens, start, end)).toBe(-5);
    expect(spanLogprob('other text', tokens, 0, 3)).toBeUndefined();
  });
});
