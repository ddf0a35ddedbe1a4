/**
 * A typed client of the AgentGym WebShop protocol (`agentenv-webshop`'s FastAPI server):
 * `POST /create`, `POST /reset {env_idx, session_id}`, `POST /step {env_idx, action}`,
 * `GET /available_actions`, `GET /observation`, `GET /instruction_text`, `GET /state`,
 * `GET /list_envs`, `POST /close`. Every answer is validated at this boundary; failed
 * requests are retried where that is safe.
 */
import { EnvironmentError } from '@dreamgym/core';
import { z } from 'zod';

/** `POST /step`'s answer. */
export const WebshopStepAnswerSchema = z.object({
  state: z.string(),
  reward: z.number(),
  done: z.boolean(),
  info: z.unknown().optional(),
});
export type WebshopStepAnswer = z.infer<typeof WebshopStepAnswerSchema>;

/** `GET /available_actions`'s answer. */
export const WebshopAvailableActionsSchema = z.object({
  has_search_bar: z.boolean(),
  clickables: z.array(z.string()),
});
export type WebshopAvailableActionsAnswer = z.infer<typeof WebshopAvailableActionsSchema>;

/** `GET /state`'s answer. */
export const WebshopStateSchema = z.object({
  url: z.string(),
  html: z.string(),
  instruction_text: z.string(),
});
export type WebshopStateAnswer = z.infer<typeof WebshopStateSchema>;

/** The server answered with an error status (FastAPI: 500 on an exception, 422 on a bad body). */
export class WebshopServerAnswerError extends EnvironmentError {
  readonly status: number;
  readonly url: string;
  constructor(message: string, options: { status: number; url: string }) {
    super(message);
    this.status = options.status;
    this.url = options.url;
  }
}

/** The request got no answer: refused, reset, dropped or timed out. */
export class WebshopConnectionError extends EnvironmentError {
  readonly url: string;
  readonly timedOut: boolean;
  /** The connection was refused, so the server never saw the request. */
  readonly refused: boolean;
  constructor(
    message: string,
    options: { url: string; timedOut: boolean; refused: boolean; cause: unknown },
  ) {
    super(message, { cause: options.cause });
    this.url = options.url;
    this.timedOut = options.timedOut;
    this.refused = options.refused;
  }
}

/** How often and how long to retry. */
export interface WebshopRetryPolicy {
  retries: number;
  retryDelayMs: number;
}

type Retry = 'safe' | 'refused-only';

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  return cause?.code;
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

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Client of one AgentGym-protocol WebShop server at `baseUrl`. */
export class WebshopProtocolClient {
  constructor(
    readonly baseUrl: string,
    private readonly timeoutMs: number,
    private readonly retryPolicy: WebshopRetryPolicy = { retries: 2, retryDelayMs: 250 },
  ) {}

  private async once<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    body: unknown,
  ): Promise<z.output<S>> {
    const url = new URL(path, this.baseUrl).toString();
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method,
        signal: AbortSignal.timeout(this.timeoutMs),
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      text = await response.text();
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      const refused = causeCode(error) === 'ECONNREFUSED';
      throw new WebshopConnectionError(
        timedOut
          ? `WebShop server ${method} ${url} did not answer within ${this.timeoutMs} ms (raise requestTimeoutMs if searches on the full catalogue are just slow).`
          : `WebShop server ${method} ${url} failed: ${describeCause(error)}. Is the WebShop server running at ${this.baseUrl}?`,
        { url, timedOut, refused, cause: error },
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      if (!response.ok) {
        throw new WebshopServerAnswerError(
          `WebShop server ${method} ${url} answered ${response.status}: ${text.slice(0, 300) || '(empty body)'}`,
          { status: response.status, url },
        );
      }
      throw new WebshopServerAnswerError(
        `WebShop server ${method} ${url} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
        { status: response.status, url },
      );
    }
    if (!response.ok) {
      const detail = (value as { detail?: unknown } | null)?.detail;
      throw new WebshopServerAnswerError(
        `WebShop server ${method} ${url} answered ${response.status}: ${
          detail === undefined ? text.slice(0, 300) : JSON.stringify(detail).slice(0, 300)
        }`,
        { status: response.status, url },
      );
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new WebshopServerAnswerError(
        `WebShop server ${method} ${url} answered a body that breaks the AgentGym WebShop protocol (${issue?.path.join('.') || '(root)'}: ${issue?.message}): ${text.slice(0, 200)}. Is ${this.baseUrl} an AgentGym WebShop server?`,
        { status: response.status, url },
      );
    }
    return parsed.data;
  }

  private async request<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    body: unknown = undefined,
    retry: Retry = 'safe',
  ): Promise<z.output<S>> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.once(method, path, schema, body);
      } catch (error) {
        const retriable =
          error instanceof WebshopConnectionError
            ? retry === 'safe' || error.refused
            : error instanceof WebshopServerAnswerError &&
              retry === 'safe' &&
              [502, 503, 504].includes(error.status);
        if (!retriable || attempt >= this.retryPolicy.retries) throw error;
        const delay = this.retryPolicy.retryDelayMs * 2 ** attempt;
        await sleep(delay * (0.5 + Math.random() / 2));
      }
    }
  }

  /** `GET /`: `"ok"` when the server is up. */
  async health(): Promise<void> {
    await this.request('GET', '/', z.literal('ok'));
  }

  /** `GET /list_envs`: the open environment ids. */
  listEnvironments(): Promise<number[]> {
    return this.request('GET', '/list_envs', z.array(z.number().int()));
  }

  /** `POST /create`: a new environment id. Not retried (a retry could open two). */
  create(): Promise<number> {
    return this.request('POST', '/create', z.number().int(), undefined, 'refused-only');
  }

  /** `POST /reset`: starts goal `sessionId` (the server's goal index); the start page. */
  async reset(environment: number, sessionId: number): Promise<string> {
    const [observation] = await this.request('POST', '/reset', z.tuple([z.string(), z.null()]), {
      env_idx: environment,
      session_id: sessionId,
    });
    return observation;
  }

  /** `POST /step`. Retried only when the connection was refused. */
  step(environment: number, action: string): Promise<WebshopStepAnswer> {
    return this.request(
      'POST',
      '/step',
      WebshopStepAnswerSchema,
      { env_idx: environment, action },
      'refused-only',
    );
  }

  /** `GET /available_actions`. */
  availableActions(environment: number): Promise<WebshopAvailableActionsAnswer> {
    return this.request(
      'GET',
      `/available_actions?env_idx=${environment}`,
      WebshopAvailableActionsSchema,
    );
  }

  /** `GET /observation`: the current page in the server's observation mode. */
  observation(environment: number): Promise<string> {
    return this.request('GET', `/observation?env_idx=${environment}`, z.string());
  }

  /** `GET /instruction_text`. */
  instructionText(environment: number): Promise<string> {
    return this.request('GET', `/instruction_text?env_idx=${environment}`, z.string());
  }

  /** `GET /state`: URL, HTML and instruction of the current page. */
  state(environment: number): Promise<WebshopStateAnswer> {
    return this.request('GET', `/state?env_idx=${environment}`, WebshopStateSchema);
  }

  /** `POST /close`. */
  async close(environment: number): Promise<boolean> {
    return (
      await this.request('POST', '/close', z.object({ closed: z.boolean() }), {
        env_idx: environment,
      })
    ).closed;
  }
}
