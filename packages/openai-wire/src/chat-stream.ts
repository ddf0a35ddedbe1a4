/**
 * A chat completion as a stream (`stream: true`): the chunks of `chat.completion.chunk` in the
 * layout vLLM writes with `return_token_ids`, so a client that assembles a stream gets the
 * same answer, token for token, as the unstreamed reply: a first chunk with the role and the
 * prompt's token ids, then one chunk per answer token (its text, its id in `token_ids`, its
 * log-probability), or one chunk with the tool calls and all their tokens, a last chunk with
 * the finish reason, and a usage chunk when `stream_options.include_usage` asks for one.
 */
import type { chatCompletionBody } from './bodies.js';

type ChatCompletion = ReturnType<typeof chatCompletionBody>;
type LogprobEntry = NonNullable<ChatCompletion['choices'][number]['logprobs']>['content'][number];

/** The chunks of `reply`; `tokenTexts` are the answer tokens' texts (they split the content). */
export function chatCompletionChunks(
  reply: ChatCompletion,
  tokenTexts: readonly string[],
  options: { includeUsage?: boolean } = {},
): Record<string, unknown>[] {
  const choice = reply.choices[0]!;
  const { message } = choice;
  const tokenIds = 'token_ids' in choice ? (choice.token_ids as readonly number[]) : undefined;
  const logprobs = choice.logprobs?.content;
  const head = {
    id: reply.id,
    object: 'chat.completion.chunk',
    created: reply.created,
    model: reply.model,
  };
  const chunk = (
    delta: Record<string, unknown>,
    extra: { tokenIds?: readonly number[]; logprobs?: readonly LogprobEntry[]; finish?: string },
  ) => ({
    ...head,
    choices: [
      {
        index: 0,
        delta,
        logprobs: extra.logprobs ? { content: extra.logprobs, refusal: null } : null,
        finish_reason: extra.finish ?? null,
        ...(tokenIds ? { token_ids: extra.tokenIds ?? [] } : {}),
      },
    ],
  });
  const chunks: Record<string, unknown>[] = [
    {
      ...chunk({ role: 'assistant', content: '' }, {}),
      ...('prompt_token_ids' in reply ? { prompt_token_ids: reply.prompt_token_ids } : {}),
    },
  ];
  const count = tokenIds?.length ?? tokenTexts.length;
  const calls = 'tool_calls' in message ? message.tool_calls : undefined;
  if (calls && calls.length > 0) {
    chunks.push(
      chunk(
        {
          ...(message.content ? { content: message.content } : {}),
          tool_calls: calls.map((call, index) => ({ index, ...call })),
        },
        { ...(tokenIds ? { tokenIds } : {}), ...(logprobs ? { logprobs } : {}) },
      ),
    );
  } else {
    const content = message.content ?? '';
    // Token texts that do not spell the content (a stop sequence cut it) carry no text: the
    // whole content rides on the first token's chunk, so the assembled text is the content.
    const spelled = tokenTexts.length === count && tokenTexts.join('') === content;
    for (let index = 0; index < count; index += 1) {
      const text = spelled ? tokenTexts[index]! : index === 0 ? content : '';
      const entry = logprobs?.[index];
      chunks.push(
        chunk(
          { content: text },
          {
            ...(tokenIds ? { tokenIds: [tokenIds[index]!] } : {}),
            ...(entry ? { logprobs: [entry] } : {}),
          },
        ),
      );
    }
    if (count === 0 && content !== '') chunks.push(chunk({ content }, {}));
  }
  chunks.push(chunk({}, { finish: choice.finish_reason }));
  if (options.includeUsage && 'usage' in reply) {
    chunks.push({ ...head, choices: [], usage: reply.usage });
  }
  return chunks;
}

/** The server-sent events of `chunks`, ending with `data: [DONE]`. */
export function serverSentEvents(chunks: readonly unknown[]): string {
  return `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('')}data: [DONE]\n\n`;
}
