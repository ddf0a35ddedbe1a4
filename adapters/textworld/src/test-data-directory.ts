/**
 * Test support: a small TextWorld data directory generated on the real engine (4 training
 * games of 1 to 4 ingredients, one `valid` and one `test` game), kept in the temporary folder
 * across runs (games already there are not generated again). Not exported from the package.
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTextworldDataset, type TextworldDatasetSummary } from './datasets/build-dataset.js';

/** How long building the test dataset may take on a busy 2-core machine (cold: about 25 s). */
export const TEST_DATASET_TIMEOUT_MS = 240_000;

/** The test data directory: `$DREAMGYM_TEXTWORLD_TEST_DIR`, else `<tmp>/dreamgym-textworld-test`. */
export function textworldTestDirectory(): string {
  return process.env.DREAMGYM_TEXTWORLD_TEST_DIR ?? join(tmpdir(), 'dreamgym-textworld-test');
}

/**
 * Builds (or completes) the test data directory and returns it with the build's summary. Test
 * files running at once build it one at a time (a lock folder beside it).
 */
export async function textworldTestDataset(): Promise<{
  dir: string;
  summary: TextworldDatasetSummary;
}> {
  const dir = textworldTestDirectory();
  const lock = `${dir}.lock`;
  const deadline = Date.now() + TEST_DATASET_TIMEOUT_MS;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch {
      const held = await stat(lock).catch(() => undefined);
      // A lock older than the longest build was left by a killed run.
      if (held && Date.now() - held.mtimeMs > TEST_DATASET_TIMEOUT_MS) {
        await rm(lock, { recursive: true, force: true });
      } else if (Date.now() > deadline) {
        throw new Error(`Timed out waiting for ${lock}: another test run is building ${dir}.`);
      } else {
        await new Promise((done) => setTimeout(done, 500));
      }
    }
  }
  try {
    const summary = await buildTextworldDataset({ dir, train: 4, valid: 1, test: 1 });
    return { dir, summary };
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}
