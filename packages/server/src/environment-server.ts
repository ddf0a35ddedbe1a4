/**
 * `EnvironmentServer`: any DreamGym `Environment` over Meta's OpenEnv protocol.
 *
 * - WebSocket `/ws`: one session per connection, one environment per session from the
 *   factory; `reset`, `step`, `state`, `close` messages answered with `observation`,
 *   `state` and `error` replies exactly as openenv-core's `EnvClient` expects.
 * - HTTP: `POST /reset` and `POST /step` (episodes kept on the server under their
 *   `episode_id`), `GET /state`, `/health`, `/metadata`, `/schema` (JSON Schema from the zod
 *   schemas), `/openapi.json`, `/mcp` (the environment as MCP tools over Streamable HTTP: one
 *   session, one episode; see `mcp/`), `GET /metrics`
 *   (Prometheus text: steps, latency histogram, sessions, memory, the run's gauges), and
 *   `GET /dreamgym/status` when a status source is given.
 * - Limits: a cap on WebSocket sessions, and a separate one on live HTTP episodes (HTTP is
 *   stateless in OpenEnv: an HTTP episode never takes a WebSocket slot; at its cap the least
 *   recently used idle one is closed to make room) with a per-client rate limit on
 *   `POST /reset`, so HTTP callers cannot lock trainers out; idle reaping, a payload limit, a
 *   heartbeat that drops dead peers; `/health` says `degraded` when saturated; bound to 127.0.0.1 unless
 *   told otherwise; `close()` finishes the steps in flight before closing environments.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ConfigError, DreamGymError, type Environment, parseOptions } from '@dreamgym/core';
import { sendJson } from '@dreamgym/openai-wire';
import { WebSocketServer } from 'ws';
import { z } from 'zod';
import { EpisodeRunner } from './episode-runner.js';
import { HttpEpisodes } from './http-episodes.js';
import { HttpError, parseJsonBody, readBody } from './http-io.js';
import { type Logger, silentLogger } from './logger.js';
import { McpHttpSessions } from './mcp/mcp-http-sessions.js';
import type { McpServerIdentity } from './mcp/mcp-protocol.js';
import { CLOSE_CODES, type EnvironmentMetadata } from './protocol/openenv-messages.js';
import { openApiDocument, schemaDocument } from './protocol/schema-documents.js';
import { type ExtraMetric, formatMetrics, StepMetrics } from './server-metrics.js';
import type { TaskSource } from './task-source.js';
import { type SessionCounters, WebSocketSession } from './websocket-session.js';

/** Settings of {@link EnvironmentServer} (validated; defaults applied). */
export const EnvironmentServerSettingsSchema = z.object({
  /** Interface to bind. Default `127.0.0.1`: reachable from this machine only. */
  host: z.string().min(1).default('127.0.0.1'),
  /** Port; 0 picks a free one (read it from `start()`). Default 8000. */
  port: z.number().int().min(0).max(65_535).default(8000),
  /** Concurrent WebSocket sessions. Default 64. */
  maxSessions: z.number().int().positive().default(64),
  /**
   * Live HTTP episodes (`POST /reset` then `POST /step` with its `episode_id`), apart from the
   * WebSocket sessions; at the cap the least recently used idle episode is closed. Default 64.
   */
  maxHttpEpisodes: z.number().int().positive().default(64),
  /** Live MCP sessions over Streamable HTTP (`POST /mcp`), each one episode. Default 64. */
  maxMcpSessions: z.number().int().positive().default(64),
  /** `POST /reset` requests one client address may make per second (a burst of as many). Default 20. */
  httpResetsPerSecond: z.number().positive().default(20),
  /** A session with no message for this long is closed (WebSocket code 4408). 0 disables. Default 300 000. */
  sessionTimeoutMs: z.number().int().nonnegative().default(300_000),
  /** Largest accepted WebSocket message or HTTP body, in bytes. Default 1 MiB. */
  maxPayloadBytes: z
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /** How long `close()` waits for steps in flight before dropping connections. Default 10 000. */
  shutdownGraceMs: z.number().int().nonnegative().default(10_000),
  /** Ping interval; a peer that misses one pong is dropped. 0 disables. Default 30 000. */
  heartbeatMs: z.number().int().nonnegative().default(30_000),
  /** Steps after which the server ends an episode as truncated. Default: the environment's own limit. */
  maxSteps: z.number().int().positive().optional(),
});
export type EnvironmentServerSettings = z.input<typeof EnvironmentServerSettingsSchema>;

/** Options of {@link EnvironmentServer}. */
export interface EnvironmentServerOptions extends EnvironmentServerSettings {
  /** Makes the environment of one session (called once per WebSocket session or HTTP episode). */
  createEnvironment: () => Environment | Promise<Environment>;
  /** Tasks of `reset`, and where finished episodes go. */
  tasks: TaskSource;
  /** What `GET /metadata` says. */
  metadata: EnvironmentMetadata;
  /**
   * The domain's action grammar (the adapter's agent instructions): the MCP `act` tool's
   * description. Default: `metadata.readme_content`.
   */
  actionGrammar?: string;
  /** Extra figures for `GET /dreamgym/status` (curriculum, buffer...). */
  status?: () => Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Extra gauges and counters for `GET /metrics` (replay buffer size and capacity...). */
  metrics?: () => readonly ExtraMetric[];
  /** Receives structured log events. Default: none. */
  logger?: Logger;
}

/** Live counts of a running server. */
export interface EnvironmentServerStats {
  /** WebSocket sessions (what `maxSessions` caps). */
  activeSessions: number;
  websocketSessions: number;
  httpEpisodes: number;
  /** Live MCP sessions over Streamable HTTP. */
  mcpSessions: number;
  maxSessions: number;
  maxHttpEpisodes: number;
  /** HTTP episodes closed to make room for newer ones. */
  httpEpisodesEvicted: number;
  sessionsOpened: number;
  sessionsRejected: number;
  sessionsReaped: number;
  messages: number;
  httpRequests: number;
  /** Error replies by OpenEnv error code (WebSocket) and HTTP status. */
  errors: Record<string, number>;
  /** Steps served (WebSocket and HTTP), and the milliseconds spent serving them. */
  steps: number;
  stepMilliseconds: number;
}

/** The OpenEnv protocol server. */
export class EnvironmentServer {
  readonly settings: z.output<typeof EnvironmentServerSettingsSchema>;
  private readonly options: EnvironmentServerOptions;
  private readonly logger: Logger;
  private readonly http: Server;
  private readonly websockets: WebSocketServer;
  private readonly sessions = new Map<string, WebSocketSession>();
  private readonly episodes: HttpEpisodes;
  private readonly mcp: McpHttpSessions;
  private readonly identity: McpServerIdentity;
  private readonly steps = new StepMetrics();
  private readonly counters: SessionCounters = {
    messages: 0,
    errors: {},
    onStep: (milliseconds) => this.steps.record(milliseconds),
  };
  /** WebSocket sessions opened, refused and closed idle; HTTP requests. */
  private readonly totals = { opened: 0, rejected: 0, reaped: 0, httpRequests: 0 };
  private readonly httpErrors: Record<string, number> = {};
  private readonly sockets = new Set<Socket>();
  private timers: NodeJS.Timeout[] = [];
  private closing: Promise<void> | undefined;
  private started = false;

  constructor(options: EnvironmentServerOptions) {
    this.settings = parseOptions(EnvironmentServerSettingsSchema, options, 'EnvironmentServer');
    this.options = options;
    this.logger = options.logger ?? silentLogger;
    this.episodes = new HttpEpisodes({
      limits: this.settings,
      createRunner: () => this.createRunner(),
      logger: this.logger,
      onStep: (milliseconds) => this.steps.record(milliseconds),
    });
    this.identity = {
      name: options.metadata.name,
      version: options.metadata.version ?? '0.0.0',
      grammar: options.actionGrammar ?? options.metadata.readme_content ?? '',
    };
    this.mcp = new McpHttpSessions({
      identity: this.identity,
      createRunner: () => this.createRunner(),
      maxSessions: this.settings.maxMcpSessions,
      sessionTimeoutMs: this.settings.sessionTimeoutMs,
      logger: this.logger,
    });
    this.http = createServer((request, response) => {
      void this.route(request, response);
    });
    this.http.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.http.on('upgrade', (request, socket, head) =>
      this.upgrade(request, socket as Socket, head),
    );
    this.http.on('clientError', (_error, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    });
    this.websockets = new WebSocketServer({
      noServer: true,
      maxPayload: this.settings.maxPayloadBytes,
      perMessageDeflate: false,
      clientTracking: false,
    });
  }

  /** Listens on `host:port`; resolves with the URL clients connect to (`http://127.0.0.1:8000`). */
  async start(): Promise<{ url: string; host: string; port: number }> {
    if (this.started) throw new ConfigError('EnvironmentServer.start(): already started.');
    this.started = true;
    await new Promise<void>((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException) => {
        reject(
          new ConfigError(
            `Cannot listen on ${this.settings.host}:${this.settings.port}: ${error.code === 'EADDRINUSE' ? 'the port is in use; pass another --port (0 picks a free one)' : error.message}.`,
            { field: 'port', cause: error },
          ),
        );
      };
      this.http.once('error', onError);
      this.http.listen(this.settings.port, this.settings.host, () => {
        this.http.off('error', onError);
        resolve();
      });
    });
    const address = this.http.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const url = `http://${host}:${address.port}`;
    this.startTimers();
    this.logger.log('info', 'server.listening', {
      url,
      maxSessions: this.settings.maxSessions,
      sessionTimeoutMs: this.settings.sessionTimeoutMs,
      maxPayloadBytes: this.settings.maxPayloadBytes,
    });
    return { url, host: address.address, port: address.port };
  }

  /** Live counts. */
  stats(): EnvironmentServerStats {
    const errors: Record<string, number> = { ...this.httpErrors };
    for (const [code, count] of Object.entries(this.counters.errors)) errors[code] = count;
    return {
      activeSessions: this.activeSessions(),
      websocketSessions: this.sessions.size,
      httpEpisodes: this.episodes.size,
      mcpSessions: this.mcp.size,
      maxSessions: this.settings.maxSessions,
      maxHttpEpisodes: this.settings.maxHttpEpisodes,
      httpEpisodesEvicted: this.episodes.totals.evicted,
      sessionsOpened: this.totals.opened + this.episodes.totals.opened + this.mcp.totals.opened,
      sessionsRejected:
        this.totals.rejected + this.episodes.totals.rejected + this.mcp.totals.rejected,
      sessionsReaped: this.totals.reaped + this.episodes.totals.reaped + this.mcp.totals.reaped,
      messages: this.counters.messages,
      httpRequests: this.totals.httpRequests,
      errors,
      steps: this.steps.total,
      stepMilliseconds: Math.round(this.steps.milliseconds),
    };
  }

  /**
   * Graceful shutdown: refuses new sessions and requests, lets every step in flight finish
   * (up to `shutdownGraceMs`), closes WebSocket sessions with 1001 and every environment.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.logger.log('info', 'server.shutting_down', {
      websocketSessions: this.sessions.size,
      httpEpisodes: this.episodes.size,
    });
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    const stopped = new Promise<void>((resolve) => {
      if (!this.http.listening) resolve();
      else this.http.close(() => resolve());
    });
    const drained = Promise.all([
      ...[...this.sessions.values()].map((session) => session.shutdown()),
      this.episodes.closeAll(),
      this.mcp.closeAll(),
    ]);
    let graceTimer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((resolve) => {
      graceTimer = setTimeout(() => resolve('timeout'), this.settings.shutdownGraceMs);
    });
    const outcome = await Promise.race([drained.then(() => 'drained' as const), grace]);
    clearTimeout(graceTimer);
    if (outcome === 'timeout') {
      this.logger.log('warn', 'server.shutdown_grace_over', { sessions: this.sessions.size });
      for (const session of this.sessions.values()) session.terminate();
    }
    this.http.closeIdleConnections();
    if (outcome === 'timeout') for (const socket of this.sockets) socket.destroy();
    await stopped;
    this.websockets.close();
    this.logger.log('info', 'server.stopped', this.stats() as unknown as Record<string, unknown>);
  }

  /** WebSocket sessions: what `maxSessions` caps (HTTP episodes have their own cap). */
  private activeSessions(): number {
    return this.sessions.size;
  }

  private startTimers(): void {
    const { sessionTimeoutMs, heartbeatMs } = this.settings;
    if (sessionTimeoutMs > 0) {
      const every = Math.min(5_000, Math.max(25, Math.floor(sessionTimeoutMs / 4)));
      this.timers.push(setInterval(() => this.reapIdle(), every).unref());
    }
    if (heartbeatMs > 0) {
      this.timers.push(
        setInterval(() => {
          for (const session of this.sessions.values()) session.ping();
        }, heartbeatMs).unref(),
      );
    }
  }

  private reapIdle(): void {
    const now = performance.now();
    const limit = this.settings.sessionTimeoutMs;
    for (const session of this.sessions.values()) {
      if (!session.busy && now - session.lastActivity > limit) {
        this.totals.reaped += 1;
        session.reap((now - session.lastActivity) / 1000);
      }
    }
    this.episodes.reapIdle(now);
    this.mcp.reapIdle(now);
  }

  private upgrade(request: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', (error) => this.logger.log('debug', 'socket.error', { error }));
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path !== '/ws') {
      socket.end(`HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n`);
      return;
    }
    if (this.closing) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\r\n');
      return;
    }
    this.websockets.handleUpgrade(request, socket, head, (websocket) => {
      const remote = request.socket.remoteAddress;
      if (this.activeSessions() >= this.settings.maxSessions) {
        // As OpenEnv does: accept, say why in an error reply, then close.
        this.totals.rejected += 1;
        this.counters.errors.CAPACITY_REACHED = (this.counters.errors.CAPACITY_REACHED ?? 0) + 1;
        const active = this.activeSessions();
        this.logger.log('warn', 'session.rejected', {
          remote,
          active,
          max: this.settings.maxSessions,
        });
        websocket.send(
          JSON.stringify({
            type: 'error',
            data: {
              message: `Server at capacity: ${active}/${this.settings.maxSessions} sessions active. Cannot accept new connections.`,
              code: 'CAPACITY_REACHED',
              active_sessions: active,
              max_sessions: this.settings.maxSessions,
            },
          }),
        );
        websocket.close(CLOSE_CODES.tryAgainLater, 'server at capacity');
        return;
      }
      const id = randomUUID();
      this.totals.opened += 1;
      const session = new WebSocketSession({
        id,
        socket: websocket,
        remote,
        logger: this.logger,
        counters: this.counters,
        createRunner: () => this.createRunner(),
        mcp: this.identity,
        onEnded: () => {
          this.sessions.delete(id);
        },
      });
      this.sessions.set(id, session);
      session.start();
    });
  }

  private async createRunner(): Promise<EpisodeRunner> {
    const environment = await this.options.createEnvironment();
    return new EpisodeRunner({
      environment,
      tasks: this.options.tasks,
      ...(this.settings.maxSteps === undefined ? {} : { maxSteps: this.settings.maxSteps }),
    });
  }

  private async route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    this.totals.httpRequests += 1;
    const url = new URL(request.url ?? '/', 'http://localhost');
    const route = `${request.method} ${url.pathname}`;
    try {
      if (this.closing && route !== 'GET /health') {
        throw new HttpError(503, 'The server is shutting down.');
      }
      switch (route) {
        case 'GET /health': {
          // OpenEnv's HealthResponse forbids other fields, so saturation is its `degraded`
          // status (steps are still served: 200); the counts are in GET /metrics.
          if (this.closing) return sendJson(response, 503, { status: 'unhealthy' });
          const saturated = this.activeSessions() >= this.settings.maxSessions;
          return sendJson(response, 200, { status: saturated ? 'degraded' : 'healthy' });
        }
        case 'GET /metadata':
          return sendJson(response, 200, this.options.metadata);
        case 'GET /schema':
          return sendJson(response, 200, schemaDocument());
        case 'GET /openapi.json':
          return sendJson(
            response,
            200,
            openApiDocument({
              title: `${this.options.metadata.name} (DreamGym over OpenEnv)`,
              version: this.options.metadata.version ?? '0.0.0',
              description: this.options.metadata.description,
            }),
          );
        case 'GET /state':
          return sendJson(response, 200, this.episodes.state(url.searchParams.get('episode_id')));
        case 'POST /reset': {
          const body = parseJsonBody(await readBody(request, this.settings.maxPayloadBytes), {});
          const remote = request.socket.remoteAddress ?? 'unknown';
          return sendJson(response, 200, await this.episodes.reset(body, remote));
        }
        case 'POST /step': {
          const body = parseJsonBody(await readBody(request, this.settings.maxPayloadBytes));
          return sendJson(response, 200, await this.episodes.step(body));
        }
        case 'POST /mcp':
          return await this.mcp.post(
            request,
            response,
            await readBody(request, this.settings.maxPayloadBytes),
            url,
          );
        case 'DELETE /mcp':
          return await this.mcp.delete(request, response);
        case 'GET /metrics': {
          const stats = this.stats();
          const body = formatMetrics(
            this.steps,
            {
              websocketSessions: stats.websocketSessions,
              maxSessions: stats.maxSessions,
              httpEpisodes: stats.httpEpisodes,
              maxHttpEpisodes: stats.maxHttpEpisodes,
              sessionsOpened: stats.sessionsOpened,
              sessionsRejected: stats.sessionsRejected,
              httpEpisodesEvicted: stats.httpEpisodesEvicted,
            },
            this.options.metrics?.() ?? [],
          );
          response.writeHead(200, {
            'content-type': 'text/plain; version=0.0.4; charset=utf-8',
            'content-length': Buffer.byteLength(body),
          });
          response.end(body);
          return;
        }
        case 'GET /dreamgym/status':
          return sendJson(response, 200, {
            ...(this.options.status ? await this.options.status() : {}),
            server: this.stats(),
          });
        default:
          throw new HttpError(
            KNOWN_PATHS.has(url.pathname) ? 405 : 404,
            KNOWN_PATHS.has(url.pathname) ? 'Method Not Allowed' : 'Not Found',
          );
      }
    } catch (error) {
      const { status, detail } = httpFailure(error);
      this.httpErrors[String(status)] = (this.httpErrors[String(status)] ?? 0) + 1;
      if (status >= 500) this.logger.log('error', 'http.error', { route, status, error });
      if (!response.headersSent) {
        sendJson(
          response,
          status,
          { detail },
          status === 413 ? { connection: 'close' } : status === 429 ? { 'retry-after': '1' } : {},
        );
      }
    }
  }
}

const KNOWN_PATHS = new Set([
  '/health',
  '/metadata',
  '/schema',
  '/openapi.json',
  '/state',
  '/reset',
  '/step',
  '/mcp',
  '/metrics',
  '/dreamgym/status',
  '/ws',
]);

/** HTTP status and detail of a failure: 422 for bad input, 409 for a wrong episode state. */
function httpFailure(error: unknown): { status: number; detail: unknown } {
  if (error instanceof HttpError) return { status: error.status, detail: error.detail };
  if (ConfigError.isInstance(error)) {
    return {
      status: 422,
      detail: [{ loc: ['body', error.field ?? ''], msg: error.message, type: 'value_error' }],
    };
  }
  if (DreamGymError.isInstance(error) && error.code === 'ENVIRONMENT_STATE') {
    return { status: 409, detail: error.message };
  }
  return {
    status: 500,
    detail: `Environment error: ${error instanceof Error ? error.message : String(error)}`,
  };
}
