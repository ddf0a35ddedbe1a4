/**
 * Downloads ALFWorld's official game files for users with internet access. Not run in
 * this repository's tests (they read $DREAMGYM_DATA_DIR), apart from its error paths.
 */
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { promisify } from 'node:util';
import { ConfigError, EnvironmentError, parseOptions } from '@dreamgym/core';
import { z } from 'zod';
import { ALFWORLD_SPLITS } from '../task-types.js';

/**
 * The TextWorld game files (`game.tw-pddl` of every train, valid_seen and valid_unseen
 * game), as ALFWorld's own `alfworld-download` script fetches them
 * (`TW_PDDL_FILES_URL` in `scripts/alfworld-download`). The same script also fetches
 * `https://aka.ms/alfworld/json_2.1.1_json.zip` (ALFRED trajectory JSON) and
 * `https://aka.ms/alfworld/json_2.1.1_pddl.zip` (PDDL problems), which this adapter
 * does not need.
 */
export const ALFWORLD_GAME_FILES_URL = 'https://aka.ms/alfworld/json_2.1.1_tw-pddl.zip';

/** Options of {@link downloadAlfworldData}. */
export const AlfworldDownloadOptionsSchema = z.object({
  /** Where to fetch the game-file archive from. Default {@link ALFWORLD_GAME_FILES_URL}. */
  url: z.url().default(ALFWORLD_GAME_FILES_URL),
  /** Cancels the download. */
  signal: z.instanceof(AbortSignal).optional(),
});
/** Options of {@link downloadAlfworldData}, as accepted. */
export type AlfworldDownloadOptions = z.input<typeof AlfworldDownloadOptionsSchema>;

const run = promisify(execFile);

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Fetches ALFWorld's game files into `dir`, laid out as the loaders read them:
 * `dir/train/<task>/<trial>/game.tw-pddl`, and likewise `valid_seen` and
 * `valid_unseen`. Splits already present in `dir` are left alone. Needs the `unzip`
 * command. The expert trajectories (`expert_trajectories.jsonl`) are not part of
 * ALFWorld's download; see the package README for where they come from.
 *
 * @throws ConfigError on an empty `dir` or a bad option.
 * @throws EnvironmentError naming the URL when the download or the extraction fails.
 */
export async function downloadAlfworldData(
  dir: string,
  options: AlfworldDownloadOptions = {},
): Promise<void> {
  if (typeof dir !== 'string' || dir.trim() === '') {
    throw new ConfigError('downloadAlfworldData needs the directory to download into.', {
      field: 'dir',
    });
  }
  const parsedOptions = parseOptions(
    AlfworldDownloadOptionsSchema,
    options,
    'downloadAlfworldData',
  );
  const { url, signal } = parsedOptions;
  const target = resolve(dir);
  await mkdir(target, { recursive: true });
  const work = await mkdtemp(join(target, '.download-'));
  try {
    const archive = join(work, 'game-files.zip');
    let response: Response;
    try {
      response = await fetch(url, signal === undefined ? {} : { signal });
    } catch (error) {
      throw new EnvironmentError(
        `Could not download the ALFWorld game files from ${url}: ${(error as Error).message}${describeCause(error)}. Check the internet connection (or proxy), or copy the data into ${target} by hand.`,
        { cause: error },
      );
    }
    if (!response.ok || response.body === null) {
      throw new EnvironmentError(
        `Downloading the ALFWorld game files from ${url} failed with HTTP ${response.status}. Try again later, or copy the data into ${target} by hand.`,
      );
    }
    await pipeline(
      Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
      createWriteStream(archive),
    );
    try {
      await run('unzip', ['-q', archive, '-d', work]);
    } catch (error) {
      throw new EnvironmentError(
        `Could not extract ${archive} (downloaded from ${url}) with \`unzip\`: ${(error as Error).message}. Install unzip and try again.`,
        { cause: error },
      );
    }
    // The archive holds json_2.1.1/<split>/...; move each split to dir/<split>.
    const roots = (await readdir(work, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(work, entry.name));
    for (const split of ALFWORLD_SPLITS) {
      const destination = join(target, split);
      if (await exists(destination)) continue;
      for (const root of roots) {
        if (await exists(join(root, split))) {
          await rename(join(root, split), destination);
          break;
        }
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ? ` (${cause.code})` : cause?.message ? ` (${cause.message})` : '';
}
