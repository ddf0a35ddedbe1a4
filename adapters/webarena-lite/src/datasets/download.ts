/**
 * Fetching WebArena-Lite's public config file for users with internet access.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DatasetNotFoundError } from '@dreamgym/core';
import { writeFileAtomic } from '@dreamgym/core/internal';
import { parseJsonWithLines } from '../config/json-with-lines.js';
import { WEBARENA_LITE_CONFIG_FILE } from './task-configs.js';

/** Where VisualAgentBench publishes the 165 WebArena-Lite configs (Apache-2.0). */
export const WEBARENA_LITE_CONFIG_URL =
  'https://raw.githubusercontent.com/THUDM/VisualAgentBench/main/VAB-WebArena-Lite/new/test_webarena_lite.raw.json';

/**
 * Downloads `test_webarena_lite.raw.json` into `dir` (created if needed), after checking that
 * it parses.
 *
 * @throws DatasetNotFoundError when the download fails.
 */
export async function downloadWebarenaLiteData(
  dir: string,
  options: { signal?: AbortSignal; url?: string } = {},
): Promise<void> {
  const url = options.url ?? WEBARENA_LITE_CONFIG_URL;
  let text: string;
  try {
    const response = await fetch(url, options.signal ? { signal: options.signal } : {});
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    text = await response.text();
  } catch (error) {
    throw new DatasetNotFoundError(
      `Could not download the WebArena-Lite configs from ${url}: ${(error as Error).message}`,
      {
        path: url,
        cause: error,
      },
    );
  }
  parseJsonWithLines(text, url);
  await mkdir(dir, { recursive: true });
  // Whole or not at all: an interrupted download must not leave a truncated config behind.
  await writeFileAtomic(join(dir, WEBARENA_LITE_CONFIG_FILE), text);
}
