/**
 * `startRecordingProxy`: an OpenAI-compatible endpoint in front of a server that returns token
 * ids and log-probabilities (`dreamgym model serve`, vLLM, SGLang), so an agent in any
 * language trains by its base URL alone.
 *
 * - `POST /v1/chat/completions` (streamed or not, with tools) is forwarded with
 *   `return_token_ids` and `logprobs` asked for, and `model` replaced by the adapter trained
 *   last ({@link RecordingProxy.model}); the answer goes back to the agent as the server wrote
 *   it, after its record (prompt and answer token ids, log-probabilities, messages, tools) is
 *   in `calls.jsonl`. A streamed answer is passed on chunk by chunk and assembled for the record;
 *   its final `[DONE]` waits for the record.
 * - Each call is attributed to an episode: the `X-DreamGym-Episode` header, or a per-episode
 *   base URL (`/episodes/<id>/v1`); calls with neither are recorded with no episode. A call on
 *   an episode that has ended ({@link RecordingProxy.endEpisode}) is answered with a final
 *   message without reaching the model, so the agent's loop stops.
 * - An answer without token ids is refused (502) with an error naming what the server needs.
 * - `GET /v1/models` passes through; `GET /health`; `GET /dreamgym/proxy` (counts);
 *   `POST /dreamgym/proxy/model` (`{"model": "<adapter>"}`) routes later calls to an adapter.
 */
import { randomBytes } from 'node:crypto';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { ConfigError } from '@dreamgym/core';
import { callFromReply, EPISODE_OVER_MESSAGE } from '../capture.js';
import { type ProxyRecord, ProxyRecordLog } from './proxy-records.js';
import { SseSplitter, StreamAssembly } from './stream-assembly.js';

/** Options of {@link startRecordingProxy}. */
export interface RecordingProxyOptions {
  /** The OpenAI base URL of the inference server (`http://127.0.0.1:8080/v1`). */
  upstream: string;
  /** The records file (`<folder>/calls.jsonl`); appended to when it exists. */
  records: string;
  /** Loopback or other interface to bind. Default `127.0.0.1`. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** The model every call is sent to (an adapter's name); default the agent's own. */
  model?: string;
  /** fsync each record before answering (survives a machine crash). Default false: written to the OS. */
  sync?: boolean;
  /** Largest request body, in bytes. Default 8 MiB. */
  maxBodyBytes?: number;
  /** Receives each record once written. */
  onRecord?: (record: ProxyRecord) => void;
}

/** A running proxy. */
export interface RecordingProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** `http://127.0.0.1:<port>/v1`: the base URL of calls attributed by header (or to none). */
  baseURL: string;
  port: number;
  /** The records file (`calls.jsonl`). */
  recordsFile: string;
  /** The base URL of one episode's calls. */
  episodeBaseURL(episodeId: string): string;
  /** The model calls are routed to (an adapter's name), or undefined for the agent's own. */
  model: string | undefined;
  /** Marks an episode over: its later calls get a final answer without reaching the model. */
  endEpisode(episodeId: string): void;
  /** Calls recorded, refused, and answered "episode over" since start. */
  readonly counts: { recorded: number; refused: number; episodeOver: number; failed: number };
  /** Stops accepting calls, waits for those in flight, closes the records file. */
  close(): Promise<void>;
}

const EPISODE_HEADER = 'x-dreamgym-episode';
const EPISODE_PATH = /^\/episodes\/([^/]+)(\/v1\/.*)$/;
const ENDED_REMEMBERED = 100_000;

/** The error a refused call gets: what the server did not return and how to make it. */
export function missingTokensMessage(upstream: string, what: string): string {
  return `The inference server at ${upstream} answered without ${what}: the proxy records the tokens the model saw and wrote, to train on them, and refuses answers without them. Serve the model with \`dreamgym model serve\`, or vLLM >= 0.10.2 (it honours the return_token_ids field the proxy sends; keep --max-logprobs at 1 or more), or a server that writes prompt_token_ids and choices[].token_ids as vLLM does.`;
}

/** Starts the proxy; resolves once it listens. */
export async function startRecordingProxy(options: RecordingProxyOptions): Promise<RecordingProxy> {
  let upstream: URL;
  try {
    upstream = new URL(options.upstream.replace(/\/+$/, ''));
  } catch {
    throw new ConfigError(`--upstream "${options.upstream}" is not a URL (http://host:port/v1).`, {
      field: 'upstream',
    });
  }
  const log = await ProxyRecordLog.open(options.records, { sync: options.sync ?? false });
  const maxBody = options.maxBodyBytes ?? 8 << 20;
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const send = upstream.protocol === 'https:' ? httpsRequest : httpRequest;
  const upstreamPath = upstream.pathname.replace(/\/v1$/, '');
  const ended = new Set<string>();
  const counts = { recorded: 0, refused: 0, episodeOver: 0, failed: 0 };
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const sockets = new Set<Socket>();

  const proxy: RecordingProxy = {
    url: '',
    baseURL: '',
    port: 0,
    recordsFile: log.file,
    model: options.model,
    counts,
    episodeBaseURL: (episodeId) => `${proxy.url}/episodes/${encodeURIComponent(episodeId)}/v1`,
    endEpisode(episodeId) {
      ended.add(episodeId);
      if (ended.size > ENDED_REMEMBERED) ended.delete(ended.values().next().value as string);
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      log.close();
    },
  };

  /** Forwards a request as is (models list, other routes the server has). */
  const passThrough = (request: IncomingMessage, response: ServerResponse, path: string) => {
    const outgoing = send(
      new URL(`${upstreamPath}${path}`, upstream),
      { method: request.method, headers: forwardHeaders(request.headers), agent },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    outgoing.on('error', (error) =>
      sendError(
        response,
        502,
        `The inference server at ${options.upstream} cannot be reached: ${error.message}`,
      ),
    );
    request.pipe(outgoing);
  };

  const chat = async (
    request: IncomingMessage,
    response: ServerResponse,
    episodeId: string | null,
    path: string,
  ) => {
    const started = performance.now();
    const text = await readBody(request, maxBody);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new Error('not an object');
    } catch {
      return sendError(
        response,
        400,
        'The request body is not a JSON object.',
        'invalid_request_error',
      );
    }
    if (episodeId !== null && ended.has(episodeId)) {
      counts.episodeOver += 1;
      return episodeOver(response, body);
    }
    if (proxy.model !== undefined) body.model = proxy.model;
    body.return_token_ids = true;
    if (body.logprobs !== true) body.logprobs = true;
    const stream = body.stream === true;
    const payload = JSON.stringify(body);
    const upstreamStarted = performance.now();
    const prepared = upstreamStarted - started;
    const outgoing = send(new URL(`${upstreamPath}${path}`, upstream), {
      method: 'POST',
      headers: {
        ...forwardHeaders(request.headers),
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
      },
      agent,
    });
    // Headers and body leave at once: Nagle's algorithm would hold the body back for the
    // server's delayed ACK (tens of milliseconds per call).
    outgoing.on('socket', (socket) => socket.setNoDelay(true));
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      outgoing.on('response', resolve);
      outgoing.on('error', reject);
      outgoing.end(payload);
    }).catch((error: Error) => error);
    if (answer instanceof Error) {
      counts.failed += 1;
      return sendError(
        response,
        502,
        `The inference server at ${options.upstream} cannot be reached: ${answer.message}`,
      );
    }
    const status = answer.statusCode ?? 502;
    const isStream = String(answer.headers['content-type'] ?? '').includes('text/event-stream');
    if (status !== 200 || !isStream) {
      const raw = await readAll(answer);
      const received = performance.now();
      if (status !== 200) {
        counts.failed += 1;
        response.writeHead(status, {
          'content-type': answer.headers['content-type'] ?? 'application/json',
        });
        response.end(raw);
        return;
      }
      let reply: unknown;
      try {
        reply = JSON.parse(raw.toString('utf8'));
      } catch {
        counts.failed += 1;
        return sendError(
          response,
          502,
          `The inference server at ${options.upstream} answered with a body that is not JSON.`,
        );
      }
      const recorded = await record(
        body,
        reply,
        stream,
        episodeId,
        received - upstreamStarted,
        prepared,
        received,
      );
      if (typeof recorded === 'string')
        return sendError(response, 502, recorded, 'upstream_tokens_missing');
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': raw.length });
      response.end(raw);
      return;
    }
    // A stream: chunks go on to the agent as they come; the record is written before [DONE].
    const splitter = new SseSplitter();
    const assembly = new StreamAssembly();
    let headersSent = false;
    let held = '';
    let refused = false;
    answer.setEncoding('utf8');
    for await (const piece of answer as AsyncIterable<string>) {
      if (refused) continue;
      held += piece;
      for (const data of splitter.push(piece)) {
        if (data === '[DONE]') continue;
        try {
          assembly.add(JSON.parse(data));
        } catch {
          // Not JSON: passed on as is; the assembly keeps what it understood.
        }
        if (!headersSent && !assembly.hasPromptTokenIds && assembly.error === undefined) {
          // The first chunk must carry the prompt's token ids: refuse before any byte reaches the agent.
          refused = true;
          counts.refused += 1;
          answer.resume();
          sendError(
            response,
            502,
            missingTokensMessage(
              options.upstream,
              "the prompt's token ids (prompt_token_ids on the first chunk)",
            ),
            'upstream_tokens_missing',
          );
          break;
        }
        if (!headersSent) {
          response.writeHead(200, {
            'content-type': 'text/event-stream',
            'cache-control': 'no-cache',
            connection: 'keep-alive',
          });
          headersSent = true;
        }
      }
      if (refused || !headersSent) continue;
      // Everything up to the [DONE] event is passed on now.
      const done = held.indexOf('data: [DONE]');
      if (done === -1) {
        response.write(held);
        held = '';
      } else {
        response.write(held.slice(0, done));
        held = held.slice(done);
      }
    }
    if (refused) return;
    const received = performance.now();
    if (!headersSent) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      headersSent = true;
    }
    if (assembly.error === undefined) {
      const recorded = await record(
        body,
        assembly.reply(),
        true,
        episodeId,
        received - upstreamStarted,
        prepared,
        received,
      );
      if (typeof recorded === 'string') {
        // Headers are out: the refusal travels as an error event, which the OpenAI SDKs raise.
        response.write(
          `data: ${JSON.stringify({ error: { message: recorded, type: 'upstream_tokens_missing', code: 502 } })}\n\n`,
        );
      }
    } else {
      counts.failed += 1;
    }
    response.end(held === '' ? 'data: [DONE]\n\n' : held);
  };

  /** Records a call; a string says why it was refused. */
  const record = async (
    body: Record<string, unknown>,
    reply: unknown,
    stream: boolean,
    episodeId: string | null,
    milliseconds: number,
    prepared: number,
    received: number,
  ): Promise<ProxyRecord | string> => {
    const call = callFromReply(body, reply, milliseconds);
    const missing = !call
      ? 'a choice'
      : !call.promptTokenIds
        ? "the prompt's token ids (prompt_token_ids)"
        : !call.completionTokenIds
          ? "the answer's token ids (choices[0].token_ids)"
          : undefined;
    if (!call?.promptTokenIds || !call.completionTokenIds || missing) {
      counts.refused += 1;
      return missingTokensMessage(options.upstream, missing ?? 'token ids');
    }
    const written = log.append({
      episodeId,
      stream,
      model: call.model,
      messages: call.messages,
      tools: call.tools,
      content: call.content,
      toolCalls: call.toolCalls,
      finishReason: call.finishReason,
      promptTokenIds: call.promptTokenIds,
      completionTokenIds: call.completionTokenIds,
      ...(call.logprobs ? { logprobs: call.logprobs } : {}),
      milliseconds: round(milliseconds),
      overheadMilliseconds: round(prepared + (performance.now() - received)),
    });
    counts.recorded += 1;
    options.onRecord?.(written);
    return written;
  };

  const server: Server = createServer({ noDelay: true }, (request, response) => {
    inFlight += 1;
    response.on('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drained?.();
    });
    const url = new URL(request.url ?? '/', 'http://proxy');
    let path = url.pathname;
    let episodeId: string | null = headerValue(request.headers, EPISODE_HEADER) ?? null;
    const scoped = EPISODE_PATH.exec(path);
    if (scoped) {
      episodeId = decodeURIComponent(scoped[1]!);
      path = scoped[2]!;
    }
    const route = `${request.method} ${path}`;
    const handle = async () => {
      if (route === 'POST /v1/chat/completions') {
        return chat(request, response, episodeId, `${path}${url.search}`);
      }
      if (route === 'GET /v1/models' || route.startsWith('GET /v1/models/')) {
        return passThrough(request, response, path);
      }
      if (route === 'GET /health') return sendJson(response, 200, { status: 'ok' });
      if (route === 'GET /dreamgym/proxy') {
        return sendJson(response, 200, {
          upstream: options.upstream,
          records: options.records,
          model: proxy.model ?? null,
          nextSeq: log.next,
          ...counts,
        });
      }
      if (route === 'POST /dreamgym/proxy/model') {
        const value = JSON.parse(await readBody(request, 1 << 16)) as { model?: unknown };
        if (value.model !== null && typeof value.model !== 'string') {
          return sendError(
            response,
            400,
            'Send {"model": "<name>"} (or null for the agent\'s own).',
            'invalid_request_error',
          );
        }
        proxy.model = value.model ?? undefined;
        return sendJson(response, 200, { model: proxy.model ?? null });
      }
      return sendError(
        response,
        404,
        `No route ${route} on the DreamGym proxy: it serves POST /v1/chat/completions (also under /episodes/<id>/v1) and GET /v1/models.`,
        'not_found',
      );
    };
    handle().catch((error: unknown) => {
      counts.failed += 1;
      sendError(
        response,
        error instanceof BodyTooLarge ? 413 : 500,
        error instanceof Error ? error.message : String(error),
      );
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(
          `The proxy cannot listen on ${options.host ?? '127.0.0.1'}:${options.port ?? 0}: ${error.code === 'EADDRINUSE' ? 'the port is in use; pass another --port' : error.message}.`,
          { field: 'port', cause: error },
        ),
      ),
    );
    // A deep accept queue: hundreds of agents' calls may open connections at the same moment.
    server.listen(
      { port: options.port ?? 0, host: options.host ?? '127.0.0.1', backlog: 4096 },
      () => resolve(),
    );
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  proxy.port = address.port;
  proxy.url = `http://${host}:${address.port}`;
  proxy.baseURL = `${proxy.url}/v1`;
  return proxy;
}

class BodyTooLarge extends Error {}

function readBody(request: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    request.on('data', (part: Buffer) => {
      size += part.length;
      if (size > limit) {
        reject(new BodyTooLarge(`The request body exceeds the proxy's limit of ${limit} bytes.`));
        request.destroy();
        return;
      }
      parts.push(part);
    });
    request.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    request.on('error', reject);
  });
}

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** The agent's headers the server should see (its key, its user agent), without hop-by-hop ones. */
function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (
      [
        'host',
        'connection',
        'content-length',
        'transfer-encoding',
        'keep-alive',
        EPISODE_HEADER,
      ].includes(name)
    )
      continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function sendError(
  response: ServerResponse,
  status: number,
  message: string,
  type = 'proxy_error',
): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  sendJson(response, status, { error: { message, type, param: null, code: status } });
}

function round(milliseconds: number): number {
  return Math.round(milliseconds * 1000) / 1000;
}

/** A final answer with no tool call, streamed when asked, so the agent's loop ends. */
function episodeOver(response: ServerResponse, body: Record<string, unknown>): void {
  const id = `chatcmpl-${randomBytes(8).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const model = String(body.model ?? '');
  if (body.stream === true) {
    const chunk = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [
        {
          index: 0,
          delta: { role: 'assistant', content: EPISODE_OVER_MESSAGE },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
    };
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    return;
  }
  sendJson(response, 200, {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: EPISODE_OVER_MESSAGE, refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  });
}
