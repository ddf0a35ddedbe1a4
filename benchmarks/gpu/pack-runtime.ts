/**
 * The Node side of a GPU run, packed for a machine with no registry
 * (`benchmarks/gpu/miniwob-llm.sh pack`): the driver bundled into one ES module (the
 * benchmarks' own files inlined, every package left as an import) and the installed packages
 * it imports, with their dependencies, copied into `node_modules/` beside it. Workspace packages
 * travel as their `package.json` and `dist/`; the llama.cpp source bundle node-llama-cpp
 * keeps for building from source (34 MB) and type-only packages stay behind (the prebuilt
 * `@node-llama-cpp/linux-x64` binaries travel). faiss-node stays behind: the run uses the
 * flat index.
 *
 * Usage: npx tsx benchmarks/gpu/pack-runtime.ts ENTRY.ts OUT_DIRECTORY
 * Writes OUT_DIRECTORY/benchmarks/gpu/<entry>.mjs and OUT_DIRECTORY/node_modules/, and prints
 * the packages copied.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';

const [entryArgument, outArgument] = process.argv.slice(2);
if (!entryArgument || !outArgument) {
  throw new Error('usage: npx tsx benchmarks/gpu/pack-runtime.ts ENTRY.ts OUT_DIRECTORY');
}
const root = resolve(import.meta.dirname, '..', '..');
const entry = resolve(entryArgument);
const out = resolve(outArgument);
/** Packages that never travel: native addons the run does not use, types, test runners. */
const LEFT_BEHIND = [/^@types\//, /^faiss-node$/, /^vitest$/, /^typescript$/];
/** Paths inside a package that never travel (relative to its folder). */
const PRUNED = ['llama/gitRelease.bundle', 'node_modules/.cache'];

const bundlePath = join(out, relative(root, entry).replace(/\.ts$/, '.mjs'));
const { metafile } = await build({
  entryPoints: [entry],
  outfile: bundlePath,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  metafile: true,
  logLevel: 'warning',
});
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
const imported = new Set<string>();
for (const output of Object.values(metafile.outputs)) {
  for (const { path, external } of output.imports) {
    if (!external || builtins.has(path) || path.startsWith('node:')) continue;
    const parts = path.split('/');
    imported.add(path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
  }
}

/** The folder `name` resolves to from `from` (Node's search up the node_modules folders). */
function packageFolder(name: string, from: string): string | undefined {
  for (let directory = from; ; directory = dirname(directory)) {
    const candidate = join(directory, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(directory) === directory) return undefined;
  }
}

const copied = new Map<string, string>();
function visit(name: string, from: string, required: boolean): void {
  if (LEFT_BEHIND.some((pattern) => pattern.test(name))) return;
  const folder = packageFolder(name, from);
  if (!folder) {
    if (required)
      throw new Error(`pack-runtime: ${name} (needed from ${from}) is not installed: run npm ci.`);
    return;
  }
  if (copied.has(folder)) return;
  copied.set(folder, name);
  const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as Record<
    string,
    Record<string, string> | undefined
  >;
  const real = realpathSync(folder);
  for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, real, true);
  for (const dependency of Object.keys(manifest.optionalDependencies ?? {}))
    visit(dependency, real, false);
  for (const dependency of Object.keys(manifest.peerDependencies ?? {})) {
    if (dependency.startsWith('@dreamgym/')) visit(dependency, real, false);
  }
}
for (const name of imported) visit(name, dirname(entry), true);

for (const [folder, name] of [...copied].sort((a, b) => a[1].localeCompare(b[1]))) {
  // A package nested in another's node_modules keeps its place there.
  const inRoot = relative(join(root, 'node_modules'), folder);
  const target = join(
    out,
    'node_modules',
    inRoot.startsWith('..') ? relative(root, folder) : inRoot,
  );
  const real = realpathSync(folder);
  mkdirSync(target, { recursive: true });
  if (real.startsWith(join(root, 'packages')) || real.startsWith(join(root, 'adapters'))) {
    cpSync(join(real, 'package.json'), join(target, 'package.json'));
    if (!existsSync(join(real, 'dist'))) {
      throw new Error(
        `pack-runtime: ${name} has no dist/ (${real}): run npx turbo run build first.`,
      );
    }
    cpSync(join(real, 'dist'), join(target, 'dist'), { recursive: true, dereference: true });
  } else {
    cpSync(real, target, {
      recursive: true,
      dereference: true,
      filter: (source) => {
        const inside = relative(real, source);
        // Nested packages are visited (and copied) on their own when something needs them.
        if (inside === 'node_modules' || basename(source) === '.bin') return false;
        return !PRUNED.includes(inside);
      },
    });
  }
}
console.log(
  `pack-runtime: ${basename(bundlePath)} and ${copied.size} packages: ${[...copied.values()].sort().join(' ')}`,
);
