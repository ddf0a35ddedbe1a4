/**
 * `startLlamaServer`: a {@link LlamaChatModel} behind an OpenAI-compatible HTTP API on
 * 127.0.0.1, on `node:http` alone, so the SDK's OpenAI-compatible clients, Python's `openai`
 * package and other tools use the local model unchanged:
 * - `POST /v1/chat/completions`: `response_format` (`text`, `json_object`, `json_schema`,
 *   enforced by a grammar), `logprobs` / `top_logprobs`, `stop`, `seed`, `max_tokens`, and
 *   `stream` (the answer's chunks in vLLM's layout, token ids included, sent once generated);
 * - `POST /v1/completions`: raw prompts (one or a batch), `echo` and `logprobs` (the prompt's
 *   tokens with teacher-forced log-probabilities: how candidate strings are scored);
 * - `GET /v1/models`, `GET /health`;
 * and what RL trainers use from vLLM's server, in its shapes, so a trainer written against
 * vLLM runs against this server unchanged (and the other way round):
 * - `structured_outputs: {"choice": [...]}` (the answer is exactly one of the strings, by a
 *   grammar);
 * - `return_token_ids` on both completion routes (`prompt_token_ids`, `token_ids`), prompts
 *   given as token ids, and `prompt_logprobs: 0` (each prompt token's teacher-forced
 *   log-probability, keyed by its id; with DreamGym's `prompt_logprobs_from: N`, only from
 *   token N on, the prompt before it evaluated without logits);
 * - `POST /tokenize` (a conversation up to the answer, or a text);
 * - `POST /v1/load_lora_adapter` and `POST /v1/unload_lora_adapter`: a LoRA adapter under a
 *   name that requests then pass as `model` (a GGUF adapter file, or a PEFT folder that holds
 *   one as `adapter.gguf`, as the DreamGym trainer writes them).
 * Bodies are size-limited, validated, and every error is OpenAI's JSON error shape.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ConfigError, ModelError, ModelOutputError } from '@dreamgym/core';
import {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  type CompletionToken,
  chatCompletionBody,
  chatCompletionChunks,
  chatMessageText,
  completionBody,
  completionLogprobs,
  modelListBody,
  type OpenAIChatMessage,
  OpenAIHttpError,
  type PromptTokenLogprobs,
  parseOpenAIRequest,
  readRequestBody,
  sendJson,
  sendOpenAIError,
  sendText,
  serverSentEvents,
  stopSequences,
  TokenizeRequestSchema,
  type WireToken,
} from '@dreamgym/openai-wire';
import type { GeneratedToken, LlamaChatModel } from './llama-chat-model.js';
import { LoraAdapters } from './lora-adapters.js';
import {
  parseToolAnswer,
  toolAnswerSchema,
  toolConversation,
  toolOffer,
  type WireChatMessage,
  type WireTool,
  type WireToolChoice,
} from './tool-calls.js';

/** Options of {@link startLlamaServer}. */
export interface LlamaServerOptions {
  /** The loaded model to serve. The server does not dispose it. */
  model: LlamaChatModel;
  /** Name the server lists and accepts in `model` fields. Default `model.name`. */
  modelName?: string;
  /** Loopback address to bind. Default `127.0.0.1`. */
  host?: '127.0.0.1' | 'localhost' | '::1';
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** Largest request body accepted, in bytes. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Requests allowed to wait for the model beyond those running; more get 429. Default 64. */
  maxQueue?: number;
  /** One line per request (method, path, status, milliseconds). */
  log?: (line: string) => void;
  /** LoRA adapters loaded at once (each is a second copy of the model in memory). Default 4. */
  maxLoraAdapters?: number;
}

/** A running server. */
export interface LlamaServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** `http://127.0.0.1:<port>/v1`: the `baseURL` for OpenAI clients. */
  baseURL: string;
  port: number;
  /** The name clients pass as `model`. */
  modelName: string;
  /** Stops accepting requests, aborts those running, and closes every connection. */
  close(): Promise<void>;
}

/** A request's chat message as the tool-call renderer takes it (text content). */
function wireMessage(message: OpenAIChatMessage): WireChatMessage {
  return {
    role: message.role,
    content: chatMessageText(message.content),
    ...(message.tool_calls
      ? {
          tool_calls: message.tool_calls.map(
            (call: NonNullable<OpenAIChatMessage['tool_calls']>[number]) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.function.name, arguments: call.function.arguments },
            }),
          ),
        }
      : {}),
    ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
  };
}

/**
 * A chat completion asked for with `stream: true`: its chunks, sent as server-sent events once
 * the answer is generated (the stream's layout, not token-by-token timing).
 */
class StreamedReply {
  constructor(readonly chunks: Record<string, unknown>[]) {}
}

function requestId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

/** The tokens of a reply on the wire; a token without a log-probability gets -9999. */
function toWireTokens(tokens: GeneratedToken[]): WireToken[] {
  return tokens.map((token) => ({
    token: token.text,
    logprob: token.logprob ?? -9999,
    ...(token.top ? { top: token.top } : {}),
  }));
}

function toCompletionTokens(tokens: GeneratedToken[]): CompletionToken[] {
  return tokens.map((token) => ({
    token: token.text,
    logprob: token.logprob ?? null,
    ...(token.top ? { top: token.top } : {}),
  }));
}

/** Maps a failure to its HTTP answer. */
function toHttpError(error: unknown): OpenAIHttpError {
  if (error instanceof OpenAIHttpError) return error;
  if (ConfigError.isInstance(error))
    return new OpenAIHttpError(400, error.message, 'invalid_request_error', error.field ?? null);
  if (ModelOutputError.isInstance(error))
    return new OpenAIHttpError(500, error.message, 'server_error');
  if (ModelError.isInstance(error)) {
    if (/the context holds/.test(error.message)) {
      return new OpenAIHttpError(
        400,
        error.message,
        'invalid_request_error',
        'messages',
        'context_length_exceeded',
      );
    }
    if (/was disposed/.test(error.message))
      return new OpenAIHttpError(503, error.message, 'server_error');
    return new OpenAIHttpError(500, error.message, 'server_error');
  }
  return new OpenAIHttpError(
    500,
    `Internal error: ${(error as Error)?.message ?? String(error)}`,
    'server_error',
  );
}

/**
 * Serves `options.model` on a loopback address and resolves once it listens.
 *
 * @example
 * ```ts
 * const model = await LlamaChatModel.load({ model: 'local' });
 * const server = await startLlamaServer({ model, port: 8080 });
 * // OpenAI clients: baseURL server.baseURL, model server.modelName
 * await server.close();
 * await model.dispose();
 * ```
 */
export async function startLlamaServer(options: LlamaServerOptions): Promise<LlamaServer> {
  const { model } = options;
  const modelName = options.modelName ?? model.name;
  const accepted = new Set([modelName, model.name, model.id, 'local']);
  const maxBodyBytes = options.maxBodyBytes ?? 1 << 20;
  const maxQueue = options.maxQueue ?? 64;
  const host = options.host ?? '127.0.0.1';
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
    throw new ConfigError(
      `The model server binds to a loopback address only, got host "${host}".`,
      { field: 'host' },
    );
  }
  const created = Math.floor(Date.now() / 1000);
  const running = new Set<AbortController>();
  const sockets = new Set<Socket>();

  const adapters = new LoraAdapters(model, modelName, accepted, options.maxLoraAdapters ?? 4);
  const checkQueue = (target: LlamaChatModel) => {
    if (target.queueState().queued >= maxQueue) {
      throw new OpenAIHttpError(
        429,
        `The server is busy: ${maxQueue} requests are waiting for the model. Retry later.`,
        'rate_limit_error',
        null,
        'queue_full',
      );
    }
  };

  async function chatCompletions(text: string, signal: AbortSignal) {
    const body = parseOpenAIRequest(text, ChatCompletionRequestSchema);
    const target = adapters.modelFor(body.model);
    checkQueue(target);
    const offer = toolOffer(body.tools, body.tool_choice);
    const messages = toolConversation(body.messages.map(wireMessage), offer);
    const top = body.top_logprobs ?? 0;
    if (top > 0 && body.logprobs !== true) {
      throw new OpenAIHttpError(
        400,
        'top_logprobs needs logprobs: true.',
        'invalid_request_error',
        'top_logprobs',
      );
    }
    const format = body.response_format;
    const choice = body.structured_outputs?.choice;
    if (offer && (choice || (format && format.type !== 'text'))) {
      throw new OpenAIHttpError(
        400,
        'tools constrain the answer to a tool call: send them without structured_outputs or response_format.',
        'invalid_request_error',
        'tools',
      );
    }
    if (choice && format && format.type !== 'text') {
      throw new OpenAIHttpError(
        400,
        'structured_outputs.choice and response_format both constrain the answer: send one.',
        'invalid_request_error',
        'structured_outputs',
      );
    }
    const response = await target.chat({
      ...(choice ? { choice } : {}),
      messages,
      ...(body.temperature == null ? {} : { temperature: body.temperature }),
      ...(body.top_p == null ? {} : { topP: body.top_p }),
      ...(body.top_k == null ? {} : { topK: body.top_k }),
      ...(body.min_p == null ? {} : { minP: body.min_p }),
      ...(body.seed == null ? {} : { seed: body.seed >>> 0 }),
      ...((body.max_completion_tokens ?? body.max_tokens) == null
        ? {}
        : { maxTokens: (body.max_completion_tokens ?? body.max_tokens)! }),
      stop: stopSequences(body.stop),
      logprobs: body.logprobs === true,
      topLogprobs: top,
      ...(offer ? { jsonSchema: toolAnswerSchema(offer) } : {}),
      ...(format?.type === 'json_object' ? { jsonObject: true } : {}),
      ...(format?.type === 'json_schema'
        ? format.json_schema.schema
          ? { jsonSchema: format.json_schema.schema }
          : { jsonObject: true }
        : {}),
      signal,
    });
    const answer = offer ? parseToolAnswer(response.text, offer) : undefined;
    const reply = chatCompletionBody({
      id: requestId('chatcmpl'),
      created: Math.floor(Date.now() / 1000),
      model: adapters.replyName(body.model),
      content: answer ? answer.content : response.text,
      ...(answer ? { toolCalls: answer.toolCalls } : {}),
      finishReason:
        answer && answer.toolCalls.length > 0 ? 'tool_calls' : (response.finishReason ?? 'stop'),
      logprobs: body.logprobs === true ? toWireTokens(response.tokens) : null,
      topLogprobs: top,
      usage: {
        promptTokens: response.usage.promptTokens,
        completionTokens: response.usage.completionTokens,
        cachedTokens: response.cachedPromptTokens,
      },
      ...(body.return_token_ids === true
        ? {
            tokenIds: {
              prompt: Array.from(await target.promptTokens(messages)),
              completion: response.tokens.map((token) => token.id),
            },
          }
        : {}),
    });
    if (body.stream !== true) return reply;
    return new StreamedReply(
      chatCompletionChunks(
        reply,
        response.tokens.map((token) => token.text),
        { includeUsage: body.stream_options?.include_usage === true },
      ),
    );
  }

  async function completions(text: string, signal: AbortSignal) {
    const body = parseOpenAIRequest(text, CompletionRequestSchema);
    const target = adapters.modelFor(body.model);
    checkQueue(target);
    const prompts: Array<string | number[]> =
      typeof body.prompt === 'string' || typeof body.prompt[0] === 'number'
        ? [body.prompt as string | number[]]
        : (body.prompt as Array<string | number[]>);
    const logprobs = body.logprobs ?? undefined;
    const promptLogprobs = body.prompt_logprobs ?? undefined;
    if (promptLogprobs !== undefined && promptLogprobs > 0) {
      throw new OpenAIHttpError(
        400,
        "prompt_logprobs above 0 is not supported: this server returns each prompt token's own log-probability (prompt_logprobs: 0).",
        'invalid_request_error',
        'prompt_logprobs',
      );
    }
    const maxTokens = body.max_tokens ?? 16;
    if (maxTokens === 0 && body.echo !== true && promptLogprobs === undefined) {
      throw new OpenAIHttpError(
        400,
        'max_tokens 0 needs echo: true or prompt_logprobs (nothing would be returned).',
        'invalid_request_error',
        'max_tokens',
      );
    }
    const echo = body.echo === true || promptLogprobs !== undefined;
    const complete = (prompt: string | number[]) =>
      target.completePrompt({
        prompt,
        maxTokens,
        ...(body.temperature == null ? {} : { temperature: body.temperature }),
        ...(body.top_p == null ? {} : { topP: body.top_p }),
        ...(body.top_k == null ? {} : { topK: body.top_k }),
        ...(body.min_p == null ? {} : { minP: body.min_p }),
        ...(body.seed == null ? {} : { seed: body.seed >>> 0 }),
        stop: stopSequences(body.stop),
        ...(logprobs === undefined && promptLogprobs === undefined
          ? {}
          : { logprobs: logprobs ?? 0 }),
        echo,
        ...(body.prompt_logprobs_from == null
          ? {}
          : { echoLogprobsFrom: body.prompt_logprobs_from }),
        signal,
      });
    // Prompts whose log-probabilities are echoed go one after another: candidates of one
    // conversation share it, and the model's prompt cache then forces it only once.
    const results: Awaited<ReturnType<typeof complete>>[] = [];
    if (echo) for (const prompt of prompts) results.push(await complete(prompt));
    else results.push(...(await Promise.all(prompts.map(complete))));
    let promptTokens = 0;
    let completionTokens = 0;
    const choices = results.map((result, index) => {
      promptTokens += result.usage.promptTokens;
      completionTokens += result.usage.completionTokens;
      const prompt = prompts[index]!;
      const echoed = result.promptTokens ?? [];
      const tokens = body.echo === true ? [...echoed, ...result.tokens] : result.tokens;
      const promptText = typeof prompt === 'string' ? prompt : target.detokenize(prompt, true);
      return {
        text: body.echo === true ? promptText + result.text : result.text,
        finishReason: result.finishReason,
        logprobs:
          logprobs === undefined ? null : completionLogprobs(toCompletionTokens(tokens), logprobs),
        ...(promptLogprobs === undefined
          ? {}
          : {
              promptLogprobs: echoed.map((token): PromptTokenLogprobs | null =>
                token.logprob == null
                  ? null
                  : {
                      [String(token.id)]: {
                        logprob: token.logprob,
                        rank: null,
                        decoded_token: token.text,
                      },
                    },
              ),
            }),
        ...(body.return_token_ids === true
          ? {
              tokenIds: {
                prompt: echoed.length > 0 ? echoed.map((token) => token.id) : [],
                completion: result.tokens.map((token) => token.id),
              },
            }
          : {}),
      };
    });
    return completionBody({
      id: requestId('cmpl'),
      created: Math.floor(Date.now() / 1000),
      model: adapters.replyName(body.model),
      choices,
      usage: { promptTokens, completionTokens },
    });
  }

  async function tokenize(text: string) {
    const body = parseOpenAIRequest(text, TokenizeRequestSchema);
    const target = adapters.modelFor(body.model);
    let tokens: number[];
    if ('messages' in body) {
      const conversation = body as {
        messages: OpenAIChatMessage[];
        tools?: WireTool[] | null;
        tool_choice?: WireToolChoice | null;
        add_generation_prompt?: boolean | null;
      };
      if (conversation.add_generation_prompt === false) {
        throw new OpenAIHttpError(
          400,
          'add_generation_prompt: false is not supported: the tokens end where the answer starts.',
          'invalid_request_error',
          'add_generation_prompt',
        );
      }
      const offer = toolOffer(conversation.tools, conversation.tool_choice);
      tokens = Array.from(
        await target.promptTokens(toolConversation(conversation.messages.map(wireMessage), offer)),
      );
    } else {
      // Special tokens written in the text (`<|im_end|>`) are parsed as such, as vLLM does.
      tokens = target.tokenize((body as { prompt: string }).prompt, true);
    }
    return { count: tokens.length, max_model_len: target.contextSize, tokens };
  }

  function models() {
    const listed = modelListBody([modelName], 'dreamgym', created);
    return {
      ...listed,
      data: [...listed.data, ...adapters.modelEntries()],
    };
  }

  async function route(request: IncomingMessage, response: ServerResponse, signal: AbortSignal) {
    const path =
      new URL(request.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
    const method = request.method ?? 'GET';
    const routes: Record<string, { method: string; handle: () => Promise<unknown> }> = {
      '/health': {
        method: 'GET',
        handle: async () => ({ status: 'ok', model: modelName, ...model.queueState() }),
      },
      '/v1/models': { method: 'GET', handle: async () => models() },
      '/v1/chat/completions': {
        method: 'POST',
        handle: async () => chatCompletions(await readRequestBody(request, maxBodyBytes), signal),
      },
      '/v1/completions': {
        method: 'POST',
        handle: async () => completions(await readRequestBody(request, maxBodyBytes), signal),
      },
      '/tokenize': {
        method: 'POST',
        handle: async () => tokenize(await readRequestBody(request, maxBodyBytes)),
      },
      '/v1/load_lora_adapter': {
        method: 'POST',
        handle: async () => adapters.load(await readRequestBody(request, maxBodyBytes)),
      },
      '/v1/unload_lora_adapter': {
        method: 'POST',
        handle: async () => adapters.unload(await readRequestBody(request, maxBodyBytes)),
      },
    };
    const target = routes[path];
    if (!target) {
      throw new OpenAIHttpError(
        404,
        `No route ${method} ${path}. Routes: ${Object.entries(routes)
          .map(([route, { method: verb }]) => `${verb} ${route}`)
          .join(', ')}.`,
        'invalid_request_error',
        null,
        'not_found',
      );
    }
    if (method !== target.method) {
      response.setHeader('Allow', target.method);
      throw new OpenAIHttpError(
        405,
        `${path} takes ${target.method}, not ${method}.`,
        'invalid_request_error',
        null,
        'method_not_allowed',
      );
    }
    return target.handle();
  }

  const server = createServer((request, response) => {
    const started = performance.now();
    const controller = new AbortController();
    running.add(controller);
    // A client that goes away cancels its generation.
    response.on('close', () => {
      if (!response.writableEnded) controller.abort(new Error('client disconnected'));
      running.delete(controller);
    });
    const log = (status: number) =>
      options.log?.(
        `${request.method} ${request.url} ${status} ${Math.round(performance.now() - started)} ms`,
      );
    route(request, response, controller.signal).then(
      (body) => {
        if (response.headersSent || response.destroyed) return;
        if (body instanceof StreamedReply) {
          sendText(response, 200, serverSentEvents(body.chunks), 'text/event-stream', {
            'cache-control': 'no-cache',
          });
        } else sendJson(response, 200, body);
        log(200);
      },
      (error: unknown) => {
        if (controller.signal.aborted && !response.writable) return;
        if (response.headersSent || response.destroyed) return;
        const failure = toHttpError(error);
        sendOpenAIError(response, failure, failure.status === 429 ? { 'retry-after': '1' } : {});
        log(failure.status);
      },
    );
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = host === '::1' ? '[::1]' : host;
  const url = `http://${hostPart}:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    baseURL: `${url}/v1`,
    port,
    modelName,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const controller of running) controller.abort(new Error('server closing'));
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }).then(async () => {
        // The adapters' models are the server's own (the base model is the caller's).
        await adapters.disposeAll();
      });
      return closing;
    },
  };
}
