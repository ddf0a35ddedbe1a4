/**
 * Test support: where the WebArena-Lite data lives for this package's tests. Not exported.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * `$DREAMGYM_DATA_DIR/webarena-lite`, checked to exist.
 *
 * @throws Error saying what to set when the variable is unset or the file is missing: tests
 * that need the data fail, never skip.
 */
export function webarenaDataDirectory(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (root === undefined || root.trim() === '') {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set. Set it to the shared data directory (e.g. DREAMGYM_DATA_DIR=../shared/data) so that $DREAMGYM_DATA_DIR/webarena-lite holds test_webarena_lite.raw.json.',
    );
  }
  const directory = resolve(join(root, 'webarena-lite'));
  if (!existsSync(join(directory, 'test_webarena_lite.raw.json'))) {
    throw new Error(
      `${directory}/test_webarena_lite.raw.json does not exist: DREAMGYM_DATA_DIR=${root} does not hold the WebArena-Lite data.`,
    );
  }
  return directory;
}
