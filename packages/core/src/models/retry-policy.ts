/**
 * When to retry a model-server request and how long to wait first: jittered exponential
 * backoff, or the server's own `Retry-After` when it sent one. Pure functions, so the
 * numbers can be checked by hand.
 */

/** HTTP statuses worth retrying: request timeout, conflict, rate limit, and server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait a server asked for, in milliseconds, from `retry-after-ms` (OpenAI's extension)
 * or `Retry-After` (delta-seconds or an HTTP date, RFC 9110 §10.2.3); `undefined` when
 * there is none or it cannot be read. Dates in the past give 0.
 */
export function parseRetryAfter(
  headers: { get(name: string): string | null },
  nowMs: number,
): number | undefined {
  const milliseconds = headers.get('retry-after-ms');
  if (milliseconds !== null && /^\s*\d+(\.\d+)?\s*$/.test(milliseconds)) {
    return Number(milliseconds);
  }
  const value = headers.get('retry-after')?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  // HTTP dates name the weekday and month; without letters, Date.parse would read "-1" as a year.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** Backoff settings, in milliseconds. */
export interface BackoffSettings {
  /** Wait before the first retry, before jitter. */
  baseDelayMs: number;
  /** Upper bound of any computed backoff. */
  maxDelayMs: number;
  /** Upper bound of a server-requested `Retry-After` wait. */
  maxRetryAfterMs: number;
}

/**
 * Exponential backoff with "equal jitter": the ceiling `min(maxDelayMs, baseDelayMs * 2^retry)`
 * is halved and the other half drawn uniformly, so waits never collapse to zero yet
 * concurrent clients spread out. `retry` is 0 for the first retry; `unit` is uniform in [0, 1).
 */
export function backoffDelay(retry: number, settings: BackoffSettings, unit: number): number {
  const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** retry);
  return ceiling / 2 + (unit * ceiling) / 2;
}

/**
 * The wait before retry number `retry`: the server's `Retry-After` (capped at
 * `maxRetryAfterMs`) when given, else {@link backoffDelay}.
 */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  settings: BackoffSettings,
  unit: number,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, settings.maxRetryAfterMs);
  return backoffDelay(retry, settings, unit);
}
