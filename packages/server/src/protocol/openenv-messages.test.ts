import { describe, expect, it } from 'vitest';
import { plainStepAction, WsIncomingMessageSchema } from './openenv-messages.js';

describe('plainStepAction', () => {
  it('takes the common step message without the schemas, as the schemas would', () => {
    const message = { type: 'step', data: { action: 'go to desk 1' } };
    expect(plainStepAction(message)).toEqual({ action: 'go to desk 1' });
    expect(WsIncomingMessageSchema.parse(message)).toEqual(message);
  });

  it.each([
    [{ type: 'reset', data: {} }],
    [{ type: 'step' }],
    [{ type: 'step', data: null }],
    [{ type: 'step', data: { action: 7 } }],
    [{ type: 'step', data: { action: 'look', metadata: { a: 1 } } }],
    [{ type: 'step', data: { action: 'look' }, extra: true }],
    [{ type: 'step', data: { action: 'x'.repeat(16_385) } }],
  ])('leaves %j to the schemas', (message) => {
    expect(plainStepAction(message)).toBeUndefined();
  });
});
