/**
 * Test support: where the WebShop data lives for this package's tests. Not exported from
 * the package.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * `$DREAMGYM_DATA_DIR/webshop`, checked to exist.
 *
 * @throws Error saying what to set when the variable is unset or the data is missing:
 * tests that need the data fail, never skip.
 */
export function webshopDataDirectory(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (root === undefined || root.trim() === '') {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set. Set it to the shared data directory (e.g. DREAMGYM_DATA_DIR=../shared/data) so that $DREAMGYM_DATA_DIR/webshop holds human_goals.json, goal_query_map.json, items_ins_v2_1000.json and mturk_sessions/.',
    );
  }
  const directory = resolve(join(root, 'webshop'));
  if (!existsSync(join(directory, 'human_goals.json'))) {
    throw new Error(
      `${directory}/human_goals.json does not exist: DREAMGYM_DATA_DIR=${root} does not hold the WebShop data.`,
    );
  }
  return directory;
}
