/**
 * `startLlamaServer`: a {@link LlamaChatModel} behind an OpenAI-compatible HTTP API on
 * 127.0.0.1, on `node:http` alone, so the SDK's OpenAI-compatible clients, Python's `openai`
 * package and other tools use the local model unchanged:
 * - `POST /v1/chat/completions`: `response_format` (`text`, `json_object`, `json_schema`,
 *   enforced by a grammar), `logprobs` / `top_logprobs`, `stop`, `seed`, `max_tokens`;
 * - `POST /v1/completions`: raw prompts (one or a batch), `echo` and `logprobs` (the prompt's
 *   tokens with teacher-forced log-probabilities: how candidate strings are scored);
 * - `GET /v1/models`, `GET /health`.
 * Bodies are size-limited, validated, and every error is OpenAI's JSON error shape.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type ChatMessage, ConfigError, ModelError, ModelOutputError } from '@dreamgym/core';
import { z } from 'zod';
import type { GeneratedToken, LlamaChatModel } from './llama-chat-model.js';

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

/** An error answered as OpenAI's `{"error": {...}}`. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

const ContentPartSchema = z.object({ type: z.literal('text'), text: z.string() });
const MessageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.union([z.string(), z.array(ContentPartSchema), z.null()]),
});
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
const ChatBodySchema = z.looseObject({
  ...SamplingFields,
  messages: z.array(MessageSchema).min(1),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
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
const CompletionBodySchema = z.looseObject({
  ...SamplingFields,
  prompt: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(32)]),
  max_tokens: z.number().int().min(0).nullish(),
  echo: z.boolean().nullish(),
  logprobs: z.number().int().min(0).max(20).nullish(),
  suffix: z.null({ error: 'suffix is not supported' }).optional(),
});

function requestId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}

function bytesOf(text: string): number[] {
  return [...Buffer.from(text, 'utf8')];
}

async function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (declared > limit) {
    throw new HttpError(
      413,
      `The request body has ${declared} bytes; the limit is ${limit}.`,
      'invalid_request_error',
      null,
      'request_too_large',
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      throw new HttpError(
        413,
        `The request body is over the limit of ${limit} bytes.`,
        'invalid_request_error',
        null,
        'request_too_large',
      );
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson<S extends z.ZodType>(text: string, schema: S): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `The request body is not valid JSON: ${(error as Error).message}.`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.map(String).join('.');
    throw new HttpError(
      400,
      `Invalid request${param ? ` (field \`${param}\`)` : ''}: ${issue.message}.`,
      'invalid_request_error',
      param || null,
    );
  }
  return parsed.data;
}

function messageText(content: z.output<typeof MessageSchema>['content']): string {
  if (content === null) return '';
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

function stopList(stop: string | string[] | null | undefined): string[] {
  if (stop === null || stop === undefined) return [];
  return typeof stop === 'string' ? [stop] : stop;
}

function chatLogprobs(tokens: GeneratedToken[], top: number) {
  return {
    content: tokens.map((token) => ({
      token: token.text,
      logprob: token.logprob ?? -9999,
      bytes: bytesOf(token.text),
      top_logprobs: (token.top ?? []).slice(0, top).map((alternative) => ({
        token: alternative.token,
        logprob: alternative.logprob,
        bytes: bytesOf(alternative.token),
      })),
    })),
    refusal: null,
  };
}

function completionLogprobs(tokens: GeneratedToken[], top: number) {
  const offsets: number[] = [];
  let offset = 0;
  for (const token of tokens) {
    offsets.push(offset);
    offset += token.text.length;
  }
  return {
    tokens: tokens.map((token) => token.text),
    token_logprobs: tokens.map((token) => (token.logprob === undefined ? null : token.logprob)),
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

/** Maps a failure to its HTTP answer. */
function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (ConfigError.isInstance(error))
    return new HttpError(400, error.message, 'invalid_request_error', error.field ?? null);
  if (ModelOutputError.isInstance(error)) return new HttpError(500, error.message, 'server_error');
  if (ModelError.isInstance(error)) {
    if (/the context holds/.test(error.message)) {
      return new HttpError(
        400,
        error.message,
        'invalid_request_error',
        'messages',
        'context_length_exceeded',
      );
    }
    if (/was disposed/.test(error.message))
      return new HttpError(503, error.message, 'server_error');
    return new HttpError(500, error.message, 'server_error');
  }
  return new HttpError(
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

  const checkModel = (name: string | undefined) => {
    if (name !== undefined && name !== '' && !accepted.has(name)) {
      throw new HttpError(
        404,
        `The model "${name}" does not exist; this server serves "${modelName}".`,
        'invalid_request_error',
        'model',
        'model_not_found',
      );
    }
  };
  const checkQueue = () => {
    if (model.load().queued >= maxQueue) {
      throw new HttpError(
        429,
        `The server is busy: ${maxQueue} requests are waiting for the model. Retry later.`,
        'rate_limit_error',
        null,
        'queue_full',
      );
    }
  };

  async function chatCompletions(text: string, signal: AbortSignal) {
    const body = parseJson(text, ChatBodySchema);
    checkModel(body.model);
    checkQueue();
    const messages: ChatMessage[] = body.messages.map((message) => ({
      role: message.role === 'developer' ? 'system' : message.role,
      content: messageText(message.content),
    }));
    const top = body.top_logprobs ?? 0;
    if (top > 0 && body.logprobs !== true) {
      throw new HttpError(
        400,
        'top_logprobs needs logprobs: true.',
        'invalid_request_error',
        'top_logprobs',
      );
    }
    const format = body.response_format;
    const response = await model.chat({
      messages,
      ...(body.temperature == null ? {} : { temperature: body.temperature }),
      ...(body.top_p == null ? {} : { topP: body.top_p }),
      ...(body.top_k == null ? {} : { topK: body.top_k }),
      ...(body.min_p == null ? {} : { minP: body.min_p }),
      ...(body.seed == null ? {} : { seed: body.seed >>> 0 }),
      ...((body.max_completion_tokens ?? body.max_tokens) == null
        ? {}
        : { maxTokens: (body.max_completion_tokens ?? body.max_tokens)! }),
      stop: stopList(body.stop),
      logprobs: body.logprobs === true,
      topLogprobs: top,
      ...(format?.type === 'json_object' ? { jsonObject: true } : {}),
      ...(format?.type === 'json_schema'
        ? format.json_schema.schema
          ? { jsonSchema: format.json_schema.schema }
          : { jsonObject: true }
        : {}),
      signal,
    });
    return {
      id: requestId('chatcmpl'),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: modelName,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: response.text, refusal: null },
          finish_reason: response.finishReason ?? 'stop',
          logprobs: body.logprobs === true ? chatLogprobs(response.tokens, top) : null,
        },
      ],
      usage: {
        prompt_tokens: response.usage.promptTokens,
        completion_tokens: response.usage.completionTokens,
        total_tokens: response.usage.totalTokens,
        prompt_tokens_details: { cached_tokens: response.cachedPromptTokens },
      },
    };
  }

  async function completions(text: string, signal: AbortSignal) {
    const body = parseJson(text, CompletionBodySchema);
    checkModel(body.model);
    checkQueue();
    const prompts = typeof body.prompt === 'string' ? [body.prompt] : body.prompt;
    const logprobs = body.logprobs ?? undefined;
    const maxTokens = body.max_tokens ?? 16;
    if (maxTokens === 0 && body.echo !== true) {
      throw new HttpError(
        400,
        'max_tokens 0 needs echo: true (nothing would be returned).',
        'invalid_request_error',
        'max_tokens',
      );
    }
    const results = await Promise.all(
      prompts.map((prompt) =>
        model.completePrompt({
          prompt,
          maxTokens,
          ...(body.temperature == null ? {} : { temperature: body.temperature }),
          ...(body.top_p == null ? {} : { topP: body.top_p }),
          ...(body.top_k == null ? {} : { topK: body.top_k }),
          ...(body.min_p == null ? {} : { minP: body.min_p }),
          ...(body.seed == null ? {} : { seed: body.seed >>> 0 }),
          stop: stopList(body.stop),
          ...(logprobs === undefined ? {} : { logprobs }),
          echo: body.echo === true,
          signal,
        }),
      ),
    );
    let promptTokens = 0;
    let completionTokens = 0;
    const choices = results.map((result, index) => {
      promptTokens += result.usage.promptTokens;
      completionTokens += result.usage.completionTokens;
      const tokens = [...(result.promptTokens ?? []), ...result.tokens];
      return {
        index,
        text: body.echo === true ? prompts[index]! + result.text : result.text,
        finish_reason: result.finishReason,
        logprobs: logprobs === undefined ? null : completionLogprobs(tokens, logprobs),
      };
    });
    return {
      id: requestId('cmpl'),
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: modelName,
      choices,
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    };
  }

  async function route(request: IncomingMessage, response: ServerResponse, signal: AbortSignal) {
    const path =
      new URL(request.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
    const method = request.method ?? 'GET';
    const routes: Record<string, { method: string; handle: () => Promise<unknown> }> = {
      '/health': {
        method: 'GET',
        handle: async () => ({ status: 'ok', model: modelName, ...model.load() }),
      },
      '/v1/models': {
        method: 'GET',
        handle: async () => ({
          object: 'list',
          data: [{ id: modelName, object: 'model', created, owned_by: 'dreamgym' }],
        }),
      },
      '/v1/chat/completions': {
        method: 'POST',
        handle: async () => chatCompletions(await readBody(request, maxBodyBytes), signal),
      },
      '/v1/completions': {
        method: 'POST',
        handle: async () => completions(await readBody(request, maxBodyBytes), signal),
      },
    };
    const target = routes[path];
    if (!target) {
      throw new HttpError(
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
      throw new HttpError(
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
    const send = (status: number, body: unknown) => {
      if (response.headersSent || response.destroyed) return;
      const text = JSON.stringify(body);
      response.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
        ...(status === 429 ? { 'retry-after': '1' } : {}),
      });
      response.end(text);
      options.log?.(
        `${request.method} ${request.url} ${status} ${Math.round(performance.now() - started)} ms`,
      );
    };
    route(request, response, controller.signal).then(
      (body) => send(200, body),
      (error: unknown) => {
        if (controller.signal.aborted && !response.writable) return;
        const failure = toHttpError(error);
        send(failure.status, {
          error: {
            message: failure.message,
            type: failure.type,
            param: failure.param,
            code: failure.code,
          },
        });
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
      });
      return closing;
    },
  };
}
