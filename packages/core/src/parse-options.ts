/**
 * Option validation at a public boundary: zod schema in, typed options out, and on bad input a
 * `ConfigError` that names the field (`Invalid ALFWorld adapter option \`real.maxSteps\`: ...`).
 */
import type { z } from 'zod';
import { ConfigError } from './errors.js';

/**
 * Validates `input` against `schema`. On failure throws a `ConfigError` whose message names
 * `what` the options belong to and the first bad field, with `fieldPrefix` (e.g. `real`)
 * before the field's path; the error's `field` is that dotted path.
 */
export function parseOptions<S extends z.ZodType>(
  schema: S,
  input: unknown,
  what: string,
  fieldPrefix = '',
): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = [fieldPrefix, ...(issue?.path.map(String) ?? [])].filter(Boolean).join('.');
  throw new ConfigError(
    field
      ? `Invalid ${what} option \`${field}\`: ${issue?.message ?? 'invalid'}`
      : `Invalid ${what} options: ${issue?.message ?? 'invalid'}`,
    { field: field || undefined, cause: parsed.error },
  );
}
