/**
 * A real OpenAI-compatible HTTP server for tests: `POST /v1/chat/completions`,
 * `POST /v1/embeddings` and `GET /v1/models` in the OpenAI wire format, on 127.0.0.1 and
 * a free port. Each request is answered by a scriptable responder, so a test can inject
 * what real servers do on a bad day (429 with `Retry-After`, 500/503, slow answers,
 * malformed bodies, dropped connections) and what differs between servers (vLLM, SGLang,
 * llama.cpp, Ollama and OpenAI accept different `response_format` types, give logprobs or
 * not, report usage or not). Every request is recorded, in arrival order, so tests can
 * assert that no request was lost or sent twice. Requests are read and validated with the
 * wire layer `dreamgym model serve` uses (`@dreamgym/openai-wire`), so a request the real
 * server would refuse with a 400 is refused here too.
 *
 * @example
 * ```ts
 * const server = await startOpenAICompatibleServer({
 *   chat: (request, index) => (index === 0 ? { type: 'error', status: 429, retryAfter: 1 } : 'hello'),
 * });
 * const model = new OpenAICompatibleChatModel({ baseURL: server.url, model: 'test' });
 * await model.complete({ messages: [{ role: 'user', content: 'hi' }] }); // 'hello', after one retry
 * server.requests.length; // 2
 * await server.close();
 * ```
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  ChatCompletionRequestSchema,
  chatCompletionBody,
  chatMessageText,
  EmbeddingsRequestSchema,
  embeddingsBody,
  modelListBody,
  OpenAIHttpError,
  parseOpenAIRequest,
  readRequestBody,
  sendText,
} from '@dreamgym/openai-wire';
import {
  countWords,
  defaultChatResponder,
  deterministicEmbedding,
  errorBody,
  rejectionReply,
  splitIntoTokens,
} from './default-replies.js';
import type {
  ChatReply,
  ChatResponder,
  DropReply,
  EmbeddingsReply,
  EmbeddingsResponder,
  ErrorReply,
  OpenAICompatibleServer,
  OpenAICompatibleServerOptions,
  RawReply,
  ReceivedChatRequest,
  ReceivedEmbeddingsRequest,
  RecordedRequest,
  ServerCapabilities,
} from './scripted-replies.js';

const CHAT_PATH = '/v1/chat/completions';
const EMBEDDINGS_PATH = '/v1/embeddings';
const MODELS_PATH = '/v1/models';

/**
 * Starts a real OpenAI-compatible HTTP server on 127.0.0.1 and a free port.
 * Close it with `close()` (for example in `afterAll`).
 */
export async function startOpenAICompatibleServer(
  options: OpenAICompatibleServerOptions = {},
): Promise<OpenAICompatibleServer> {
  let chatResponder: ChatResponder = options.chat ?? defaultChatResponder;
  const embeddingDimension = options.embeddingDimension ?? 8;
  let embeddingsResponder: EmbeddingsResponder =
    options.embeddings ??
    ((_request, inputs) =>
      inputs.map((input) => deterministicEmbedding(input, embeddingDimension)));
  let capabilities: ServerCapabilities = { ...options.capabilities };
  const rejectionStyle = options.rejectionStyle ?? 'openai';
  const models = options.models ?? ['test-model'];

  const requests: RecordedRequest[] = [];
  const perPath = new Map<string, number>();
  const sockets = new Set<Socket>();
  const pendingTimers = new Set<NodeJS.Timeout>();
  let inFlight = 0;
  let maxInFlight = 0;
  let idleWaiters: Array<() => void> = [];
  let closed = false;

  function finish(record: RecordedRequest, outcome: NonNullable<RecordedRequest['outcome']>): void {
    if (record.outcome !== undefined) return;
    record.outcome = outcome;
    if (outcome !== 'sent') record.status = undefined;
    record.finishedAt = Date.now();
    inFlight -= 1;
    if (inFlight === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /** Resolves after `ms`, or early with `false` when the client goes away or the server closes. */
  function wait(ms: number, response: ServerResponse): Promise<boolean> {
    if (ms <= 0) return Promise.resolve(!response.destroyed);
    return new Promise((resolve) => {
      const onClose = () => {
        clearTimeout(timer);
        pendingTimers.delete(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        pendingTimers.delete(timer);
        response.off('close', onClose);
        resolve(!response.destroyed);
      }, ms);
      pendingTimers.add(timer);
      response.once('close', onClose);
    });
  }

  function send(
    record: RecordedRequest,
    response: ServerResponse,
    status: number,
    body: string,
    contentType: string,
    headers: Record<string, string> = {},
  ): void {
    if (response.destroyed || response.writableEnded) {
      finish(record, 'aborted');
      return;
    }
    record.status = status;
    sendText(response, status, body, contentType, headers);
  }

  async function sendScripted(
    record: RecordedRequest,
    response: ServerResponse,
    reply: ErrorReply | RawReply | DropReply,
  ): Promise<void> {
    record.reply = reply.type;
    if (!(await wait(reply.delayMs ?? 0, response))) return finish(record, 'aborted');
    if (reply.type === 'drop') {
      finish(record, 'dropped');
      response.socket?.destroy();
      return;
    }
    if (reply.type === 'raw') {
      send(
        record,
        response,
        reply.status ?? 200,
        reply.body,
        reply.contentType ?? 'application/json',
        reply.headers,
      );
      return;
    }
    const { text, contentType } = errorBody(reply);
    const headers: Record<string, string> = { ...reply.headers };
    if (reply.retryAfter !== undefined) headers['retry-after'] = String(reply.retryAfter);
    send(record, response, reply.status, text, contentType, headers);
  }

  function sendError(
    record: RecordedRequest,
    response: ServerResponse,
    error: OpenAIHttpError,
  ): void {
    record.reply = 'error';
    send(record, response, error.status, JSON.stringify(error.toBody()), 'application/json');
  }

  async function handleChat(
    record: RecordedRequest,
    response: ServerResponse,
    index: number,
  ): Promise<void> {
    const parsed = parseOpenAIRequest(record.rawBody, ChatCompletionRequestSchema);
    if (parsed.stream === true) {
      throw new OpenAIHttpError(
        400,
        'stream is not supported by this test server; send stream: false (dreamgym model serve streams).',
        'invalid_request_error',
        'stream',
      );
    }
    // Responders see the request as sent; the parsed copy only backs the defaults below.
    const request = record.body as ReceivedChatRequest;
    let effective = request;
    const format = request.response_format?.type;
    if (format === 'json_schema' || format === 'json_object') {
      const support = format === 'json_schema' ? capabilities.jsonSchema : capabilities.jsonObject;
      if (support === false)
        return sendScripted(record, response, rejectionReply(rejectionStyle, format));
      if (support === 'ignore') {
        const { response_format: _ignored, ...rest } = request;
        effective = rest as ReceivedChatRequest;
      }
    }
    const scripted = await chatResponder(effective, index, record);
    const reply: ChatReply =
      typeof scripted === 'string' ? { type: 'message', content: scripted } : scripted;
    if (reply.type !== 'message') return sendScripted(record, response, reply);
    record.reply = 'message';
    if (!(await wait(reply.delayMs ?? 0, response))) return finish(record, 'aborted');

    const tokens = splitIntoTokens(reply.content);
    const wantsLogprobs =
      parsed.logprobs === true && capabilities.logprobs !== false && reply.logprobs !== null;
    const body = chatCompletionBody({
      id: `chatcmpl-test-${record.index}`,
      created: Math.floor(record.receivedAt / 1000),
      model: reply.model ?? parsed.model ?? models[0]!,
      content: reply.content,
      finishReason: reply.finishReason ?? 'stop',
      logprobs: wantsLogprobs
        ? (reply.logprobs ??
          tokens.map((token, position) => ({ token, logprob: -0.01 * (position + 1) })))
        : null,
      usage:
        reply.usage === null
          ? null
          : {
              promptTokens:
                reply.usage?.promptTokens ??
                parsed.messages.reduce(
                  (sum, message) => sum + countWords(chatMessageText(message.content)),
                  0,
                ),
              completionTokens: reply.usage?.completionTokens ?? tokens.length,
            },
    });
    send(record, response, 200, JSON.stringify(body), 'application/json', reply.headers);
  }

  async function handleEmbeddings(
    record: RecordedRequest,
    response: ServerResponse,
    index: number,
  ): Promise<void> {
    const parsed = parseOpenAIRequest(record.rawBody, EmbeddingsRequestSchema);
    const request = record.body as ReceivedEmbeddingsRequest;
    const inputs = typeof parsed.input === 'string' ? [parsed.input] : parsed.input;
    const scripted = await embeddingsResponder(request, inputs, index, record);
    const reply: EmbeddingsReply = Array.isArray(scripted)
      ? { type: 'embeddings', vectors: scripted }
      : scripted;
    if (reply.type !== 'embeddings') return sendScripted(record, response, reply);
    record.reply = 'embeddings';
    if (!(await wait(reply.delayMs ?? 0, response))) return finish(record, 'aborted');
    const body = embeddingsBody({
      model: parsed.model ?? models[0]!,
      vectors: reply.vectors,
      encoding: parsed.encoding_format ?? 'float',
      promptTokens:
        reply.usage === null
          ? null
          : (reply.usage?.promptTokens ??
            inputs.reduce((sum, input) => sum + countWords(input), 0)),
      reverse: reply.shuffle ?? false,
    });
    send(record, response, 200, JSON.stringify(body), 'application/json', reply.headers);
  }

  function startRecord(request: IncomingMessage, response: ServerResponse): RecordedRequest {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname.replace(/\/+$/, '');
    const endpointIndex = perPath.get(path) ?? 0;
    perPath.set(path, endpointIndex + 1);
    const record: RecordedRequest = {
      index: requests.length,
      endpointIndex,
      method: request.method ?? 'GET',
      path,
      headers: request.headers,
      rawBody: '',
      body: undefined,
      receivedAt: Date.now(),
    };
    requests.push(record);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    response.once('finish', () => finish(record, 'sent'));
    response.once('close', () => finish(record, response.writableFinished ? 'sent' : 'aborted'));
    return record;
  }

  async function handle(
    record: RecordedRequest,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<void> {
    const path = record.path;
    const endpointIndex = record.endpointIndex;
    record.rawBody = await readRequestBody(request);
    if (record.rawBody.length > 0) {
      try {
        record.body = JSON.parse(record.rawBody);
      } catch {
        record.body = undefined;
      }
    }

    if (
      options.apiKey !== undefined &&
      request.headers.authorization !== `Bearer ${options.apiKey}`
    ) {
      return sendError(record, response, new OpenAIHttpError(401, 'Incorrect API key provided.'));
    }
    if (path === MODELS_PATH && record.method === 'GET') {
      const body = modelListBody(models, 'test', 0);
      return send(record, response, 200, JSON.stringify(body), 'application/json');
    }
    if ((path === CHAT_PATH || path === EMBEDDINGS_PATH) && record.method === 'POST') {
      try {
        if (path === CHAT_PATH) return await handleChat(record, response, endpointIndex);
        return await handleEmbeddings(record, response, endpointIndex);
      } catch (error) {
        // A request the wire schemas refuse is the client's fault: OpenAI's 400, as from a real server.
        if (!(error instanceof OpenAIHttpError)) throw error;
        return sendError(record, response, error);
      }
    }
    sendError(
      record,
      response,
      new OpenAIHttpError(404, `No route for ${record.method} ${path} on the test server.`),
    );
  }

  const server = createServer((request, response) => {
    const record = startRecord(request, response);
    handle(record, request, response).catch((error: unknown) => {
      // A throwing responder is a bug in the test; answer 500 and keep the message visible.
      const message = error instanceof Error ? error.message : String(error);
      if (!response.headersSent && !response.destroyed) {
        sendError(
          record,
          response,
          new OpenAIHttpError(500, `The test responder threw: ${message}`),
        );
      } else if (!response.destroyed) {
        response.destroy();
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    requestsTo: (path) => requests.filter((record) => record.path === path),
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    setChat(responder) {
      chatResponder = responder;
    },
    setEmbeddings(responder) {
      embeddingsResponder = responder;
    },
    setCapabilities(next) {
      capabilities = { ...next };
    },
    idle() {
      if (inFlight === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of pendingTimers) clearTimeout(timer);
      pendingTimers.clear();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await stopped;
      // Requests cut off by closing were dropped by the server, whatever events are still queued.
      for (const record of requests) if (record.outcome === undefined) finish(record, 'dropped');
    },
  };
}

/**
 * A test helper: `start(options)` starts a server that `closeAll()` stops again; call
 * `closeAll` from `afterEach` so no server outlives its test.
 *
 * @example
 * ```ts
 * const servers = openAICompatibleServerPool();
 * afterEach(() => servers.closeAll());
 * it('retries', async () => {
 *   const server = await servers.start({ chat: () => 'ok' });
 * });
 * ```
 */
export function openAICompatibleServerPool(): {
  start(options?: OpenAICompatibleServerOptions): Promise<OpenAICompatibleServer>;
  closeAll(): Promise<void>;
} {
  const running = new Set<OpenAICompatibleServer>();
  return {
    async start(options) {
      const server = await startOpenAICompatibleServer(options);
      running.add(server);
      return server;
    },
    async closeAll() {
      const servers = [...running];
      running.clear();
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}
