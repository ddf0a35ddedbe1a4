/**
 * One vitest config for the whole repository: a project per workspace package, each
 * testing its TypeScript sources (`src/`) directly, with `@dreamgym/*` imports resolved to
 * the sources too, plus the repository-level project in `tests/` (packaging, release).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

const root = import.meta.dirname;

interface WorkspacePackage {
  name: string;
  directory: string;
  /** Each export subpath with the source file its built file comes from. */
  subpaths: Array<{ subpath: string; source: string }>;
}

/** `./dist/testing/vitest.js` -> `src/testing/vitest.ts`: the source a built entry comes from. */
function sourceOf(directory: string, target: unknown): string {
  let file = target;
  while (file !== null && typeof file === 'object') {
    const conditions = file as Record<string, unknown>;
    file = conditions.import ?? conditions.default ?? conditions.require;
  }
  if (typeof file !== 'string') return resolve(directory, 'src', 'index.ts');
  return resolve(directory, file.replace(/^\.\/dist\//, 'src/').replace(/\.(c|m)?js$/, '.ts'));
}

function workspacePackages(): WorkspacePackage[] {
  const packages: WorkspacePackage[] = [];
  for (const group of ['packages', 'adapters', 'benchmarks']) {
    const groupDirectory = join(root, group);
    if (!existsSync(groupDirectory)) continue;
    const directories =
      group === 'benchmarks'
        ? [groupDirectory]
        : readdirSync(groupDirectory).map((name) => join(groupDirectory, name));
    for (const directory of directories) {
      const manifestPath = join(directory, 'package.json');
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
      const exports: Record<string, unknown> = manifest.exports ?? { '.': './dist/index.js' };
      const subpaths = Object.entries(exports)
        .filter(([subpath]) => subpath !== './package.json')
        .map(([subpath, target]) => ({ subpath, source: sourceOf(directory, target) }));
      packages.push({ name: manifest.name, directory, subpaths });
    }
  }
  return packages;
}

const packages = workspacePackages();

/** `@dreamgym/core` -> packages/core/src/index.ts, `@dreamgym/core/testing` -> src/testing/index.ts. */
const sourceAliases = packages.flatMap(({ name, subpaths }) =>
  subpaths.map(({ subpath, source }) => ({
    find: new RegExp(`^${(name + subpath.slice(1)).replace(/[/.]/g, '\\$&')}$`),
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
