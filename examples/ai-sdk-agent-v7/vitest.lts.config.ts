/**
 * The example's own tests (`lts-test/`), run under the project's LTS Node by
 * `test/under-lts-node.test.ts`: `ai` 7 needs Node >= 22, and the repository's suite runs
 * under Node 20. `@dreamgym/*` imports resolve to the sources, as in the root config.
 */
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import { workspacePackages } from '../../packages/test-support/src/workspace-sources.js';

const root = resolve(import.meta.dirname, '../..');
const alias = workspacePackages(root).flatMap(({ entries }) =>
  entries.map(({ specifier, source }) => ({
    find: new RegExp(`^${specifier.replace(/[/.]/g, '\\$&')}$`),
    replacement: source,
  })),
);

export default defineConfig({
  resolve: { alias },
  test: {
    name: 'ai-sdk-agent-v7 (LTS Node)',
    root: import.meta.dirname,
    include: ['lts-test/**/*.test.ts'],
    testTimeout: 600_000,
    maxWorkers: 1,
  },
});
