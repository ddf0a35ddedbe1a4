/**
 * One vitest config for the whole repository: a project per workspace package, each
 * testing its TypeScript sources (`src/`) directly, with `@dreamgym/*` imports resolved to
 * the sources too, plus the repository-level project in `tests/` (packaging, release).
 */
import { defineConfig } from 'vitest/config';
import { workspacePackages } from './packages/test-support/src/workspace-sources.js';

const root = import.meta.dirname;
const packages = workspacePackages(root);

/**
 * Packages whose test files share one process per worker instead of a fresh one each: library
 * code tested without servers, child processes or global state left behind (each passes in any
 * file order, `--sequence.shuffle.files`). Starting a process and importing the sources again
 * for each of core's 74 files took half its test time (71 s against 37 s).
 */
const sharedProcess = new Set(['@dreamgym/core', '@dreamgym/webarena-lite', '@dreamgym/webshop']);

/** `@dreamgym/core` -> packages/core/src/index.ts, `@dreamgym/core/testing` -> src/testing/index.ts. */
const sourceAliases = packages.flatMap(({ entries }) =>
  entries.map(({ specifier, source }) => ({
    find: new RegExp(`^${specifier.replace(/[/.]/g, '\\$&')}$`),
    replacement: source,
  })),
);

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: {
    // Two test files at a time on the 2-core CI machine (vitest's default would be one):
    // most files spend their time waiting on servers, browsers and model workers.
    maxWorkers: 2,
    projects: [
      ...packages.map(({ name, directory }) => ({
        resolve: { alias: sourceAliases },
        test: {
          name,
          root: directory,
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          testTimeout: 30_000,
          isolate: !sharedProcess.has(name),
        },
      })),
      {
        resolve: { alias: sourceAliases },
        test: {
          name: 'repository',
          root,
          include: ['tests/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
