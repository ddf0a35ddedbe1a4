/**
 * Test support: where the ALFWorld data lives for this package's tests. Not exported
 * from the package.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * `$DREAMGYM_DATA_DIR/alfworld`, checked to exist.
 *
 * @throws Error saying what to set when the variable is unset or the directory is missing:
 * tests that need the data fail, never skip.
 */
export function alfworldDataDirectory(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (root === undefined || root.trim() === '') {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set. Set it to the shared data directory (e.g. DREAMGYM_DATA_DIR=../shared/data) so that $DREAMGYM_DATA_DIR/alfworld holds expert_trajectories.jsonl, train/, valid_seen/ and valid_unseen/.',
    );
  }
  const directory = resolve(join(root, 'alfworld'));
  if (!existsSync(join(directory, 'expert_trajectories.jsonl'))) {
    throw new Error(
      `${directory}/expert_trajectories.jsonl does not exist: DREAMGYM_DATA_DIR=${root} does not hold the ALFWorld data.`,
    );
  }
  return directory;
}
