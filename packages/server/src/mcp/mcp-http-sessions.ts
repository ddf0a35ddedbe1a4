/**
 * MCP over Streamable HTTP on `/mcp`: `POST` carries one JSON-RPC message and is answered
 * with JSON (`application/json`; this server never streams, so `GET` is 405 as the transport
 * allows), `DELETE` ends a session. `initialize` opens a session (its id in the
 * `Mcp-Session-Id` reply header), and each session plays one episode on an environment of its
 * own: the query of the URL the agent was given (`/mcp?task_id=...&episode_id=...&seed=...`)
 * names the task and the episode id, so a trainer that hands each agent run its own URL reads
 * that episode's reward under the id it chose. Sessions are capped, closed when idle, and
 * their episodes reported to the task source when they end or are abandoned.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '@dreamgym/openai-wire';
import type { EpisodeRunner } from '../episode-runner.js';
import { HttpError } from '../http-io.js';
import type { Logger } from '../logger.js';
import { fieldErrors, ResetParametersSchema } from '../protocol/openenv-messages.js';
import { SerialQueue } from '../serial-queue.js';
import {
  answerMcp,
  JSON_RPC_INTERNAL_ERROR,
  JSON_RPC_INVALID_REQUEST,
  JSON_RPC_PARSE_ERROR,
  jsonRpcError,
  type McpServerIdentity,
  parseJsonRpc,
} from './mcp-protocol.js';
import type { McpEpisode } from './mcp-tools.js';

/** What {@link McpHttpSessions} needs from its server. */
export interface McpHttpSessionsOptions {
  identity: McpServerIdentity;
  createRunner: () => Promise<EpisodeRunner>;
  /** Live sessions at most; `initialize` beyond them is refused with 503. */
  maxSessions: number;
  /** A session idle this long is closed (its episode abandoned). 0 disables. */
  sessionTimeoutMs: number;
  logger: Logger;
}

interface McpSession extends McpEpisode {
  id: string;
  queue: SerialQueue;
  lastActivity: number;
}

const SESSION_HEADER = 'mcp-session-id';

/** The Streamable HTTP MCP sessions of one server. */
export class McpHttpSessions {
  readonly totals = { opened: 0, rejected: 0, reaped: 0 };
  private readonly sessions = new Map<string, McpSession>();
  private opening = 0;

  constructor(private readonly options: McpHttpSessionsOptions) {}

  /** Live sessions. */
  get size(): number {
    return this.sessions.size;
  }

  /** `POST /mcp` with its body text, from a request whose URL is `url`. */
  async post(
    request: IncomingMessage,
    response: ServerResponse,
    body: string,
    url: URL,
  ): Promise<void> {
    // A body that is no JSON-RPC message is answered with its JSON-RPC error and HTTP 200, as
    // OpenEnv's own servers answer it (its validator probes `POST /mcp` with `{}`).
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return sendJson(
        response,
        200,
        jsonRpcError(JSON_RPC_PARSE_ERROR, 'Parse error: the body is not JSON.'),
      );
    }
    const message = parseJsonRpc(value);
    if ('error' in message) return sendJson(response, 200, message.error);
    const sessionId = header(request, SESSION_HEADER);
    if (message.kind === 'request' && message.method === 'initialize') {
      const session = await this.open(url, message.id);
      if ('error' in session) return sendJson(response, session.status, session.error);
      const reply = await answerMcp(message, this.options.identity, session);
      return sendJson(response, 200, reply, { [SESSION_HEADER]: session.id });
    }
    let session: McpSession | undefined;
    if (sessionId !== undefined) {
      session = this.sessions.get(sessionId);
      if (!session) {
        // The transport's rule: 404 tells the client to initialize a new session.
        return sendJson(
          response,
          404,
          jsonRpcError(
            JSON_RPC_INVALID_REQUEST,
            `No MCP session "${sessionId}" on this server (it ended, or was closed after ${this.options.sessionTimeoutMs / 1000} s idle): send initialize to open another.`,
            message.id,
          ),
        );
      }
      session.lastActivity = performance.now();
    }
    if (message.kind !== 'request') {
      response.writeHead(202).end();
      return;
    }
    const work = () => answerMcp(message, this.options.identity, session);
    let reply: Record<string, unknown> | undefined;
    try {
      reply = session ? await session.queue.run(work) : await work();
    } catch (error) {
      this.options.logger.log('warn', 'mcp.call_failed', { session: sessionId, error });
      reply = jsonRpcError(
        JSON_RPC_INTERNAL_ERROR,
        `The environment failed: ${error instanceof Error ? error.message : String(error)}`,
        message.id,
      );
    }
    const status = !session && message.method === 'tools/call' ? 400 : 200;
    return sendJson(response, status, reply);
  }

  /** `DELETE /mcp`: ends the session named by the `Mcp-Session-Id` header. */
  async delete(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const id = header(request, SESSION_HEADER);
    const session = id === undefined ? undefined : this.sessions.get(id);
    if (!session) {
      throw new HttpError(
        404,
        `No MCP session "${id ?? ''}" on this server (pass its Mcp-Session-Id header).`,
      );
    }
    await this.end(session, 'client');
    response.writeHead(200).end();
  }

  /** Closes sessions idle for longer than the timeout. */
  reapIdle(now: number): void {
    if (this.options.sessionTimeoutMs <= 0) return;
    for (const session of this.sessions.values()) {
      if (
        session.queue.pending === 0 &&
        now - session.lastActivity > this.options.sessionTimeoutMs
      ) {
        this.totals.reaped += 1;
        void this.end(session, 'idle');
      }
    }
  }

  /** Ends every session once its call in flight is done. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((session) => this.end(session, 'shutdown')));
  }

  private async open(
    url: URL,
    requestId: string | number | null,
  ): Promise<McpSession | { status: number; error: Record<string, unknown> }> {
    const query = Object.fromEntries(url.searchParams);
    const start = ResetParametersSchema.safeParse({
      ...query,
      ...(query.seed === undefined ? {} : { seed: Number(query.seed) }),
    });
    if (!start.success) {
      const problems = fieldErrors(start.error, ['query'])
        .map((each) => `${each.loc.join('.')}: ${each.msg}`)
        .join('; ');
      return {
        status: 400,
        error: jsonRpcError(
          JSON_RPC_INVALID_REQUEST,
          `The /mcp URL's query is not valid (${problems}); it takes task_id, episode_id and seed.`,
          requestId,
        ),
      };
    }
    if (this.sessions.size + this.opening >= this.options.maxSessions) {
      this.totals.rejected += 1;
      return {
        status: 503,
        error: jsonRpcError(
          JSON_RPC_INTERNAL_ERROR,
          `MCP sessions at capacity: ${this.sessions.size}/${this.options.maxSessions} live. End one (DELETE /mcp) or retry shortly.`,
          requestId,
        ),
      };
    }
    this.opening += 1;
    let runner: EpisodeRunner;
    try {
      runner = await this.options.createRunner();
    } catch (error) {
      return {
        status: 500,
        error: jsonRpcError(
          JSON_RPC_INTERNAL_ERROR,
          `The environment factory failed: ${error instanceof Error ? error.message : String(error)}`,
          requestId,
        ),
      };
    } finally {
      this.opening -= 1;
    }
    const id = randomUUID();
    const session: McpSession = {
      id,
      runner,
      start: { ...start.data, episode_id: start.data.episode_id ?? id },
      queue: new SerialQueue(),
      lastActivity: performance.now(),
    };
    this.sessions.set(id, session);
    this.totals.opened += 1;
    this.options.logger.log('info', 'mcp.session_opened', { session: id, ...start.data });
    return session;
  }

  private async end(session: McpSession, reason: string): Promise<void> {
    if (this.sessions.get(session.id) !== session) return;
    this.sessions.delete(session.id);
    await session.queue.idle();
    try {
      await session.runner.close();
    } catch (error) {
      this.options.logger.log('warn', 'mcp.close_failed', { session: session.id, error });
    }
    this.options.logger.log('info', 'mcp.session_closed', { session: session.id, reason });
  }
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
