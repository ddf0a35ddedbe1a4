/**
 * A typed client of the AgentGym ALFWorld protocol served by
 * `adapters/alfworld/python/dreamgym_alfworld_server` (see its `server.py` for the routes).
 * Every answer is validated at this boundary.
 */
import { EnvironmentError } from '@dreamgym/core';
import { z } from 'zod';

/** `GET /health`. */
export const AlfworldHealthSchema = z.object({
  status: z.literal('ok'),
  sessions: z.number().int().nonnegative(),
  data_dir: z.string(),
  versions: z.record(z.string(), z.string()),
});
export type AlfworldHealth = z.infer<typeof AlfworldHealthSchema>;

/** The episode payload of `POST /reset` and `POST /step`. */
export const AlfworldEpisodePayloadSchema = z.object({
  observation: z.string(),
  available_actions: z.array(z.string()),
  reward: z.number(),
  done: z.boolean(),
  won: z.boolean(),
  truncated: z.boolean(),
  steps: z.number().int().nonnegative(),
  game: z.string(),
  task_type: z.string(),
  expert_plan: z.array(z.string()).optional(),
  /** With `handcodedExpert`: the handcoded expert's next command, null once it has none. */
  expert_action: z.string().nullable().optional(),
  /** With `handcodedExpert`: why the handcoded expert gave up. */
  expert_failure: z.string().optional(),
  /** Only on `POST /step`: whether the action was among the admissible commands. */
  admissible: z.boolean().optional(),
});
export type AlfworldEpisodePayload = z.infer<typeof AlfworldEpisodePayloadSchema>;

const CreatedSchema = z.object({ id: z.number().int().nonnegative() });
const ErrorBodySchema = z.object({ error: z.string() });

/** What `POST /reset` takes besides the session id. */
export interface AlfworldResetRequest {
  /** Index into the split's sorted games, or a path relative to the data directory. */
  game: number | string;
  split?: 'train' | 'valid_seen' | 'valid_unseen';
  maxSteps?: number;
  expertPlan?: boolean;
  /** Add ALFWorld's handcoded expert's next command (`expert_action`) to every answer. */
  handcodedExpert?: boolean;
  /** Seed of the handcoded expert's random choices. Default 0. */
  seed?: number;
}

/** An HTTP-level failure: the server answered with an error status. */
export class AlfworldServerAnswerError extends EnvironmentError {
  readonly status: number;
  readonly url: string;
  constructor(message: string, options: { status: number; url: string }) {
    super(message);
    this.status = options.status;
    this.url = options.url;
  }
}

/** The connection itself failed (refused, reset, timed out): the server may be gone. */
export class AlfworldConnectionError extends EnvironmentError {
  readonly url: string;
  readonly timedOut: boolean;
  constructor(message: string, options: { url: string; timedOut: boolean; cause: unknown }) {
    super(message, { cause: options.cause });
    this.url = options.url;
    this.timedOut = options.timedOut;
  }
}

/** Client of one ALFWorld server at `baseUrl`. */
export class AlfworldProtocolClient {
  constructor(
    readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  private async request<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    body?: unknown,
    timeoutMs = this.timeoutMs,
  ): Promise<z.output<S>> {
    const url = new URL(path, this.baseUrl).toString();
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method,
        signal: AbortSignal.timeout(timeoutMs),
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      text = await response.text();
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      throw new AlfworldConnectionError(
        timedOut
          ? `ALFWorld server ${method} ${url} did not answer within ${timeoutMs} ms (raise requestTimeoutMs if the engine is just slow).`
          : `ALFWorld server ${method} ${url} failed: ${describeCause(error)}. Is the server running?`,
        { url, timedOut, cause: error },
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AlfworldServerAnswerError(
        `ALFWorld server ${method} ${url} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
        { status: response.status, url },
      );
    }
    if (!response.ok) {
      const error = ErrorBodySchema.safeParse(value);
      throw new AlfworldServerAnswerError(
        `ALFWorld server ${method} ${url} answered ${response.status}: ${error.success ? error.data.error : text.slice(0, 200)}`,
        { status: response.status, url },
      );
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new AlfworldServerAnswerError(
        `ALFWorld server ${method} ${url} answered a body that breaks the protocol (${issue?.path.join('.') || '(root)'}: ${issue?.message}). Is ${this.baseUrl} a DreamGym ALFWorld server?`,
        { status: response.status, url },
      );
    }
    return parsed.data;
  }

  /** `GET /health`. */
  health(timeoutMs?: number): Promise<AlfworldHealth> {
    return this.request('GET', '/health', AlfworldHealthSchema, undefined, timeoutMs);
  }

  /** `POST /create`: a new session id. */
  async create(): Promise<number> {
    return (await this.request('POST', '/create', CreatedSchema, {})).id;
  }

  /** `POST /reset`. */
  reset(id: number, request: AlfworldResetRequest): Promise<AlfworldEpisodePayload> {
    return this.request('POST', '/reset', AlfworldEpisodePayloadSchema, {
      id,
      game: request.game,
      ...(request.split === undefined ? {} : { split: request.split }),
      ...(request.maxSteps === undefined ? {} : { max_steps: request.maxSteps }),
      ...(request.expertPlan === undefined ? {} : { expert_plan: request.expertPlan }),
      ...(request.handcodedExpert === undefined
        ? {}
        : { handcoded_expert: request.handcodedExpert }),
      ...(request.seed === undefined ? {} : { seed: request.seed }),
    });
  }

  /** `POST /step`. */
  step(id: number, action: string): Promise<AlfworldEpisodePayload> {
    return this.request('POST', '/step', AlfworldEpisodePayloadSchema, { id, action });
  }

  /** `GET /available_actions`. */
  availableActions(id: number): Promise<string[]> {
    return this.request('GET', `/available_actions?id=${id}`, z.array(z.string()));
  }

  /** `GET /observation`. */
  observation(id: number): Promise<string> {
    return this.request('GET', `/observation?id=${id}`, z.string());
  }

  /** `GET /games`: the split's games in index order. */
  games(split: 'train' | 'valid_seen' | 'valid_unseen' = 'train'): Promise<string[]> {
    return this.request('GET', `/games?split=${split}`, z.array(z.string()));
  }

  /** `POST /close`. */
  async close(id: number): Promise<void> {
    await this.request('POST', '/close', z.object({ closed: z.literal(true) }), { id });
  }
}

function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: string }).code;
    return code ? `${code} (${cause.message})` : cause.message;
  }
  return error.message;
}
