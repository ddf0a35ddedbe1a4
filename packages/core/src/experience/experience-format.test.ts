import { describe, expect, it } from 'vitest';
import type { Step, Task } from '../mdp/schemas.js';
import type { ScoredTransition } from '../replay/retriever.js';
import { compactExperienceFormat, standardExperienceFormat } from './experience-format.js';
import type { ExperienceInput } from './experience-model.js';
import { ExperienceStepOutputSchema } from './experience-prompt.js';

const task: Task = {
  id: 't',
  domain: 'house',
  instruction: 'put a mug in the fridge',
  origin: 'seed',
  meta: {},
};

function demo(index: number, action: string, next: string, done = false): ScoredTransition {
  return {
    score: 1 - index / 10,
    transition: {
      id: `d${index}`,
      domain: 'house',
      taskId: `other${index}`,
      instruction: 'put a cup in the fridge',
      stepIndex: 1,
      state: { text: 'You are in the middle of a room.' },
      action,
      nextState: { text: next },
      reward: done ? 1 : 0,
      done,
      source: 'offline',
    },
  };
}

const steps: Step[] = [
  {
    observation: {
      text: 'You are in the middle of a room. You see a fridge 1 and a countertop 1.',
    },
    action: 'go to countertop 1',
    reward: 0,
    done: false,
  },
  {
    observation: { text: 'On the countertop 1, you see a mug 2.' },
    action: 'take mug 2 from countertop 1',
    reward: 0,
    done: false,
  },
];

function input(history: Step[], state: string, action: string): ExperienceInput {
  return {
    task,
    history,
    state: { text: state },
    action,
    demos: [
      demo(0, 'go to fridge 1', 'The fridge 1 is closed.'),
      demo(
        1,
        'open fridge 1',
        'You open the fridge 1. The fridge 1 is open. In it, you see nothing.',
      ),
      demo(2, 'put cup 1 in/on fridge 1', 'You put the cup 1 in/on the fridge 1.', true),
      demo(3, 'go to fridge 2', 'The fridge 2 is closed.'),
    ],
  };
}

describe('compactExperienceFormat', () => {
  const format = compactExperienceFormat();

  it('shows task, history, the top-k demos as action -> outcome, the state and the action, in that order', () => {
    const prompt = format.build(
      'A house.',
      input(steps, 'You pick up the mug 2 from the countertop 1.', 'go to fridge 1'),
      {},
    );
    const user = prompt.messages[1]!.content;
    const order = [
      'Task: put a mug in the fridge',
      'History:',
      '> take mug 2 from countertop 1',
      'Examples from similar situations:',
      '> go to fridge 1\nThe fridge 1 is closed.',
      'Current state:',
      'Action: go to fridge 1',
    ];
    let at = -1;
    for (const part of order) {
      const index = user.indexOf(part);
      expect(index, part).toBeGreaterThan(at);
      at = index;
    }
    expect(prompt.demoIds).toEqual(['d0', 'd1', 'd2']);
    expect(user).toContain('[episode ends, success]');
    expect(user).not.toContain('fridge 2');
    expect(prompt.messages[0]!.content).toMatch(
      /^You are the world model of a text environment\.\n\nA house\./,
    );
    const without = compactExperienceFormat({ descriptionTokens: 0 }).build(
      'A house.',
      input(steps, 'state', 'look'),
      {},
    );
    expect(without.messages[0]!.content).toMatch(
      /^You are the world model of a text environment\.\n\nPredict what/,
    );
  });

  it('keeps the prompt prefix of the previous step of the episode (KV-cache reuse)', () => {
    const earlier = format.build(
      'A house.',
      input(steps.slice(0, 1), steps[1]!.observation.text, steps[1]!.action),
      {},
    );
    const later = format.build(
      'A house.',
      input(steps, 'You pick up the mug 2 from the countertop 1.', 'go to fridge 1'),
      {},
    );
    const prefix = (text: string) => text.slice(0, text.indexOf('Examples'));
    const before = prefix(earlier.messages[1]!.content).trimEnd();
    expect(later.messages[0]).toEqual(earlier.messages[0]);
    expect(later.messages[1]!.content.startsWith(before)).toBe(true);
  });

  it('fits the history and demos into their budgets, oldest steps dropped first', () => {
    const long: Step[] = Array.from({ length: 40 }, (_, index) => ({
      observation: { text: `Observation number ${index} with some words in it.` },
      action: `go to shelf ${index}`,
      reward: 0,
      done: false,
    }));
    const prompt = format.build('A house.', input(long, 'Now.', 'look'), {
      historyTokens: 60,
      demoTokens: 12,
    });
    expect(prompt.history.dropped).toBeGreaterThan(30);
    expect(prompt.messages[1]!.content).toContain('go to shelf 39');
    expect(prompt.messages[1]!.content).not.toContain('go to shelf 0\n');
    expect(prompt.demoIds).toEqual(['d0']);
  });

  it('bounds every string of its answer, writes reasoning before the next state, and reads the outcome reward', () => {
    const schema = format.schema;
    const target = format.target({
      reasoning: 'r'.repeat(500),
      nextState: 'You put the mug 2 in/on the fridge 1.',
      done: true,
      success: true,
      reward: 1,
    });
    expect(Object.keys(JSON.parse(target))).toEqual(['reasoning', 'nextState', 'done', 'success']);
    const value = schema.parse(JSON.parse(target));
    expect(format.read(value)).toMatchObject({ done: true, success: true, reward: 1 });
    expect(
      schema.safeParse({ reasoning: 'x'.repeat(161), nextState: 'a', done: false, success: false })
        .success,
    ).toBe(false);
    expect(format.read({ reasoning: '', nextState: 'a', done: false, success: true }).reward).toBe(
      0,
    );
    expect(format.maxTokens).toBe(478);
  });
});

describe('standardExperienceFormat', () => {
  it('is the full prompt and schema, and its target parses under the schema', () => {
    const target = standardExperienceFormat.target({
      reasoning: 'why',
      nextState: 'next',
      done: false,
      success: false,
      reward: 0,
    });
    expect(ExperienceStepOutputSchema.parse(JSON.parse(target))).toEqual({
      reasoning: 'why',
      nextState: 'next',
      done: false,
      success: false,
      reward: 0,
    });
    const prompt = standardExperienceFormat.build('A house.', input(steps, 'state', 'look'), {});
    expect(prompt.messages[1]!.content).toContain('Similar transitions of the real environment');
  });
});
