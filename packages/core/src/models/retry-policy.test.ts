import { describe, expect, it } from 'vitest';
import { backoffDelay, isRetryableStatus, parseRetryAfter, retryDelay } from './retry-policy.js';

const headers = (entries: Record<string, string>) => new Headers(entries);
const settings = { baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 5_000 };

describe('isRetryableStatus', () => {
  it('retries 408, 409, 429 and 5xx only', () => {
    expect([408, 409, 429, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 422].some(isRetryableStatus)).toBe(false);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads delta-seconds, fractional seconds and retry-after-ms (which wins)', () => {
    expect(parseRetryAfter(headers({ 'retry-after': '3' }), now)).toBe(3_000);
    expect(parseRetryAfter(headers({ 'retry-after': '0.25' }), now)).toBe(250);
    expect(parseRetryAfter(headers({ 'retry-after': '3', 'retry-after-ms': '120' }), now)).toBe(
      120,
    );
  });
  it('reads an HTTP date relative to now, clamping past dates to 0', () => {
    expect(parseRetryAfter(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now)).toBe(
      7_000,
    );
    expect(parseRetryAfter(headers({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }), now)).toBe(
      0,
    );
  });
  it('ignores a missing or unreadable header', () => {
    expect(parseRetryAfter(headers({}), now)).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after': '-1' }), now)).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  it('doubles a half-fixed, half-jittered wait up to the cap', () => {
    // ceiling = min(1000, 100 * 2^retry): 100, 200, 400, 800, 1000
    expect(backoffDelay(0, settings, 0)).toBe(50);
    expect(backoffDelay(0, settings, 0.5)).toBe(75);
    expect(backoffDelay(1, settings, 0.5)).toBe(150);
    expect(backoffDelay(3, settings, 0.25)).toBe(400 + 100);
    expect(backoffDelay(10, settings, 0.999)).toBeCloseTo(999.5, 6);
  });
});

describe('retryDelay', () => {
  it('honours Retry-After up to its cap and falls back to backoff', () => {
    expect(retryDelay(0, 2_000, settings, 0.9)).toBe(2_000);
    expect(retryDelay(0, 60_000, settings, 0.9)).toBe(5_000);
    expect(retryDelay(2, undefined, settings, 0)).toBe(200);
  });
});
