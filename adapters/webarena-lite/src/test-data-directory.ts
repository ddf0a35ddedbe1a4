/**
 * Test support: where the WebArena-Lite data lives for this package's tests, and WebArena's
 * full 812-task `test.raw.json`. Not exported.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
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

/**
 * WebArena's 812 task configs, `test.raw.json`, where the set-up step puts it (taken from the
 * PyPI wheel `libwebarena`, sha256-checked): `$DREAMGYM_CACHE_DIR/data/webarena/test.raw.json`,
 * else under `$XDG_CACHE_HOME/dreamgym` or `~/.cache/dreamgym`.
 *
 * @throws Error saying how to fetch it when it is missing: tests that need it fail, never skip.
 */
export function webarenaFullConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env.DREAMGYM_CACHE_DIR?.trim()
    ? env.DREAMGYM_CACHE_DIR
    : join(env.XDG_CACHE_HOME?.trim() ? env.XDG_CACHE_HOME : join(homedir(), '.cache'), 'dreamgym');
  const file = resolve(cache, 'data', 'webarena', 'test.raw.json');
  if (!existsSync(file)) {
    throw new Error(
      `${file} does not exist: fetch WebArena's 812 task configs with bash scripts/setup.sh webarena (from the PyPI wheel libwebarena).`,
    );
  }
  return file;
}
