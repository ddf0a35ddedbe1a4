/**
 * Downloads the WebShop data files the loaders read, for users with internet access, from
 * AgentGym's copy of WebShop (the same files as `$DREAMGYM_DATA_DIR/webshop` here). Not run
 * in this repository's tests (they read $DREAMGYM_DATA_DIR), apart from its error paths.
 */
import { mkdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, EnvironmentError, parseOptions } from '@dreamgym/core';
import { writeFileAtomic } from '@dreamgym/core/internal';
import { z } from 'zod';

/** Where the files come from: AgentGym's `agentenv-webshop/webshop` folder. */
export const WEBSHOP_DATA_BASE_URL =
  'https://raw.githubusercontent.com/WooooDyy/AgentGym/main/agentenv-webshop/webshop';

/** The recorded human sessions AgentGym ships (`all_trajs/`). */
export const WEBSHOP_SESSION_NAMES: readonly string[] = [
  '20220427_1_6',
  '20220427_1_7',
  '20220427_1_12',
  '20220427_1_13',
  '20220427_1_15',
  '20220427_1_17',
  '20220427_1_18',
  '20220427_1_21',
  '20220427_1_23',
];

/** Local path -> path under the base URL. */
export function webshopDataFiles(): Array<{ file: string; source: string }> {
  return [
    { file: 'human_goals.json', source: 'baseline_models/data/human_goals.json' },
    { file: 'goal_query_map.json', source: 'baseline_models/data/goal_query_map.json' },
    { file: 'items_ins_v2_1000.json', source: 'data/items_ins_v2_1000.json' },
    ...WEBSHOP_SESSION_NAMES.map((name) => ({
      file: `mturk_sessions/${name}.jsonl`,
      source: `all_trajs/${name}.jsonl`,
    })),
  ];
}

/** Options of {@link downloadWebshopData}. */
export const WebshopDownloadOptionsSchema = z.object({
  /** Base URL the file paths are appended to. Default {@link WEBSHOP_DATA_BASE_URL}. */
  baseUrl: z.url().default(WEBSHOP_DATA_BASE_URL),
  /** Cancels the download. */
  signal: z.instanceof(AbortSignal).optional(),
});
export type WebshopDownloadOptions = z.input<typeof WebshopDownloadOptionsSchema>;

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Fetches `human_goals.json`, `goal_query_map.json`, `items_ins_v2_1000.json` and
 * `mturk_sessions/*.jsonl` into `dir`; files already there are kept. Each file is written
 * whole or not at all.
 *
 * @throws ConfigError on an empty `dir` or a bad option.
 * @throws EnvironmentError naming the URL when a download fails.
 */
export async function downloadWebshopData(
  dir: string,
  options: WebshopDownloadOptions = {},
): Promise<void> {
  if (typeof dir !== 'string' || dir.trim() === '') {
    throw new ConfigError('downloadWebshopData needs the directory to download into.', {
      field: 'dir',
    });
  }
  const parsedOptions = parseOptions(WebshopDownloadOptionsSchema, options, 'downloadWebshopData');
  const { baseUrl, signal } = parsedOptions;
  const target = resolve(dir);
  for (const { file, source } of webshopDataFiles()) {
    const destination = join(target, file);
    if (await exists(destination)) continue;
    const url = `${baseUrl.replace(/\/$/, '')}/${source}`;
    let response: Response;
    try {
      response = await fetch(url, signal === undefined ? {} : { signal });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new EnvironmentError(
        `Could not download WebShop's ${file} from ${url}: ${(error as Error).message}${cause ? ` (${cause})` : ''}. Check the internet connection (or proxy), or copy the data into ${target} by hand.`,
        { cause: error },
      );
    }
    if (!response.ok) {
      throw new EnvironmentError(
        `Downloading WebShop's ${file} from ${url} failed with HTTP ${response.status}. Try again later, or copy the data into ${target} by hand.`,
      );
    }
    const body = new Uint8Array(await response.arrayBuffer());
    await mkdir(dirname(destination), { recursive: true });
    await writeFileAtomic(destination, body);
  }
}
