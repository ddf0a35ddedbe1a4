/**
 * Option validation with errors that name the field (`ConfigError`, field `real.sites.gitlab`).
 */
import { ConfigError } from '@dreamgym/core';
import type { z } from 'zod';

/** Validates `options`, throwing a `ConfigError` whose field starts with `prefix`. */
export function parseOptionsOrThrow<S extends z.ZodType>(
  schema: S,
  options: unknown,
  prefix: string,
): z.output<S> {
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = [prefix, ...issue.path.map(String)].filter(Boolean).join('.');
  throw new ConfigError(`Invalid WebArena-Lite option \`${field}\`: ${issue.message}`, {
    field,
    cause: parsed.error,
  });
}
