/**
 * `OpenAICompatibleChatModel`: a {@link ChatModel} on the `openai` SDK for any
 * OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama, OpenAI).
 */
import { z } from 'zod';
import { ModelError, ModelOutputError } from '../errors.js';
import { parseOptions } from '../parse-options.js';
import type {
  ChatMessage,
  ChatModel,
  ChatModelStats,
  ChatRequest,
  ChatResponse,
  StructuredChatRequest,
  StructuredChatResponse,
  TokenLogprob,
  TokenUsage,
} from './chat-model.js';
import { extractJson } from './json-extraction.js';
import {
  type AttemptFailure,
  decodeResponseBody,
  type ModelClientDependencies,
  ModelTransport,
  preview,
} from './model-transport.js';
import {
  type OpenAICompatibleChatModelOptions,
  OpenAICompatibleChatModelOptionsSchema,
  type StructuredOutputMode,
} from './openai-compatible-options.js';

/** The parts of a chat-completion response body we use; anything else may be there too. */
const ChatCompletionBodySchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish() }),
        finish_reason: z.string().nullish(),
        logprobs: z
          .object({
            content: z.array(z.object({ token: z.string(), logprob: z.number() })).nullish(),
          })
          .nullish(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().int().min(0),
      completion_tokens: z.number().int().min(0).optional(),
      total_tokens: z.number().int().min(0).optional(),
    })
    .nullish(),
});

/** Structured-output modes in fallback order. */
type ResponseMode = Exclude<StructuredOutputMode, 'auto'>;
const NEXT_MODE: Record<ResponseMode, ResponseMode> = {
  json_schema: 'json_object',
  json_object: 'text',
  text: 'text',
};

/** A JSON Schema for `response_format`, and whether OpenAI's strict mode can take it. */
export interface ResponseJsonSchema {
  schema: Record<string, unknown>;
  strictCompatible: boolean;
}

/**
 * The JSON Schema of what the model must write for `schema` (zod's input side, so
 * defaults and transforms apply after parsing). Objects are closed
 * (`additionalProperties: false`), as the model should add no keys; `strictCompatible`
 * says whether every object lists all its properties as required, as OpenAI's strict
 * mode demands.
 */
export function toResponseJsonSchema(schema: z.ZodType): ResponseJsonSchema {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  let strictCompatible = json.type === 'object';
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    if (record.type === 'object') {
      const properties = (record.properties ?? {}) as Record<string, unknown>;
      if (record.additionalProperties === undefined) record.additionalProperties = false;
      if (record.additionalProperties !== false) strictCompatible = false;
      const required = new Set((record.required as string[] | undefined) ?? []);
      if (Object.keys(properties).some((key) => !required.has(key))) strictCompatible = false;
    }
    for (const value of Object.values(record)) visit(value);
  };
  visit(json);
  return { schema: json, strictCompatible };
}

/** The instruction that carries the schema where the server does not enforce it. */
export function schemaInstruction(schema: Record<string, unknown>): string {
  return (
    'Answer with a single JSON object and nothing else (no prose, no code fences). ' +
    `It must conform to this JSON Schema:\n${JSON.stringify(schema)}`
  );
}

/** Adds `instruction` to the system message, or puts one first (chat templates allow one, first). */
function withInstruction(messages: ChatMessage[], instruction: string): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role === 'system') {
    return [{ role: 'system', content: `${first.content}\n\n${instruction}` }, ...rest];
  }
  return [{ role: 'system', content: instruction }, ...messages];
}

/**
 * Whether a failed structured request was rejected for its `response_format` (so a
 * simpler mode may work) rather than for something a fallback cannot fix.
 */
export function isResponseFormatRejection(
  failure: Pick<AttemptFailure, 'status' | 'message'>,
): boolean {
  const { status, message } = failure;
  if (status === undefined) return false;
  const mentionsFormat =
    /response_format|json_schema|json_object|guided|grammar|structured output/i.test(message);
  if (status === 400 || status === 422 || status === 501) {
    return mentionsFormat || /schema/i.test(message) || /no body/i.test(message);
  }
  // llama.cpp has answered an unsupported response_format with a 500.
  return status === 500 && mentionsFormat;
}

/**
 * A {@link ChatModel} for any OpenAI-compatible server. Retries 408/409/429/5xx, timeouts,
 * dropped connections and malformed bodies with jittered exponential backoff (honouring
 * `Retry-After`), limits concurrent requests, counts tokens and attempts, and gets
 * structured output by the best means the server has (see the `structuredOutput` option).
 *
 * @example
 * ```ts
 * const model = new OpenAICompatibleChatModel({ baseURL: 'http://127.0.0.1:8000/v1', model: 'Qwen/Qwen2.5-7B-Instruct' });
 * const { value } = await model.completeStructured({
 *   messages: [{ role: 'user', content: 'Next state after "open drawer 1"?' }],
 *   schema: z.object({ observation: z.string(), reward: z.number() }),
 *   schemaName: 'experience_step',
 * });
 * ```
 */
export class OpenAICompatibleChatModel implements ChatModel {
  readonly id: string;
  private readonly options: z.output<typeof OpenAICompatibleChatModelOptionsSchema>;
  private readonly transport: ModelTransport;
  private mode: ResponseMode;
  private modeConfirmed: boolean;
  /** Settles when the request that is finding out the server's structured mode finishes. */
  private probe: Promise<void> | undefined;
  private readonly usage: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  private requests = 0;
  private failures = 0;
  private formatFallbacks = 0;

  /** Validates `options` (throws `ConfigError` naming the field) and creates the client. */
  constructor(
    options: OpenAICompatibleChatModelOptions,
    dependencies: ModelClientDependencies = {},
  ) {
    this.options = parseOptions(OpenAICompatibleChatModelOptionsSchema, options, 'chat model');
    this.transport = new ModelTransport(this.options, dependencies);
    this.id = `${this.options.model}@${this.transport.baseURL}`;
    const forced = this.options.structuredOutput;
    this.mode = forced === 'auto' ? 'json_schema' : forced;
    this.modeConfirmed = forced !== 'auto';
  }

  /** The structured-output mode the next structured request will use. */
  get structuredOutputMode(): ResponseMode {
    return this.mode;
  }

  stats(): ChatModelStats {
    const { attempts, retries } = this.transport.counts();
    return {
      ...this.usage,
      requests: this.requests,
      retries,
      failures: this.failures,
      attempts,
      formatFallbacks: this.formatFallbacks,
    };
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    try {
      const response = await this.send(request, request.messages, undefined, undefined);
      this.requests += 1;
      return response;
    } catch (error) {
      this.failures += 1;
      throw error;
    }
  }

  async completeStructured<S extends z.ZodType>(
    request: StructuredChatRequest<S>,
  ): Promise<StructuredChatResponse<z.output<S>>> {
    const { schema: jsonSchema, strictCompatible } = toResponseJsonSchema(request.schema);
    const automatic = this.options.structuredOutput === 'auto';
    for (;;) {
      // While another request finds out which mode the server takes, wait for its answer
      // instead of paying for the same rejected request again.
      while (!this.modeConfirmed && this.probe) await this.probe;
      const mode = this.mode;
      let endProbe: (() => void) | undefined;
      if (!this.modeConfirmed) {
        this.probe = new Promise((resolve) => {
          endProbe = () => {
            this.probe = undefined;
            resolve();
          };
        });
      }
      let rejected = false;
      const isFatal =
        automatic && mode !== 'text'
          ? (failure: AttemptFailure) => {
              rejected = isResponseFormatRejection(failure);
              return rejected;
            }
          : undefined;
      const messages =
        mode === 'json_schema'
          ? request.messages
          : withInstruction(request.messages, schemaInstruction(jsonSchema));
      const responseFormat =
        mode === 'json_schema'
          ? {
              type: 'json_schema' as const,
              json_schema: {
                name: request.schemaName,
                schema: jsonSchema,
                strict: request.strict ?? strictCompatible,
              },
            }
          : mode === 'json_object'
            ? { type: 'json_object' as const }
            : undefined;
      let response: ChatResponse;
      try {
        response = await this.send(request, messages, responseFormat, isFatal);
        if (this.mode === mode) this.modeConfirmed = true;
      } catch (error) {
        if (rejected && ModelError.isInstance(error)) {
          this.formatFallbacks += 1;
          if (this.mode === mode) this.mode = NEXT_MODE[mode];
          continue;
        }
        this.failures += 1;
        throw error;
      } finally {
        endProbe?.();
      }
      this.requests += 1;
      return { ...response, value: this.validate(response, request, mode), mode };
    }
  }

  private validate<S extends z.ZodType>(
    response: ChatResponse,
    request: StructuredChatRequest<S>,
    mode: ResponseMode,
  ): z.output<S> {
    const cutOff =
      response.finishReason === 'length'
        ? ' The answer was cut off by the token limit: raise maxTokens.'
        : '';
    const extracted = extractJson(response.text);
    if (extracted === undefined) {
      throw new ModelOutputError(
        `${this.id}: the answer for schema "${request.schemaName}" holds no JSON (mode ${mode}).${cutOff} ` +
          `Answer: "${preview(response.text)}"`,
        { output: response.text },
      );
    }
    const parsed = request.schema.safeParse(extracted.value);
    if (!parsed.success) {
      throw new ModelOutputError(
        `${this.id}: the answer does not match schema "${request.schemaName}" (mode ${mode}).${cutOff}\n` +
          `${z.prettifyError(parsed.error)}\nAnswer: "${preview(response.text)}"`,
        { output: response.text, cause: parsed.error },
      );
    }
    return parsed.data;
  }

  private async send(
    request: ChatRequest,
    messages: ChatMessage[],
    responseFormat: Record<string, unknown> | undefined,
    isFatal: ((failure: AttemptFailure) => boolean) | undefined,
  ): Promise<ChatResponse> {
    const body = {
      model: this.options.model,
      messages,
      temperature: request.temperature ?? this.options.temperature,
      max_tokens: request.maxTokens ?? this.options.maxTokens,
      top_p: this.options.topP,
      stop: request.stop,
      seed: request.seed,
      ...(request.logprobs ? { logprobs: true } : {}),
      ...(responseFormat ? { response_format: responseFormat } : {}),
    };
    const response = await this.transport.call(
      '/chat/completions',
      (requestOptions) =>
        this.transport.client.chat.completions
          .create(
            body as Parameters<typeof this.transport.client.chat.completions.create>[0] & {
              stream?: false;
            },
            requestOptions,
          )
          .asResponse(),
      (text) => decodeChatCompletion(text),
      { signal: request.signal, isFatal },
    );
    const usage = response.usage;
    this.usage.promptTokens += usage.promptTokens;
    this.usage.completionTokens += usage.completionTokens;
    this.usage.totalTokens += usage.totalTokens;
    return response;
  }
}

/** Reads a chat-completion body; throws `MalformedResponseError` for anything else. */
export function decodeChatCompletion(text: string): ChatResponse {
  const body = decodeResponseBody(text, ChatCompletionBodySchema, 'a chat completion');
  const choice = body.choices[0]!;
  const usage = body.usage;
  const promptTokens = usage?.prompt_tokens ?? 0;
  const completionTokens = usage?.completion_tokens ?? 0;
  const logprobs: TokenLogprob[] | undefined = choice.logprobs?.content?.map(
    ({ token, logprob }) => ({
      token,
      logprob,
    }),
  );
  return {
    text: choice.message.content ?? '',
    ...(logprobs ? { logprobs } : {}),
    ...(choice.finish_reason ? { finishReason: choice.finish_reason } : {}),
    usage: {
      promptTokens,
      completionTokens,
      totalTokens: usage?.total_tokens ?? promptTokens + completionTokens,
    },
  };
}
