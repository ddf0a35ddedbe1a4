/**
 * A streamed chat completion put back together from its server-sent events, as the
 * non-streamed reply would have been: the content and tool calls from the chunks' deltas,
 * the prompt's token ids from the chunk that carries them (vLLM, SGLang and `dreamgym model
 * serve` put `prompt_token_ids` on the first), and the answer's token ids and log-probabilities
 * from every chunk's `token_ids` and `logprobs.content`, in order. The proxy records the
 * assembled reply, so a streamed call and the same call unstreamed are recorded alike.
 */

interface ChunkChoice {
  index?: number;
  delta?: {
    content?: string | null;
    tool_calls?: Array<{
      index?: number;
      id?: string;
      function?: { name?: string; arguments?: string };
    }>;
  };
  finish_reason?: string | null;
  token_ids?: number[] | null;
  logprobs?: { content?: Array<{ logprob: number; token?: string }> | null } | null;
}

interface Chunk {
  id?: string;
  model?: string;
  prompt_token_ids?: number[] | null;
  choices?: ChunkChoice[];
  error?: unknown;
}

/** Splits a growing SSE text into complete events' `data` payloads; the rest waits for more. */
export class SseSplitter {
  private buffer = '';

  /** Adds text; returns the `data` of each event now complete (`[DONE]` included). */
  push(text: string): string[] {
    this.buffer += text;
    const events: string[] = [];
    for (;;) {
      const match = /\r?\n\r?\n/.exec(this.buffer);
      if (!match) break;
      const event = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data !== '') events.push(data);
    }
    return events;
  }
}

/** Accumulates the chunks of one streamed chat completion (choice 0). */
export class StreamAssembly {
  private content = '';
  private hasContent = false;
  private readonly toolCalls: Array<{ id: string; name: string; arguments: string }> = [];
  private finishReason: string | null = null;
  private promptTokenIds: number[] | undefined;
  private readonly tokenIds: number[] = [];
  private readonly logprobs: Array<{ logprob: number; token?: string }> = [];
  private sawTokenIds = false;
  private id = '';
  private model = '';
  /** An `error` object the stream carried instead of chunks. */
  error: unknown;

  /** Takes one event's parsed `data`. */
  add(chunk: Chunk): void {
    if (chunk.error !== undefined) this.error = chunk.error;
    if (chunk.id) this.id = chunk.id;
    if (chunk.model) this.model = chunk.model;
    if (Array.isArray(chunk.prompt_token_ids)) this.promptTokenIds = chunk.prompt_token_ids;
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string') {
        this.content += delta.content;
        this.hasContent = true;
      }
      for (const call of delta.tool_calls ?? []) {
        const index = call.index ?? 0;
        const slot = this.toolCalls[index] ?? { id: '', name: '', arguments: '' };
        this.toolCalls[index] = slot;
        if (call.id) slot.id = call.id;
        if (call.function?.name) slot.name += call.function.name;
        if (call.function?.arguments) slot.arguments += call.function.arguments;
      }
      if (Array.isArray(choice.token_ids)) {
        this.sawTokenIds = true;
        this.tokenIds.push(...choice.token_ids);
      }
      for (const entry of choice.logprobs?.content ?? []) this.logprobs.push(entry);
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
  }

  /** Whether a chunk so far carried the prompt's token ids. */
  get hasPromptTokenIds(): boolean {
    return this.promptTokenIds !== undefined;
  }

  /** The reply as a non-streamed chat completion would carry it. */
  reply(): Record<string, unknown> {
    return {
      id: this.id,
      object: 'chat.completion',
      model: this.model,
      ...(this.promptTokenIds ? { prompt_token_ids: this.promptTokenIds } : {}),
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            // A tool call's stream opens with an empty text delta, where the unstreamed reply has null.
            content:
              this.hasContent && !(this.content === '' && this.toolCalls.length > 0)
                ? this.content
                : null,
            ...(this.toolCalls.length > 0
              ? {
                  tool_calls: this.toolCalls.map((call) => ({
                    id: call.id,
                    type: 'function',
                    function: { name: call.name, arguments: call.arguments },
                  })),
                }
              : {}),
          },
          finish_reason: this.finishReason ?? 'stop',
          ...(this.sawTokenIds ? { token_ids: this.tokenIds } : {}),
          logprobs: this.logprobs.length > 0 ? { content: this.logprobs } : null,
        },
      ],
    };
  }
}
