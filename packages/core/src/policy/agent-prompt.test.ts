import { describe, expect, it } from 'vitest';
import { corridorTask } from '../testing/corridor-domain.js';
import { buildAgentMessages, formatAgentAnswer, parseAgentAnswer } from './agent-prompt.js';

const task = corridorTask({ length: 4, keyRoom: 1, doorRoom: 2 });
const observation = { text: 'You are in room 1. You see a key.', actions: ['go left', 'take key'] };

describe('the agent prompt', () => {
  // Trained adapters (behaviour cloning on a GPU) learned these exact bytes: a change here
  // invalidates them, so it must be deliberate.
  it('renders the layout LLM policies were trained under, byte for byte', () => {
    const messages = buildAgentMessages(
      task,
      observation,
      ['go right', 'go left', 'go right', 'go left'],
      observation.actions,
      {
        agentInstructions: 'Move with go left/right.',
        environmentDescription: 'A corridor.',
        historyWindow: 3,
      },
    );
    expect(messages).toEqual([
      {
        role: 'system',
        content:
          'A corridor.\nMove with go left/right.\nReply with exactly one action inside <action></action> and nothing else.',
      },
      {
        role: 'user',
        content: [
          `Task: ${task.instruction}`,
          'Previous actions: ... go left; go right; go left',
          'Observation: You are in room 1. You see a key.',
          'Admissible actions: go left; take key',
        ].join('\n'),
      },
    ]);
  });

  it('states the answer format, and a system prompt replaces the whole system message', () => {
    const system = (options: Parameters<typeof buildAgentMessages>[4]) =>
      buildAgentMessages(task, observation, [], [], options)[0]!.content;
    expect(system({ agentInstructions: 'I', answerFormat: 'reasoned' })).toContain(
      'Think step by step',
    );
    expect(system({ agentInstructions: 'I', answerFormat: 'plain' })).toBe(
      'I\nReply with exactly one action and nothing else.',
    );
    expect(system({ agentInstructions: 'I', systemPrompt: 'Only this.' })).toBe('Only this.');
    const user = buildAgentMessages(task, observation, [], observation.actions, {
      agentInstructions: '',
      showCandidates: false,
    })[1]!.content;
    expect(user).not.toContain('Admissible');
    expect(user).not.toContain('Previous actions');
  });

  it('parses what it formats, in every answer format', () => {
    for (const format of ['tagged', 'reasoned', 'plain'] as const) {
      expect(parseAgentAnswer(formatAgentAnswer('take key', format), format)).toBe('take key');
    }
    expect(parseAgentAnswer('I think so. <action>go left</action>', 'reasoned')).toBe('go left');
    expect(parseAgentAnswer('no block here')).toBeUndefined();
  });
});
