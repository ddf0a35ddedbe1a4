/**
 * `WebSocketSession`: one OpenEnv session on `/ws`: one environment from the factory, its
 * messages handled one at a time in arrival order, replies in OpenEnv's shapes, and every
 * malformed message answered with an `error` reply (the session stays open). The session
 * ends on `close`, a disconnect, the idle reaper or shutdown; its environment is closed
 * after any step in flight has finished.
 */
import { ConfigError, DreamGymError } from '@dreamgym/core';
import type { RawData, WebSocket } from 'ws';
import type { EpisodeRunner } from './episode-runner.js';
import type { Logger } from './logger.js';
import { answerMcp, type McpServerIdentity, parseJsonRpc } from './mcp/mcp-protocol.js';
import {
  type Action,
  ActionSchema,
  CLOSE_CODES,
  describeFieldErrors,
  type FieldError,
  fieldErrors,
  plainStepAction,
  ResetParametersSchema,
  type StepReply,
  type WsErrorCode,
  WsIncomingMessageSchema,
} from './protocol/openenv-messages.js';
import { isLosable } from './remote-environment.js';
import { SerialQueue } from './serial-queue.js';

const MESSAGE_TYPES = new Set(['reset', 'step', 'state', 'close', 'mcp']);

/** Raised while handling a message; becomes an `error` reply. */
class MessageError extends Error {
  constructor(
    readonly code: WsErrorCode,
    message: string,
    readonly errors?: FieldError[],
  ) {
    super(message);
  }
}

/** Server-wide counters a session updates. */
export interface SessionCounters {
  messages: number;
  errors: Partial<Record<WsErrorCode, number>>;
  /** Called with each served step's milliseconds. */
  onStep?: (milliseconds: number) => void;
}

/** Options of {@link WebSocketSession}. */
export interface WebSocketSessionOptions {
  id: string;
  socket: WebSocket;
  /** Creates the session's environment and its runner. */
  createRunner: () => Promise<EpisodeRunner>;
  /** What the session's MCP messages say about the server, and the `act` tool's grammar. */
  mcp: McpServerIdentity;
  logger: Logger;
  counters: SessionCounters;
  /** Called once when the session has ended and its environment is closed. */
  onEnded: (session: WebSocketSession) => void;
  /** Client address, for logs. */
  remote: string | undefined;
}

/** One WebSocket session. */
export class WebSocketSession {
  readonly id: string;
  /** `performance.now()` of the last message from the client. */
  lastActivity = performance.now();
  private readonly socket: WebSocket;
  private readonly options: WebSocketSessionOptions;
  private readonly queue = new SerialQueue();
  private runner: EpisodeRunner | undefined;
  private ending = false;
  private ended: Promise<void> | undefined;
  private alive = true;
  private steps = 0;
  private readonly openedAt = performance.now();

  constructor(options: WebSocketSessionOptions) {
    this.id = options.id;
    this.socket = options.socket;
    this.options = options;
  }

  /** True while a message is queued or being handled. */
  get busy(): boolean {
    return this.queue.pending > 0;
  }

  /** Creates the environment and starts handling messages (those sent meanwhile wait). */
  start(): void {
    const { socket, logger } = this.options;
    socket.on('message', (data, isBinary) => {
      this.lastActivity = performance.now();
      this.options.counters.messages += 1;
      if (this.ending) {
        this.sendError('SESSION_ERROR', 'The session is closing; open a new connection.');
        return;
      }
      void this.queue.run(() => this.handle(data, isBinary));
    });
    socket.on('pong', () => {
      this.alive = true;
    });
    socket.on('error', (error) => {
      logger.log('warn', 'session.socket_error', { session: this.id, error });
    });
    socket.on('close', (code, reason) => {
      void this.end('disconnect', { closeCode: code, closeReason: reason.toString() });
    });
    void this.queue.run(async () => {
      try {
        this.runner = await this.options.createRunner();
        logger.log('info', 'session.opened', { session: this.id, remote: this.options.remote });
        const environment = this.runner.playing;
        if (isLosable(environment)) void environment.lost.then((loss) => this.lose(loss.reason));
      } catch (error) {
        logger.log('error', 'session.factory_failed', { session: this.id, error });
        this.sendError('FACTORY_ERROR', `The environment factory failed: ${message(error)}`);
        this.closeSocket(CLOSE_CODES.internalError, 'environment factory failed');
      }
    });
  }

  /** Liveness check for the heartbeat: false when the last ping got no pong (the peer is gone). */
  ping(): boolean {
    if (!this.alive) {
      this.socket.terminate();
      return false;
    }
    this.alive = false;
    try {
      this.socket.ping();
    } catch {
      // The socket is already closing; its close event ends the session.
    }
    return true;
  }

  /** Closes an idle session with close code 4408. */
  reap(idleSeconds: number): void {
    this.options.logger.log('info', 'session.reaped', { session: this.id, idleSeconds });
    this.closeSocket(CLOSE_CODES.idleTimeout, `session idle for ${Math.round(idleSeconds)} s`);
    void this.end('idle');
  }

  /** The environment is gone with its worker: closes with 1012 (service restart). */
  private lose(reason: string): void {
    if (this.ending) return;
    this.options.logger.log('warn', 'session.environment_lost', { session: this.id, reason });
    this.closeSocket(CLOSE_CODES.serviceRestart, 'environment worker restarted; reconnect');
    void this.end('environment_lost');
  }

  /** Finishes the message in flight, then closes with 1001 and closes the environment. */
  async shutdown(): Promise<void> {
    this.ending = true;
    await this.queue.idle();
    this.closeSocket(CLOSE_CODES.goingAway, 'server shutting down');
    await this.end('shutdown');
  }

  /** Drops the connection at once (shutdown grace period over). */
  terminate(): void {
    this.socket.terminate();
  }

  private async handle(data: RawData, isBinary: boolean): Promise<void> {
    if (this.ended || !this.runner) return;
    try {
      const reply = await this.dispatch(data, isBinary, this.runner);
      if (reply !== undefined) this.send(reply);
    } catch (error) {
      if (error instanceof MessageError) {
        this.sendError(error.code, error.message, error.errors);
      } else {
        // A refused request (an unknown task_id) is the client's doing; anything else is the environment's.
        const refused = ConfigError.isInstance(error);
        this.options.logger.log(refused ? 'debug' : 'warn', 'session.execution_error', {
          session: this.id,
          error,
        });
        this.sendError(refused ? 'VALIDATION_ERROR' : 'EXECUTION_ERROR', message(error));
      }
    }
  }

  private async dispatch(
    data: RawData,
    isBinary: boolean,
    runner: EpisodeRunner,
  ): Promise<unknown | undefined> {
    if (isBinary) {
      throw new MessageError(
        'INVALID_JSON',
        'Binary frames are not supported: send each message as a JSON text frame.',
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawText(data));
    } catch (error) {
      throw new MessageError('INVALID_JSON', `Invalid JSON: ${message(error)}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new MessageError(
        'VALIDATION_ERROR',
        'Invalid message: expected a JSON object {"type": "reset"|"step"|"state"|"close"|"mcp", "data": {...}}.',
      );
    }
    const type = (parsed as { type?: unknown }).type;
    if (typeof type !== 'string' || !MESSAGE_TYPES.has(type)) {
      throw new MessageError('UNKNOWN_TYPE', `Unknown message type: ${String(type ?? '')}`);
    }
    if (type === 'mcp') {
      // OpenEnv's MCP-over-WebSocket: a JSON-RPC request in, a JSON-RPC reply out, played on
      // this session's episode (the one a `reset` message started, or one drawn at the
      // first tool call). A notification gets no reply.
      const message = parseJsonRpc((parsed as { data?: unknown }).data);
      if ('error' in message) return { type: 'mcp', data: message.error };
      const reply = await answerMcp(message, this.options.mcp, { runner, start: {} });
      return reply === undefined ? undefined : { type: 'mcp', data: reply };
    }
    const plain = plainStepAction(parsed);
    if (plain) return { type: 'observation', data: await this.step(runner, plain) };
    const checked = WsIncomingMessageSchema.safeParse(parsed);
    if (!checked.success) throw validationError(checked.error, []);
    const incoming = checked.data;
    switch (incoming.type) {
      case 'reset': {
        const parameters = ResetParametersSchema.safeParse(incoming.data);
        if (!parameters.success) throw validationError(parameters.error, ['data']);
        return { type: 'observation', data: await runner.reset(parameters.data) };
      }
      case 'step': {
        const action = ActionSchema.safeParse(incoming.data);
        if (!action.success) throw validationError(action.error, ['data']);
        return { type: 'observation', data: await this.step(runner, action.data) };
      }
      case 'state':
        return { type: 'state', data: runner.state() };
      case 'close':
        this.closeSocket(CLOSE_CODES.normal, 'closed by client');
        // Not awaited: ending waits for the queue, which holds this very message.
        void this.end('client');
        return undefined;
    }
  }

  private async step(runner: EpisodeRunner, action: Action): Promise<StepReply> {
    const started = performance.now();
    const reply = await runner.step(action);
    this.options.counters.onStep?.(performance.now() - started);
    this.steps += 1;
    return reply;
  }

  private send(reply: unknown): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.socket.send(JSON.stringify(reply));
  }

  private sendError(code: WsErrorCode, text: string, errors?: FieldError[]): void {
    const counters = this.options.counters.errors;
    counters[code] = (counters[code] ?? 0) + 1;
    this.send({ type: 'error', data: { message: text, code, ...(errors ? { errors } : {}) } });
  }

  private closeSocket(code: number, reason: string): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(code, reason);
  }

  /** Ends the session once (later calls share the first): waits for the message in flight, then closes the environment. */
  private end(reason: string, details: Record<string, unknown> = {}): Promise<void> {
    this.ending = true;
    this.ended ??= this.finish(reason, details);
    return this.ended;
  }

  private async finish(reason: string, details: Record<string, unknown>): Promise<void> {
    await this.queue.idle();
    try {
      await this.runner?.close();
    } catch (error) {
      this.options.logger.log('warn', 'session.close_failed', { session: this.id, error });
    }
    this.options.logger.log('info', 'session.closed', {
      session: this.id,
      reason,
      steps: this.steps,
      seconds: Math.round(performance.now() - this.openedAt) / 1000,
      ...details,
    });
    this.options.onEnded(this);
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

function validationError(
  error: import('zod').ZodError,
  prefix: readonly (string | number)[],
): MessageError {
  const errors = fieldErrors(error, prefix);
  return new MessageError(
    'VALIDATION_ERROR',
    `Invalid message: ${describeFieldErrors(errors)}`,
    errors,
  );
}

function message(error: unknown): string {
  if (DreamGymError.isInstance(error) || error instanceof Error) return error.message;
  return String(error);
}
