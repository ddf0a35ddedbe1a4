import { describe, expect, it } from 'vitest';
import { formatChatMLPrompt } from './chat-template.js';

describe('formatChatMLPrompt', () => {
  it('writes each message in ChatML and ends with the generation prompt', () => {
    expect(
      formatChatMLPrompt([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
        { role: 'user', content: 'Again' },
      ]),
    ).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('adds the default system prompt only when the conversation has none', () => {
    const options = { defaultSystemPrompt: 'You are SmolLM.' };
    expect(formatChatMLPrompt([{ role: 'user', content: 'Hi' }], options)).toBe(
      '<|im_start|>system\nYou are SmolLM.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(
      formatChatMLPrompt(
        [
          { role: 'system', content: 'Mine.' },
          { role: 'user', content: 'Hi' },
        ],
        { ...options, addGenerationPrompt: false },
      ),
    ).toBe('<|im_start|>system\nMine.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n');
  });
});
