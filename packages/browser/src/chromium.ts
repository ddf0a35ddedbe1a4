/**
 * Launching Chromium for DreamGym: the system's Chromium (Debian's `/usr/bin/chromium` by
 * default) driven by `playwright-core`, never a browser build downloaded by Playwright.
 */
import { existsSync } from 'node:fs';
import { EnvironmentError, parseOptions } from '@dreamgym/core';
import { type Browser, chromium } from 'playwright-core';
import { z } from 'zod';

/** Where Chromium is looked for when no `executablePath` is given and `DREAMGYM_CHROMIUM` is unset. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Flags every launch passes: no sandbox (containers and CI run as root), no GPU, and no
 * background traffic (component updates, sync, field trials) that would make page loads and
 * timings depend on the network.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Options of {@link launchChromium}. */
export const ChromiumOptionsSchema = z.object({
  /**
   * The Chromium (or Chrome) executable. Default: `$DREAMGYM_CHROMIUM`, else
   * `/usr/bin/chromium` (Debian's `chromium` package; `apt-get install chromium`).
   */
  executablePath: z.string().min(1).optional(),
  /** Run without a window. Default true; false needs a display. */
  headless: z.boolean().default(true),
  /** Extra command-line flags, after {@link CHROMIUM_ARGS}. */
  args: z.array(z.string()).default([]),
  /** Milliseconds to wait for the browser to start. Default 60 000. */
  launchTimeoutMs: z.number().int().positive().default(60_000),
});
/** Options of {@link launchChromium}, as a caller writes them. */
export type ChromiumOptions = z.input<typeof ChromiumOptionsSchema>;

/** The executable {@link launchChromium} uses for `options`. */
export function chromiumExecutablePath(options: ChromiumOptions = {}): string {
  const fromEnvironment = process.env.DREAMGYM_CHROMIUM?.trim();
  return options.executablePath ?? (fromEnvironment || DEFAULT_CHROMIUM_PATH);
}

/**
 * Starts Chromium with {@link CHROMIUM_ARGS} and a fresh temporary profile (Playwright
 * creates one per launch and removes it on close). Playwright closes the browser when this
 * process exits, also on SIGINT, SIGTERM and SIGHUP.
 *
 * @throws EnvironmentError when the executable is missing or the browser does not start.
 * @example
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 * await browser.close();
 */
export async function launchChromium(options: ChromiumOptions = {}): Promise<Browser> {
  const parsed = parseOptions(ChromiumOptionsSchema, options, 'Chromium', 'chromium');
  const executablePath = chromiumExecutablePath(parsed);
  if (!existsSync(executablePath)) {
    throw new EnvironmentError(
      `Chromium was not found at ${executablePath}. Install Debian's chromium ('npx @dreamgym/cli doctor --only chromium' prints the apt-get command), or pass chromium.executablePath / set DREAMGYM_CHROMIUM to a Chromium or Chrome executable.`,
    );
  }
  try {
    return await chromium.launch({
      executablePath,
      headless: parsed.headless,
      args: [
        ...CHROMIUM_ARGS.filter((flag) => parsed.headless || flag !== '--headless'),
        ...parsed.args,
      ],
      timeout: parsed.launchTimeoutMs,
    });
  } catch (error) {
    throw new EnvironmentError(
      `Chromium at ${executablePath} did not start: ${(error as Error).message.split('\n')[0]}`,
      { cause: error },
    );
  }
}
