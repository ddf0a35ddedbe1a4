/**
 * `captureMiddleware`: a {@link ModelCallCapture} as AI SDK language-model middleware, the
 * SDK's documented way to add recording to any model (`wrapLanguageModel`), for agents whose
 * model is not built with a `fetch` of ours (a model made elsewhere, a provider registry):
 *
 * ```ts
 * const model = wrapLanguageModel({ model: provider('smollm2'), middleware: captureMiddleware(capture) });
 * ```
 *
 * Each `doGenerate` / `doStream` becomes a {@link ModelCall} of the calling episode, in the same
 * records as the fetch capture's: the messages and tool definitions as the provider sent them
 * (its request body; the SDK's prompt and tools when the provider does not return one), the
 * answer's text and tool calls, and the token ids and log-probabilities the provider returned
 * in its raw response body or its provider metadata. Token ids are asked for (vLLM's
 * `return_token_ids` and `logprobs`, through `providerOptions`) from OpenAI-compatible
 * providers, which copy unknown provider options into the request body. The capture's `model`
 * override reaches the server the same way. Other providers may refuse options they do not
 * know: give them a capture made with `requestTokens: false`. Streamed calls are recorded with their text and
 * tool calls but without tokens: providers give a stream's raw body only in pieces, if at all.
 *
 * Works with `ai` 6 and `ai` 7 alike. `ai` 6 calls middleware with its `v3` language-model
 * specification; `ai` 7 accepts `v3` middleware but calls it with `v4` call options, models and
 * results (no conversion). The fields the capture reads and writes are the same in both, so its
 * types below name only those ({@link CaptureMiddleware}), and the middleware is assignable to
 * either version's `LanguageModelMiddleware` whichever `ai` the caller's types resolve to.
 * The provider options go under the provider's camelCase key, which `@ai-sdk/openai-compatible`
 * 2 and 3 both read (3 warns that a non-camelCase key such as `my-server` is deprecated).
 */
import {
  type CapturedToolCall,
  EPISODE_OVER_MESSAGE,
  type ModelCallCapture,
  type ReplyTokens,
  replyTokens,
} from './capture.js';

/** The part of a language model the capture reads (`v3` and `v4` models). */
interface ModelLike {
  readonly provider: string;
  readonly modelId: string;
}

/** Provider options or metadata: objects of JSON values under each provider's key. */
type ProviderRecords = Record<string, Record<string, unknown>>;

/** The part of a call's options the capture reads and writes (`v3` and `v4`). */
interface CallParamsLike {
  prompt: unknown[];
  tools?: unknown[] | undefined;
  providerOptions?: ProviderRecords | undefined;
}

/** A content part or stream part, with the fields of the text and tool-call parts. */
interface PartLike {
  type: string;
  text?: string;
  delta?: string;
  toolCallId?: string;
  toolName?: string;
  input?: string;
}

interface FinishReasonLike {
  unified: string;
  raw: string | undefined;
}

/** The part of a `doGenerate` result the capture reads (`v3` and `v4`). */
interface GenerateResultLike {
  content: readonly PartLike[];
  finishReason: FinishReasonLike;
  providerMetadata?: ProviderRecords | undefined;
  request?: { body?: unknown } | undefined;
  response?: { body?: unknown } | undefined;
}

/** The part of a `doStream` result the capture reads (`v3` and `v4`). */
interface StreamResultLike {
  stream: ReadableStream<PartLike>;
  request?: { body?: unknown } | undefined;
}

/**
 * What {@link captureMiddleware} returns: AI SDK language-model middleware for `ai` 6 (`v3`)
 * and `ai` 7 (which takes `v3` middleware and calls it with `v4` values). Each wrapper passes
 * the wrapped model's own result through, whichever specification version it is.
 */
export interface CaptureMiddleware {
  readonly specificationVersion: 'v3';
  transformParams: <Params extends CallParamsLike>(options: {
    type: 'generate' | 'stream';
    params: Params;
    model: ModelLike;
  }) => Promise<Params>;
  wrapGenerate: <Result extends GenerateResultLike>(options: {
    doGenerate: () => PromiseLike<Result>;
    params: CallParamsLike;
    model: ModelLike;
  }) => Promise<Result>;
  wrapStream: <Result extends StreamResultLike>(options: {
    doStream: () => PromiseLike<Result>;
    params: CallParamsLike;
    model: ModelLike;
  }) => Promise<Result>;
}

/**
 * AI SDK middleware that records every call of the wrapped model into `capture` (into the
 * calling episode, or `capture.untracked` outside any), and answers a call made after its
 * episode has ended with {@link EPISODE_OVER_MESSAGE} and no tool call, without reaching the
 * model, so the agent's loop stops as it does on a final answer.
 */
export function captureMiddleware(capture: ModelCallCapture): CaptureMiddleware {
  return {
    specificationVersion: 'v3',
    transformParams: async ({ params, model }) =>
      withServerOptions(capture, params, model.provider),
    wrapGenerate: async ({ doGenerate, params, model }) => {
      // `never`: the answer is a valid result of either specification the caller's `ai` uses.
      if (capture.episodeOver) return episodeOverResult() as never;
      const started = performance.now();
      const result = await doGenerate();
      const received = performance.now();
      const call = recordedCall(params, model.modelId, result.request?.body, {
        content: result.content,
        finishReason: result.finishReason.raw ?? result.finishReason.unified,
        tokens: {
          ...metadataTokens(result.providerMetadata),
          ...replyTokens(result.response?.body),
        },
      });
      capture.record({
        ...call,
        milliseconds: received - started,
        overheadMilliseconds: performance.now() - received,
      });
      return result;
    },
    wrapStream: async ({ doStream, params, model }) => {
      if (capture.episodeOver) return episodeOverStream() as never;
      const started = performance.now();
      const result = await doStream();
      const content: PartLike[] = [];
      let text = '';
      let finishReason = 'stop';
      const recording = new TransformStream<PartLike, PartLike>({
        transform(part, controller) {
          if (part.type === 'text-delta') text += part.delta ?? '';
          else if (part.type === 'tool-call') content.push(part);
          else if (part.type === 'finish') {
            const reason = (part as { finishReason?: FinishReasonLike }).finishReason;
            if (reason) finishReason = reason.raw ?? reason.unified;
          }
          controller.enqueue(part);
        },
        flush() {
          const received = performance.now();
          if (text) content.unshift({ type: 'text', text });
          const call = recordedCall(params, model.modelId, result.request?.body, {
            content,
            finishReason,
            tokens: {},
          });
          capture.record({
            ...call,
            milliseconds: received - started,
            overheadMilliseconds: performance.now() - received,
          });
        },
      });
      return { ...result, stream: result.stream.pipeThrough(recording) };
    },
  };
}

/**
 * Adds the capture's server options to the provider options of the provider's own key (the
 * provider's name before its first dot, in camelCase, which OpenAI-compatible providers copy
 * into the request body): token ids and log-probabilities, and the model override.
 */
function withServerOptions<Params extends CallParamsLike>(
  capture: ModelCallCapture,
  params: Params,
  provider: string,
): Params {
  const extra: Record<string, string | boolean> = {
    ...(capture.requestTokens ? { return_token_ids: true, logprobs: true } : {}),
    ...(capture.model !== undefined ? { model: capture.model } : {}),
  };
  if (Object.keys(extra).length === 0) return params;
  const key = camelCase(provider.split('.')[0]!.trim());
  const providerOptions = params.providerOptions ?? {};
  return {
    ...params,
    providerOptions: { ...providerOptions, [key]: { ...providerOptions[key], ...extra } },
  };
}

/** `my-server` -> `myServer`: the provider-options key `@ai-sdk/openai-compatible` 3 asks for. */
function camelCase(name: string): string {
  return name.replace(/[_-]([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/** The parts of a call the model's answer gives. */
interface Answer {
  content: readonly PartLike[];
  finishReason: string;
  tokens: ReplyTokens;
}

function recordedCall(
  params: CallParamsLike,
  modelId: string,
  requestBody: unknown,
  answer: Answer,
) {
  const wire = wireRequest(requestBody);
  const text = answer.content
    .flatMap((part) => (part.type === 'text' ? [part.text ?? ''] : []))
    .join('');
  const toolCalls: CapturedToolCall[] = answer.content.flatMap((part) =>
    part.type === 'tool-call'
      ? [{ id: part.toolCallId ?? '', name: part.toolName ?? '', arguments: part.input ?? '' }]
      : [],
  );
  return {
    model: typeof wire?.model === 'string' ? wire.model : modelId,
    messages: Array.isArray(wire?.messages) ? wire.messages : params.prompt,
    tools: Array.isArray(wire?.tools) ? wire.tools : (params.tools ?? []),
    content: text.length > 0 ? text : null,
    toolCalls,
    finishReason: answer.finishReason,
    ...answer.tokens,
  };
}

/** The request body the provider sent (a JSON text or an object), when it returned one. */
function wireRequest(body: unknown): Record<string, unknown> | undefined {
  if (typeof body === 'string') {
    try {
      const parsed: unknown = JSON.parse(body);
      return typeof parsed === 'object' && parsed !== null
        ? (parsed as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  }
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : undefined;
}

/**
 * Tokens a provider put in its metadata rather than its raw body: `promptTokenIds`,
 * `completionTokenIds` (or `tokenIds`) and `logprobs` (numbers, or OpenAI's `{ logprob }`
 * entries, as `@ai-sdk/openai` returns them) under any provider key.
 */
function metadataTokens(metadata: ProviderRecords | undefined): ReplyTokens {
  const tokens: ReplyTokens = {};
  for (const entry of Object.values(metadata ?? {})) {
    const ids = (value: unknown) =>
      Array.isArray(value) && value.every((id) => Number.isInteger(id))
        ? (value as number[])
        : undefined;
    const prompt = ids(entry.promptTokenIds);
    const completion = ids(entry.completionTokenIds) ?? ids(entry.tokenIds);
    if (prompt) tokens.promptTokenIds = prompt;
    if (completion) tokens.completionTokenIds = completion;
    if (Array.isArray(entry.logprobs)) {
      const values = entry.logprobs.map((token) =>
        typeof token === 'number' ? token : (token as { logprob?: unknown } | null)?.logprob,
      );
      if (values.every((value) => typeof value === 'number')) tokens.logprobs = values as number[];
    }
  }
  return tokens;
}

const NO_USAGE = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

/** A final answer without a tool call, a valid `v3` and `v4` generate result. */
function episodeOverResult(): GenerateResultLike {
  return {
    content: [{ type: 'text', text: EPISODE_OVER_MESSAGE }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: NO_USAGE,
    warnings: [],
  } as GenerateResultLike;
}

/** The same answer as a stream, a valid `v3` and `v4` stream result. */
function episodeOverStream(): StreamResultLike {
  const parts = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: '0' },
    { type: 'text-delta', id: '0', delta: EPISODE_OVER_MESSAGE },
    { type: 'text-end', id: '0' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: NO_USAGE },
  ];
  return {
    stream: new ReadableStream<PartLike>({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    }),
  };
}
