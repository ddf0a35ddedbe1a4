/**
 * A typed client of the TextWorld server in `adapters/textworld/python/dreamgym_textworld_server`
 * (see its `server.py` for the routes). Every answer is validated at this boundary.
 */
import { EnvironmentError } from '@dreamgym/core';
import { z } from 'zod';

/** `GET /health`. */
export const TextworldHealthSchema = z.object({
  status: z.literal('ok'),
  sessions: z.number().int().nonnegative(),
  data_dir: z.string(),
  versions: z.record(z.string(), z.string()),
});
export type TextworldHealth = z.infer<typeof TextworldHealthSchema>;

/** What the engine knows about a game, answered by `POST /reset`. */
export const TextworldGameInfoSchema = z.object({
  /** The objective the game states at its start. */
  objective: z.string(),
  /** The cookbook's text. */
  recipe: z.string(),
  /** `[name, cooking, cutting]` of each ingredient: `['carrot', 'roasted', 'sliced']`. */
  ingredients: z.array(z.tuple([z.string(), z.string(), z.string()])),
  /** The generator's winning commands from the start. */
  walkthrough: z.array(z.string()),
  /** The generator's settings (`recipe`, `take`, `go`, `open`, `cook`, `cut`, `split`). */
  settings: z.record(z.string(), z.unknown()),
});
export type TextworldGameInfo = z.infer<typeof TextworldGameInfoSchema>;

/** The episode payload of `POST /reset` and `POST /step`. */
export const TextworldEpisodePayloadSchema = z.object({
  observation: z.string(),
  available_actions: z.array(z.string()),
  reward: z.number(),
  done: z.boolean(),
  won: z.boolean(),
  lost: z.boolean(),
  truncated: z.boolean(),
  steps: z.number().int().nonnegative(),
  score: z.number().int(),
  max_score: z.number().int(),
  game: z.string(),
  expert_plan: z.array(z.string()).optional(),
  /** Only on `POST /step`: whether the command was among the admissible ones. */
  admissible: z.boolean().optional(),
  /** Only on `POST /reset`. */
  info: TextworldGameInfoSchema.optional(),
});
export type TextworldEpisodePayload = z.infer<typeof TextworldEpisodePayloadSchema>;

const CreatedSchema = z.object({ id: z.number().int().nonnegative() });
const ErrorBodySchema = z.object({ error: z.string() });

/** The server answered with an error status. */
export class TextworldServerAnswerError extends EnvironmentError {
  readonly status: number;
  constructor(message: string, options: { status: number }) {
    super(message);
    this.status = options.status;
  }
}

/** The connection itself failed (refused, reset, timed out): the server may be gone. */
export class TextworldConnectionError extends EnvironmentError {}

/** Client of one TextWorld server at `baseUrl`. */
export class TextworldProtocolClient {
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
      throw new TextworldConnectionError(
        timedOut
          ? `TextWorld server ${method} ${url} did not answer within ${timeoutMs} ms (raise requestTimeoutMs if the engine is just slow).`
          : `TextWorld server ${method} ${url} failed: ${error instanceof Error ? error.message : String(error)}. Is the server running?`,
        { cause: error },
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new TextworldServerAnswerError(
        `TextWorld server ${method} ${url} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
        { status: response.status },
      );
    }
    if (!response.ok) {
      const error = ErrorBodySchema.safeParse(value);
      throw new TextworldServerAnswerError(
        `TextWorld server ${method} ${url} answered ${response.status}: ${error.success ? error.data.error : text.slice(0, 200)}`,
        { status: response.status },
      );
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new TextworldServerAnswerError(
        `TextWorld server ${method} ${url} answered a body that breaks the protocol (${issue?.path.join('.') || '(root)'}: ${issue?.message}). Is ${this.baseUrl} a DreamGym TextWorld server?`,
        { status: response.status },
      );
    }
    return parsed.data;
  }

  /** `GET /health`. */
  health(timeoutMs?: number): Promise<TextworldHealth> {
    return this.request('GET', '/health', TextworldHealthSchema, undefined, timeoutMs);
  }

  /** `POST /create`: a new session id. */
  async create(): Promise<number> {
    return (await this.request('POST', '/create', CreatedSchema, {})).id;
  }

  /** `POST /reset`: `game` is `<split>/<name>`. */
  reset(
    id: number,
    request: { game: string; maxSteps: number; expertPlan: boolean },
  ): Promise<TextworldEpisodePayload> {
    return this.request('POST', '/reset', TextworldEpisodePayloadSchema, {
      id,
      game: request.game,
      max_steps: request.maxSteps,
      expert_plan: request.expertPlan,
    });
  }

  /** `POST /step`. */
  step(id: number, action: string): Promise<TextworldEpisodePayload> {
    return this.request('POST', '/step', TextworldEpisodePayloadSchema, { id, action });
  }

  /** `GET /games`: the split's games in index order. */
  games(split: 'train' | 'valid' | 'test'): Promise<string[]> {
    return this.request('GET', `/games?split=${split}`, z.array(z.string()));
  }

  /** `POST /close`. */
  async close(id: number): Promise<void> {
    await this.request('POST', '/close', z.object({ closed: z.literal(true) }), { id });
  }
}
