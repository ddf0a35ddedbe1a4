/**
 * How a conversation becomes the model's prompt tokens: ChatML (core's `formatChatMLPrompt`,
 * with the GGUF's default system prompt), or the GGUF's own Jinja template through
 * node-llama-cpp's chat wrappers. Chat and scoring from messages both prompt through it.
 */
import { ModelError } from '@dreamgym/core';
import { type ChatMessage, formatChatMLPrompt } from '@dreamgym/core/models';
import type { ChatHistoryItem, LlamaModel, Token } from 'node-llama-cpp';
import { llamaModule } from './llama-binding.js';

/** The GGUF's default system prompt, when its ChatML template adds one to conversations without. */
export function defaultSystemPromptOf(template: string | undefined): string | undefined {
  const match = template?.match(/<\|im_start\|>system\s*\n([^<'"]*?)<\|im_end\|>/);
  return match?.[1];
}

/** A model's chat template, as chosen by the `chatTemplate` option. */
export class ChatTemplate {
  /** The template in use. */
  readonly kind: 'chatml' | 'model';
  /** System prompt added to conversations without one (the GGUF template's), if any. */
  readonly defaultSystemPrompt: string | undefined;

  /**
   * `setting` `auto`: ChatML when the GGUF's template is ChatML or absent, else the model's.
   * `modelId` names the model in errors.
   */
  constructor(
    private readonly model: LlamaModel,
    setting: 'auto' | 'chatml' | 'model',
    private readonly modelId: string,
  ) {
    const template = model.fileInfo.metadata.tokenizer?.chat_template;
    const chatml = template === undefined || template.includes('<|im_start|>');
    this.kind = setting === 'auto' ? (chatml ? 'chatml' : 'model') : setting;
    this.defaultSystemPrompt = defaultSystemPromptOf(template);
  }

  /** The prompt tokens of a conversation, ending where the assistant's answer starts. */
  promptTokens(messages: readonly ChatMessage[]): Promise<Token[]> | Token[] {
    if (this.kind === 'chatml') {
      const text = formatChatMLPrompt(messages, {
        ...(this.defaultSystemPrompt === undefined
          ? {}
          : { defaultSystemPrompt: this.defaultSystemPrompt }),
      });
      return this.model.tokenize(text, true);
    }
    return this.wrapperTokens(messages);
  }

  private async wrapperTokens(messages: readonly ChatMessage[]): Promise<Token[]> {
    const { JinjaTemplateChatWrapper, resolveChatWrapper } = await llamaModule();
    const template = this.model.fileInfo.metadata.tokenizer?.chat_template;
    // The GGUF's own Jinja template, rendered as the model's authors wrote it; a wrapper
    // node-llama-cpp picks by the model's family where the file has none.
    const wrapper =
      template !== undefined
        ? new JinjaTemplateChatWrapper({ template, tokenizer: this.model.tokenizer })
        : resolveChatWrapper(this.model);
    if (!wrapper) throw new ModelError(`${this.modelId}: no chat template for this model.`);
    const history: ChatHistoryItem[] = messages.map((message) =>
      message.role === 'assistant'
        ? { type: 'model', response: [message.content] }
        : { type: message.role, text: message.content },
    );
    history.push({ type: 'model', response: [] });
    return wrapper
      .generateContextState({ chatHistory: history })
      .contextText.tokenize(this.model.tokenizer);
  }
}
