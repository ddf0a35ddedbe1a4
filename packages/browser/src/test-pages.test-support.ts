/**
 * Test support: the pages written for this package's tests (`src/__fixtures__/pages/`),
 * served on 127.0.0.1, and tasks that start on them. Not exported from the package.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Task } from '@dreamgym/core';
import { type StaticServer, serveDirectory } from './static-server.js';

/** The directory of the test pages. */
export const TEST_PAGES_DIRECTORY = join(
  dirname(fileURLToPath(import.meta.url)),
  '__fixtures__',
  'pages',
);

/** Serves the test pages on a free port of 127.0.0.1. */
export function serveTestPages(): Promise<StaticServer> {
  return serveDirectory(TEST_PAGES_DIRECTORY);
}

/** A task that starts on test page `file` (several files open one tab each). */
export function pageTask(
  server: StaticServer,
  file: string | string[],
  instruction = 'Explore the page.',
): Task {
  const files = Array.isArray(file) ? file : [file];
  return {
    id: `test:${files.join('+')}`,
    domain: 'web-test',
    instruction,
    origin: 'seed',
    meta: { startUrl: files.map((name) => `${server.url}${name}`).join(' |AND| ') },
  };
}
