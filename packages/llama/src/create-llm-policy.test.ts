import { ConfigError } from '@dreamgym/core';
import { createCorridorAdapter } from '@dreamgym/core/testing';
import { describe, expect, it } from 'vitest';
import { createLlmPolicy } from './create-llm-policy.js';

describe('createLlmPolicy', () => {
  it('refuses the settings of earlier versions by name, before loading anything', async () => {
    const adapter = createCorridorAdapter();
    for (const [old, now] of [
      ['invalidActionPenalty', 'invalidAnswerPenalty'],
      ['invalidActionFallback', 'invalidAnswerFallback'],
    ]) {
      const attempt = createLlmPolicy({
        adapter,
        workDirectory: '/nonexistent',
        [old!]: old === 'invalidActionPenalty' ? -0.5 : 'skip',
      } as never);
      await expect(attempt).rejects.toThrow(ConfigError);
      await expect(attempt).rejects.toThrow(`${old} is now ${now}`);
    }
  });
});
