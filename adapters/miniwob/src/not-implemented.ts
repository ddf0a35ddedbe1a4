/**
 * The stubs' error: every part `dreamgym new adapter` wrote as a stub throws it, naming the
 * part, the file to edit, what to write there, and the step of docs/adding-a-benchmark.md
 * that explains it. Delete this file once no stub is left.
 */
import { NotImplementedError } from '@dreamgym/core';

/** The error a stub throws. */
export function notImplemented(
  part: string,
  file: string,
  what: string,
  step: number,
): NotImplementedError {
  return new NotImplementedError(
    `@dreamgym/miniwob: ${part} is not implemented yet. In adapters/miniwob/${file}: ${what} (docs/adding-a-benchmark.md, step ${step}).`,
    { part, file: `adapters/miniwob/${file}` },
  );
}
