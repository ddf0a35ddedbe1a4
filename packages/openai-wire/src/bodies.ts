/**
 * The bodies of the OpenAI wire format as DreamGym's servers use them: the request schemas
 * of `POST /v1/chat/completions`, `POST /v1/completions` and `POST /v1/embeddings`, and the
 * response bodies of those and of `GET /v1/models`. Both `dreamgym model serve` and the
 * fake server of `@dreamgym/test-support` validate with these schemas, so the SDK's clients
 * are tested against the contract the real server enforces. Chat completions may be asked
 * for as a stream (`stream: true`, written by `chat-stream.ts`); text completions may not.
 *
 * Beyond OpenAI's fields, the ones RL trainers need from vLLM's server (SGLang's and
 * `dreamgym model serve` follow it): `return_token_ids` (the prompt's and the answer's token
 * ids), `prompt_logprobs` (teacher-forced log-probabilities of a prompt given as token ids),
 * `POST /tokenize`, and the LoRA adapter endpoints.
 */
import { z } from 'zod';

const TokenIdSchema = z.number().int().min(0);

const TextPartSchema = z.object({ type: z.literal('text'), text: z.string() });

/** A tool call of an assistant message. */
const ToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

/**
 * A chat message: text content, or text parts; an assistant's tool calls, a tool's result
 * (`role: "tool"` with the `tool_call_id` it answers).
 */
export const OpenAIChatMessageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(TextPartSchema), z.null()]).optional(),
  tool_calls: z.array(ToolCallSchema).nullish(),
  tool_call_id: z.string().nullish(),
});

/** A chat message as a request carries it, after validation. */
export type OpenAIChatMessage = z.output<typeof OpenAIChatMessageSchema>;

/** The function tools a request offers. */
export const ToolsSchema = z
  .array(
    z.looseObject({
      type: z.literal('function'),
      function: z.looseObject({
        name: z.string().min(1).max(64),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
      }),
    }),
  )
  .max(128)
  .nullish();

/** Which tool the model must call: `none`, `auto`, `required`, or a named function. */
export const ToolChoiceSchema = z
  .union([
    z.enum(['none', 'auto', 'required']),
    z.looseObject({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
  ])
  .nullish();

const StopSchema = z.union([z.string(), z.array(z.string()).max(4)]).nullish();
const SamplingFields = {
  model: z.string().optional(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(0).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: StopSchema,
  n: z.literal(1).nullish(),
  stream: z.literal(false, { error: 'stream is not supported; send stream: false' }).nullish(),
};

/** `POST /v1/chat/completions`. Unknown fields pass through. */
export const ChatCompletionRequestSchema = z.looseObject({
  ...SamplingFields,
  /** The answer as server-sent events of `chat.completion.chunk` (see `chatCompletionChunks`). */
  stream: z.boolean().nullish(),
  /** `include_usage`: a last chunk with the usage. */
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  messages: z.array(OpenAIChatMessageSchema).min(1),
  tools: ToolsSchema,
  tool_choice: ToolChoiceSchema,
  parallel_tool_calls: z.boolean().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  /** vLLM: `prompt_token_ids` on the response and `token_ids` on the choice. */
  return_token_ids: z.boolean().nullish(),
  /** vLLM: `{"choice": [...]}` constrains the answer to exactly one of the strings. */
  structured_outputs: z
    .looseObject({ choice: z.array(z.string().min(1)).min(1).max(1024).optional() })
    .nullish(),
  response_format: z
    .discriminatedUnion('type', [
      z.object({ type: z.literal('text') }),
      z.object({ type: z.literal('json_object') }),
      z.object({
        type: z.literal('json_schema'),
        json_schema: z.object({
          name: z.string().min(1),
          schema: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullish(),
          description: z.string().optional(),
        }),
      }),
    ])
    .nullish(),
});
/** A validated `POST /v1/chat/completions` request. */
export type ChatCompletionRequest = z.output<typeof ChatCompletionRequestSchema>;

/** `POST /v1/completions`: one prompt or a batch. Unknown fields pass through. */
export const CompletionRequestSchema = z.looseObject({
  ...SamplingFields,
  /** Text, texts, token ids, or lists of token ids (vLLM takes all four). */
  prompt: z.union([
    z.string().min(1),
    z.array(z.string().min(1)).min(1).max(32),
    z.array(TokenIdSchema).min(1),
    z.array(z.array(TokenIdSchema).min(1)).min(1).max(32),
  ]),
  max_tokens: z.number().int().min(0).nullish(),
  echo: z.boolean().nullish(),
  logprobs: z.number().int().min(0).max(20).nullish(),
  /** vLLM: each prompt token's teacher-forced log-probability, and this many alternatives. */
  prompt_logprobs: z.number().int().min(0).max(20).nullish(),
  /**
   * DreamGym's extension to `prompt_logprobs`: only the prompt tokens from this position on are
   * wanted (earlier entries come back null), so the prompt before it is evaluated without
   * logits. Servers that do not know the field ignore it and return every position.
   */
  prompt_logprobs_from: z.number().int().min(0).nullish(),
  /** vLLM: `prompt_token_ids` and `token_ids` on each choice. */
  return_token_ids: z.boolean().nullish(),
  suffix: z.null({ error: 'suffix is not supported' }).optional(),
});
/** A validated `POST /v1/completions` request. */
export type CompletionRequest = z.output<typeof CompletionRequestSchema>;

/**
 * vLLM's `POST /tokenize`: a conversation up to the assistant's answer
 * (`add_generation_prompt`, default true) or a text (`add_special_tokens`, default true).
 */
export const TokenizeRequestSchema = z.union([
  z.looseObject({
    model: z.string().optional(),
    messages: z.array(OpenAIChatMessageSchema).min(1),
    tools: ToolsSchema,
    tool_choice: ToolChoiceSchema,
    add_generation_prompt: z.boolean().nullish(),
  }),
  z.looseObject({
    model: z.string().optional(),
    prompt: z.string(),
    add_special_tokens: z.boolean().nullish(),
  }),
]);
/** A validated `POST /tokenize` request. */
export type TokenizeRequest = z.output<typeof TokenizeRequestSchema>;

/** vLLM's `POST /v1/load_lora_adapter`: a name for requests' `model`, and the adapter's folder. */
export const LoadLoraAdapterRequestSchema = z.looseObject({
  lora_name: z.string().min(1).max(200),
  lora_path: z.string().min(1),
});

/** vLLM's `POST /v1/unload_lora_adapter`. */
export const UnloadLoraAdapterRequestSchema = z.looseObject({
  lora_name: z.string().min(1).max(200),
});

/** `POST /v1/embeddings`. Unknown fields pass through. */
export const EmbeddingsRequestSchema = z.looseObject({
  model: z.string().optional(),
  input: z.union([z.string(), z.array(z.string())], {
    error: 'input must be a string or an array of strings',
  }),
  encoding_format: z.enum(['float', 'base64']).nullish(),
  dimensions: z.number().int().positive().nullish(),
});
/** A validated `POST /v1/embeddings` request. */
export type EmbeddingsRequest = z.output<typeof EmbeddingsRequestSchema>;

/** A message's content as one text (text parts joined). */
export function chatMessageText(
  content: z.output<typeof OpenAIChatMessageSchema>['content'],
): string {
  if (content === null || content === undefined) return '';
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

/** The `stop` field as a list. */
export function stopSequences(stop: string | string[] | null | undefined): string[] {
  if (stop === null || stop === undefined) return [];
  return typeof stop === 'string' ? [stop] : stop;
}

/** A generated token with its log-probability and, optionally, the most likely alternatives. */
export interface WireToken {
  token: string;
  logprob: number;
  top?: ReadonlyArray<{ token: string; logprob: number }>;
}

/** Token counts of a response. */
export interface WireUsage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from a cache (`prompt_tokens_details.cached_tokens`). */
  cachedTokens?: number;
}

function bytesOf(text: string): number[] {
  return [...Buffer.from(text, 'utf8')];
}

function usageBody(usage: WireUsage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    ...(usage.cachedTokens === undefined
      ? {}
      : { prompt_tokens_details: { cached_tokens: usage.cachedTokens } }),
  };
}

/** A `chat.completion` with one choice. */
export interface ChatCompletionBodyOptions {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  /** The answer's text; `null` when it only calls tools. */
  content: string | null;
  /** The answer's tool calls (`finishReason` is then `tool_calls`). */
  toolCalls?: ReadonlyArray<{
    id: string;
    type: 'function';
    function: { name: string; arguments: string };
  }>;
  finishReason: string;
  /** The tokens' log-probabilities; `null` when none were asked for (or none are given). */
  logprobs: readonly WireToken[] | null;
  /** At most this many alternatives per token. Default 0. */
  topLogprobs?: number;
  /** `null` leaves `usage` out, as some servers do. */
  usage: WireUsage | null;
  /** With `return_token_ids`: the prompt's and the answer's token ids (vLLM's fields). */
  tokenIds?: { prompt: readonly number[]; completion: readonly number[] };
}

/** The body of a chat completion. */
export function chatCompletionBody(options: ChatCompletionBodyOptions) {
  const top = options.topLogprobs ?? 0;
  return {
    id: options.id,
    object: 'chat.completion',
    created: options.created,
    model: options.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: options.content,
          refusal: null,
          ...(options.toolCalls && options.toolCalls.length > 0
            ? { tool_calls: options.toolCalls }
            : {}),
        },
        finish_reason: options.finishReason,
        ...(options.tokenIds ? { token_ids: options.tokenIds.completion } : {}),
        logprobs:
          options.logprobs === null
            ? null
            : {
                content: options.logprobs.map((token) => ({
                  token: token.token,
                  logprob: token.logprob,
                  bytes: bytesOf(token.token),
                  top_logprobs: (token.top ?? []).slice(0, top).map((alternative) => ({
                    token: alternative.token,
                    logprob: alternative.logprob,
                    bytes: bytesOf(alternative.token),
                  })),
                })),
                refusal: null,
              },
      },
    ],
    ...(options.usage === null ? {} : { usage: usageBody(options.usage) }),
    ...(options.tokenIds ? { prompt_token_ids: options.tokenIds.prompt } : {}),
  };
}

/** A prompt or generated token of a text completion; `logprob` is `null` for the first prompt token. */
export interface CompletionToken {
  token: string;
  logprob: number | null;
  top?: ReadonlyArray<{ token: string; logprob: number }>;
}

/** The `logprobs` of a text-completion choice (the legacy layout, with text offsets). */
export function completionLogprobs(tokens: readonly CompletionToken[], top: number) {
  const offsets: number[] = [];
  let offset = 0;
  for (const token of tokens) {
    offsets.push(offset);
    offset += token.token.length;
  }
  return {
    tokens: tokens.map((token) => token.token),
    token_logprobs: tokens.map((token) => token.logprob),
    top_logprobs: tokens.map((token) =>
      token.logprob === null || token.top === undefined || top === 0
        ? null
        : Object.fromEntries(
            token.top.slice(0, top).map((alternative) => [alternative.token, alternative.logprob]),
          ),
    ),
    text_offset: offsets,
  };
}

/** One prompt token's entry of `prompt_logprobs`: the token's own, and alternatives, by token id. */
export type PromptTokenLogprobs = Record<
  string,
  { logprob: number; rank: number | null; decoded_token: string }
>;

/** The body of a text completion (`text_completion`). */
export function completionBody(options: {
  id: string;
  created: number;
  model: string;
  choices: Array<{
    text: string;
    finishReason: string;
    logprobs: ReturnType<typeof completionLogprobs> | null;
    /** With `prompt_logprobs`: null for the first token, then each token's by id (vLLM's layout). */
    promptLogprobs?: ReadonlyArray<PromptTokenLogprobs | null>;
    /** With `return_token_ids`. */
    tokenIds?: { prompt: readonly number[]; completion: readonly number[] };
  }>;
  usage: WireUsage;
}) {
  return {
    id: options.id,
    object: 'text_completion',
    created: options.created,
    model: options.model,
    choices: options.choices.map((choice, index) => ({
      index,
      text: choice.text,
      finish_reason: choice.finishReason,
      logprobs: choice.logprobs,
      ...(choice.promptLogprobs ? { prompt_logprobs: choice.promptLogprobs } : {}),
      ...(choice.tokenIds
        ? { prompt_token_ids: choice.tokenIds.prompt, token_ids: choice.tokenIds.completion }
        : {}),
    })),
    usage: usageBody(options.usage),
  };
}

/**
 * The body of an embeddings response: one item per vector, in order unless `reverse` (each
 * item keeps its `index`), as floats or as base64 little-endian float32.
 */
export function embeddingsBody(options: {
  model: string;
  vectors: readonly number[][];
  encoding: 'float' | 'base64';
  /** `null` leaves `usage` out. */
  promptTokens: number | null;
  reverse?: boolean;
}) {
  const data = options.vectors.map((vector, index) => ({
    object: 'embedding',
    index,
    embedding:
      options.encoding === 'base64'
        ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
        : vector,
  }));
  if (options.reverse) data.reverse();
  return {
    object: 'list',
    model: options.model,
    data,
    ...(options.promptTokens === null
      ? {}
      : { usage: { prompt_tokens: options.promptTokens, total_tokens: options.promptTokens } }),
  };
}

/** The body of `GET /v1/models`. */
export function modelListBody(ids: readonly string[], ownedBy: string, created: number) {
  return {
    object: 'list',
    data: ids.map((id) => ({ id, object: 'model', created, owned_by: ownedBy })),
  };
}
