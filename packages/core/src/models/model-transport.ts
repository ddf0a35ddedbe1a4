/**
 * The HTTP side shared by the OpenAI-compatible clients: one `openai` SDK client with its
 * own retries switched off, and our retry loop around it (so every attempt is counted
 * exactly), a per-attempt timeout covering the whole body, a concurrency limit, and errors
 * that name the URL and never the API key.
 */
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type { z } from 'zod';
import { ModelError } from '../errors.js';
import { SeededRandom } from '../random/seeded-random.js';
import type { OpenAICompatibleClientOptionsSchema } from './openai-compatible-options.js';
import { isRetryableStatus, parseRetryAfter, retryDelay } from './retry-policy.js';
import { Semaphore } from './semaphore.js';

/** Sent as the key to servers that need none: the SDK insists on some key. */
export const PLACEHOLDER_API_KEY = 'dreamgym-no-key';

/** Parsed client options, as the transport needs them. */
export type TransportOptions = z.output<typeof OpenAICompatibleClientOptionsSchema>;

/** What a client may inject instead of the process's globals. */
export interface ModelClientDependencies {
  /**
   * Source of retry jitter. Default: a generator seeded from the clock and process id, as
   * jitter exists to keep separate processes from retrying in lockstep; it never affects
   * results.
   */
  random?: SeededRandom;
  /** Environment to read `DREAMGYM_API_KEY` / `OPENAI_API_KEY` from. Default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** The API key to use: the option, else `DREAMGYM_API_KEY`, else `OPENAI_API_KEY`, else none. */
export function resolveApiKey(
  apiKey: string | undefined,
  env: Record<string, string | undefined>,
): string | undefined {
  const candidates = [apiKey, env.DREAMGYM_API_KEY, env.OPENAI_API_KEY];
  return candidates.find((value) => value !== undefined && value.trim() !== '');
}

/** A failure of one attempt, classified. */
export interface AttemptFailure {
  retryable: boolean;
  /** HTTP status, when the server answered. */
  status?: number;
  /** What went wrong, from the server's error body where there was one. */
  message: string;
  /** The server's `Retry-After`, in milliseconds. */
  retryAfterMs?: number;
  /** `true` when the attempt ran past `timeoutMs`. */
  timedOut?: boolean;
  cause: unknown;
}

/** The response body was not what the API promises (not JSON, wrong shape). Retryable. */
export class MalformedResponseError extends Error {
  constructor(
    message: string,
    readonly body: string,
  ) {
    super(message);
    this.name = 'MalformedResponseError';
  }
}

class AttemptTimeout extends Error {
  constructor(ms: number) {
    super(`no complete response within timeoutMs=${ms} ms`);
    this.name = 'AttemptTimeout';
  }
}

/** Starts one attempt: an SDK call with these request options, ending in `.asResponse()`. */
export type SendAttempt = (requestOptions: {
  signal: AbortSignal;
  timeout: number;
  maxRetries: 0;
}) => Promise<Response>;

/** The first 200 characters of `text` on one line, for error messages. */
export function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}...` : flat;
}

/**
 * Parses a response body with `schema`, throwing {@link MalformedResponseError} (which is
 * retried) when it is not JSON or not `what` the endpoint promises.
 */
export function decodeResponseBody<S extends z.ZodType>(
  text: string,
  schema: S,
  what: string,
): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new MalformedResponseError(`the response body is not JSON: "${preview(text)}"`, text);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new MalformedResponseError(
      `the response is not ${what} (field \`${issue?.path.join('.')}\`: ${issue?.message})`,
      text,
    );
  }
  return parsed.data;
}

/** Options of one logical call. */
export interface CallControl {
  /** Cancels the call and its retries; rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Turns a non-retryable HTTP failure into a plain `ModelError` at once, even for
   * statuses that are normally retried (llama.cpp answers an unsupported
   * `response_format` with a 500).
   */
  isFatal?: (failure: AttemptFailure) => boolean;
}

/** Counters of a transport. */
export interface TransportCounters {
  /** HTTP attempts sent. */
  attempts: number;
  /** Attempts that were retried. */
  retries: number;
}

/**
 * Servers differ in how they lay out error bodies (vLLM puts `message` at the top level);
 * the SDK only reads OpenAI's `{"error": {...}}`, so rewrite the others into it before
 * the SDK sees them, keeping the server's message in our errors.
 */
async function normalisingFetch(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const response = await fetch(input, init);
  if (response.ok) return response;
  const text = await response.text();
  let body = text;
  try {
    const parsed: unknown = JSON.parse(text);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      !('error' in parsed) &&
      'message' in parsed
    ) {
      body = JSON.stringify({ error: parsed });
    } else if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as { error?: unknown }).error === 'string'
    ) {
      // llama.cpp and some proxies send {"error": "message"}.
      body = JSON.stringify({ error: { message: (parsed as { error: string }).error } });
    }
  } catch {
    // Not JSON: the SDK uses the text as the message.
  }
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Replaces every occurrence of `secret` in `text`. */
export function redact(text: string, secret: string | undefined): string {
  if (secret === undefined || secret.length < 4) return text;
  return text.split(secret).join('[redacted]');
}

/** The shared HTTP machinery of one OpenAI-compatible client. */
export class ModelTransport {
  readonly client: OpenAI;
  readonly baseURL: string;
  private readonly semaphore: Semaphore;
  private readonly random: SeededRandom;
  private readonly apiKey: string | undefined;
  private readonly counters: TransportCounters = { attempts: 0, retries: 0 };

  constructor(
    readonly options: TransportOptions,
    dependencies: ModelClientDependencies = {},
  ) {
    this.baseURL = options.baseURL.replace(/\/+$/, '');
    this.apiKey = resolveApiKey(options.apiKey, dependencies.env ?? process.env);
    this.random = dependencies.random ?? new SeededRandom((Date.now() ^ (process.pid << 16)) >>> 0);
    this.semaphore = new Semaphore(options.concurrency);
    this.client = new OpenAI({
      baseURL: this.baseURL,
      apiKey: this.apiKey ?? PLACEHOLDER_API_KEY,
      // Our loop retries, so the SDK must not, or attempts would be counted wrongly.
      maxRetries: 0,
      // The per-attempt timeout is ours (it also covers reading the body); this is a backstop.
      timeout: options.timeoutMs * 2 + 1_000,
      // OPENAI_ORG_ID / OPENAI_PROJECT_ID belong to OpenAI; never send them to other servers.
      organization: null,
      project: null,
      logLevel: 'off',
      defaultHeaders: options.headers,
      fetch: normalisingFetch,
    });
  }

  /** Attempts and retries so far. */
  counts(): TransportCounters {
    return { ...this.counters };
  }

  /**
   * Runs one logical request: `send` starts an attempt (an SDK call ending in
   * `.asResponse()`), `decode` turns the body text into the result (throwing
   * {@link MalformedResponseError} for a body that is not what the API promises).
   * Retries as configured; throws `ModelError` when attempts run out or the failure is
   * not retryable, or the signal's reason when `control.signal` aborts.
   */
  async call<T>(
    endpoint: string,
    send: SendAttempt,
    decode: (text: string) => T,
    control: CallControl = {},
  ): Promise<T> {
    const url = `${this.baseURL}${endpoint}`;
    const settings = {
      baseDelayMs: this.options.retryBaseDelayMs,
      maxDelayMs: this.options.retryMaxDelayMs,
      maxRetryAfterMs: this.options.maxRetryAfterMs,
    };
    for (let attempt = 0; ; attempt += 1) {
      const release = await this.semaphore.acquire(control.signal);
      let failure: AttemptFailure;
      try {
        return await this.attempt(send, decode, control.signal);
      } catch (error) {
        if (control.signal?.aborted) throw control.signal.reason;
        failure = error as AttemptFailure;
      } finally {
        release();
      }
      const fatal = control.isFatal?.(failure) === true;
      if (fatal || !failure.retryable || attempt >= this.options.maxRetries) {
        throw this.toModelError(url, failure, attempt + 1);
      }
      await sleep(
        retryDelay(attempt, failure.retryAfterMs, settings, this.random.float()),
        control.signal,
      );
      // Counted once the wait is over, so a call aborted while waiting adds no phantom retry.
      this.counters.retries += 1;
    }
  }

  private async attempt<T>(
    send: SendAttempt,
    decode: (text: string) => T,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new AttemptTimeout(this.options.timeoutMs)),
      this.options.timeoutMs,
    );
    const combined = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
    try {
      this.counters.attempts += 1;
      const response = await send({
        signal: combined,
        timeout: this.options.timeoutMs * 2 + 1_000,
        maxRetries: 0,
      });
      const text = await response.text();
      return decode(text);
    } catch (error) {
      throw this.classify(error, timeout.signal.aborted);
    } finally {
      clearTimeout(timer);
    }
  }

  private classify(error: unknown, timedOut: boolean): AttemptFailure {
    if (timedOut) {
      return {
        retryable: true,
        timedOut: true,
        message: `timed out: no complete response within ${this.options.timeoutMs} ms`,
        cause: error,
      };
    }
    if (error instanceof MalformedResponseError) {
      return { retryable: true, message: error.message, cause: error };
    }
    if (
      error instanceof APIError &&
      !(error instanceof APIConnectionError) &&
      !(error instanceof APIUserAbortError) &&
      error.status !== undefined
    ) {
      const serverMessage = (error.error as { message?: unknown } | undefined)?.message;
      const message =
        typeof serverMessage === 'string' && serverMessage !== ''
          ? `HTTP ${error.status}: ${serverMessage}`
          : error.message.startsWith(String(error.status))
            ? `HTTP ${error.message}`
            : `HTTP ${error.status}: ${error.message}`;
      const retryAfterMs = error.headers ? parseRetryAfter(error.headers, Date.now()) : undefined;
      return {
        retryable: isRetryableStatus(error.status),
        status: error.status,
        message,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        cause: error,
      };
    }
    // Connection refused or reset, a socket closed mid-body, a DNS failure: all transient.
    const cause =
      error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
    const text = error instanceof Error ? error.message : String(error);
    return { retryable: true, message: `connection failed (${text}${cause})`, cause: error };
  }

  private toModelError(url: string, failure: AttemptFailure, attempts: number): ModelError {
    const hint =
      failure.status === 401 || failure.status === 403
        ? ' Check the API key: the `apiKey` option, or the DREAMGYM_API_KEY / OPENAI_API_KEY environment variable.'
        : failure.status === 404
          ? ' Check `baseURL` (it usually ends in /v1) and `model` (the name the server serves).'
          : failure.timedOut
            ? ' Raise `timeoutMs`, lower `concurrency`, or check the server load.'
            : failure.status === undefined && !(failure.cause instanceof MalformedResponseError)
              ? ' Is the server running and reachable at `baseURL`?'
              : '';
    const message = `POST ${url} failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${failure.message}.${hint}`;
    return new ModelError(redact(message, this.apiKey), {
      ...(failure.status === undefined ? {} : { status: failure.status }),
      url,
      cause: failure.cause,
    });
  }
}
