/**
 * The ChatML chat template (`<|im_start|>role\ncontent<|im_end|>\n`), used by SmolLM2, Qwen
 * and many other instruction-tuned models. A client that sends raw prompts (`/v1/completions`
 * for scoring) must write the same text the server's chat endpoint would.
 */
import type { ChatMessage } from './chat-model.js';

/** Options of {@link formatChatMLPrompt}. */
export interface ChatMLOptions {
  /**
   * System prompt put first when the conversation has none, as the model's own template does
   * (SmolLM2: `You are a helpful AI assistant named SmolLM, trained by Hugging Face`).
   * Default: none.
   */
  defaultSystemPrompt?: string;
  /** End with `<|im_start|>assistant\n`, where the model's answer starts. Default `true`. */
  addGenerationPrompt?: boolean;
}

/**
 * Writes `messages` in ChatML.
 *
 * @example
 * formatChatMLPrompt([{ role: 'user', content: 'Hi' }])
 * // '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'
 */
export function formatChatMLPrompt(
  messages: readonly ChatMessage[],
  options: ChatMLOptions = {},
): string {
  const parts: string[] = [];
  if (options.defaultSystemPrompt !== undefined && messages[0]?.role !== 'system') {
    parts.push(`<|im_start|>system\n${options.defaultSystemPrompt}<|im_end|>\n`);
  }
  for (const message of messages) {
    parts.push(`<|im_start|>${message.role}\n${message.content}<|im_end|>\n`);
  }
  if (options.addGenerationPrompt ?? true) parts.push('<|im_start|>assistant\n');
  return parts.join('');
}
