/**
 * Files this package ships beside its code (`templates/`, `setup/`), found from the source tree
 * (tests) or from `dist/` (an install).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@dreamgym/core';

/** The absolute path of `relative` (e.g. `setup/faiss-node.sh`) in this package. */
export function shippedFile(relative: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let directory = here; ; directory = dirname(directory)) {
    const candidate = join(directory, relative);
    if (existsSync(candidate)) return candidate;
    if (dirname(directory) === directory) break;
  }
  throw new ConfigError(
    `${relative} was not found above ${here}: the @dreamgym/cli install is incomplete (the package ships ${relative.split('/')[0]}/).`,
  );
}
