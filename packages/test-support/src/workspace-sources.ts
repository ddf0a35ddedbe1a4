/**
 * The repository's workspace packages with each export entry mapped to the TypeScript source
 * its built file comes from (`@dreamgym/core/policy` -> `packages/core/src/policy/index.ts`).
 * The repository's vitest config resolves `@dreamgym/*` imports to the sources with it, and
 * test children bundled with esbuild alias them the same way.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** A workspace package and its entries. */
export interface WorkspacePackage {
  name: string;
  directory: string;
  /** Each export entry (`@dreamgym/core/testing`) with the source file its built file comes from. */
  entries: Array<{ specifier: string; source: string }>;
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

/** The packages under `root`'s packages/, adapters/, examples/ and benchmarks/. */
export function workspacePackages(root: string): WorkspacePackage[] {
  const packages: WorkspacePackage[] = [];
  for (const group of ['packages', 'adapters', 'examples', 'benchmarks']) {
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
      const entries = Object.entries(exports)
        .filter(([subpath]) => subpath !== './package.json')
        .map(([subpath, target]) => ({
          specifier: manifest.name + subpath.slice(1),
          source: sourceOf(directory, target),
        }));
      packages.push({ name: manifest.name, directory, entries });
    }
  }
  return packages;
}
