/** What the run package's tests share: the shared benchmark data folder. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The shared data folder (`DREAMGYM_DATA_DIR`, holding `alfworld/`); a clear error without it. */
export function dataRoot(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (!root || !existsSync(join(root, 'alfworld'))) {
    throw new Error(
      'Set DREAMGYM_DATA_DIR to the shared data folder (it must hold alfworld/); CI uses ../shared/data.',
    );
  }
  return resolve(root);
}
