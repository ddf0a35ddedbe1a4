/**
 * API reports: the public surface of every published `@dreamgym/*` package, one Markdown
 * file per package (`api/<package folder>.api.md`) listing each entry point's exported names
 * and their kinds, read from the built declaration files (`dist/*.d.ts`) with the TypeScript
 * compiler API.
 *
 *   npx tsx scripts/api-report.ts            checks: the built surface matches the reports, and
 *                                            every report that differs from the base commit
 *                                            has a changeset naming its package
 *   npx tsx scripts/api-report.ts --write    rewrites the reports from the built packages
 *
 * Build first (`npx turbo run build`). The base commit is `--base REF` when given, else
 * the merge base of `HEAD` and `main`, else `HEAD`. `tests/api-report.test.ts` runs the check.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

export const repositoryRoot = join(import.meta.dirname, '..');
/** Where the reports live, relative to the repository root. */
export const reportDirectory = 'api';
export const WRITE_COMMAND = 'npx tsx scripts/api-report.ts --write';

/** A published workspace package and the declaration file of each of its entry points. */
export interface ReportedPackage {
  name: string;
  /** Its folder, absolute. */
  directory: string;
  /** Entry point specifier (`@dreamgym/core/testing`) -> its ESM `.d.ts`, absolute. */
  entryPoints: Map<string, string>;
}

/** Entry point specifier -> exported name -> kind (`class`, `function`, `const`, `type` ...). */
export type ApiSurface = Map<string, Map<string, string>>;

/** Every non-private package under `packages/` and `adapters/`. */
export function reportedPackages(root = repositoryRoot): ReportedPackage[] {
  const found: ReportedPackage[] = [];
  for (const group of ['packages', 'adapters']) {
    const groupDirectory = join(root, group);
    if (!existsSync(groupDirectory)) continue;
    for (const folder of readdirSync(groupDirectory).sort()) {
      const directory = join(groupDirectory, folder);
      const manifestPath = join(directory, 'package.json');
      if (!existsSync(manifestPath)) continue;
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
        name: string;
        private?: boolean;
        exports?: Record<string, unknown>;
        types?: string;
      };
      if (manifest.private) continue;
      const entryPoints = new Map<string, string>();
      const exportsMap = manifest.exports ?? { '.': { types: manifest.types } };
      for (const [subpath, target] of Object.entries(exportsMap)) {
        if (subpath === './package.json') continue;
        const types = declarationOf(target);
        if (types === undefined) {
          throw new Error(
            `${relative(root, manifestPath)}: exports["${subpath}"] names no "types" file`,
          );
        }
        entryPoints.set(
          subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
          join(directory, types),
        );
      }
      found.push({ name: manifest.name, directory, entryPoints });
    }
  }
  return found;
}

/** The ESM declaration file of one `exports` entry (`import.types`, else `types`). */
function declarationOf(target: unknown): string | undefined {
  if (typeof target === 'string') return target.endsWith('.d.ts') ? target : undefined;
  if (target === null || typeof target !== 'object') return undefined;
  const conditions = target as Record<string, unknown>;
  return (
    declarationOf(conditions.import) ??
    (typeof conditions.types === 'string' ? conditions.types : undefined) ??
    declarationOf(conditions.default)
  );
}

/** The report file of a package, relative to the repository root (`api/core.api.md`). */
export function reportFile(pkg: ReportedPackage): string {
  return `${reportDirectory}/${basename(pkg.directory)}.api.md`;
}

const KIND_FLAGS: Array<[ts.SymbolFlags, string]> = [
  [ts.SymbolFlags.Class, 'class'],
  [ts.SymbolFlags.Function, 'function'],
  [ts.SymbolFlags.Enum, 'enum'],
  [ts.SymbolFlags.Variable, 'const'],
  [ts.SymbolFlags.Interface, 'interface'],
  [ts.SymbolFlags.TypeAlias, 'type'],
  [ts.SymbolFlags.Module, 'namespace'],
];

function kindOf(checker: ts.TypeChecker, exported: ts.Symbol): string {
  const target =
    exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const kinds = KIND_FLAGS.filter(([flag]) => target.flags & flag).map(([flag, kind]) => {
    if (flag !== ts.SymbolFlags.Variable) return kind;
    const declaration = target.valueDeclaration ?? target.declarations?.[0];
    const isConst =
      declaration !== undefined && ts.getCombinedNodeFlags(declaration) & ts.NodeFlags.Const;
    return isConst ? 'const' : 'let';
  });
  if (kinds.length === 0) return 'unresolved';
  const typeOnly = exported.declarations?.some(
    (declaration) =>
      ts.isExportSpecifier(declaration) &&
      (declaration.isTypeOnly || declaration.parent.parent.isTypeOnly),
  );
  const valueKinds = ['class', 'function', 'enum', 'const', 'let', 'namespace'];
  const kind = kinds.join(' + ');
  return typeOnly && kinds.some((each) => valueKinds.includes(each)) ? `${kind} (type only)` : kind;
}

/** The exported names and kinds of every entry point of `pkg`, from its built `.d.ts`. */
export function readSurface(pkg: ReportedPackage): ApiSurface {
  return readSurfaces([pkg])[0]!;
}

/**
 * The surfaces of several packages, read with one TypeScript program (the declaration files
 * they share, core's and their dependencies', are parsed once).
 */
export function readSurfaces(packages: readonly ReportedPackage[]): ApiSurface[] {
  for (const pkg of packages) {
    for (const [entry, file] of pkg.entryPoints) {
      if (!existsSync(file)) {
        throw new Error(
          `${entry}: ${relative(repositoryRoot, file)} does not exist: build first (npx turbo run build --filter=${pkg.name})`,
        );
      }
    }
  }
  const program = ts.createProgram(
    packages.flatMap((pkg) => [...pkg.entryPoints.values()]),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      noEmit: true,
      skipLibCheck: true,
      // Kinds need no standard library; leaving it out keeps the check fast.
      noLib: true,
      types: [],
    },
  );
  const checker = program.getTypeChecker();
  return packages.map((pkg) => {
    const surface: ApiSurface = new Map();
    for (const [entry, file] of pkg.entryPoints) {
      const source = program.getSourceFile(file);
      const moduleSymbol = source && checker.getSymbolAtLocation(source);
      if (!moduleSymbol) throw new Error(`${entry}: ${file} is not a module`);
      const names = new Map<string, string>();
      for (const exported of checker.getExportsOfModule(moduleSymbol)) {
        names.set(exported.name, kindOf(checker, exported));
      }
      surface.set(entry, new Map([...names].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
    }
    return surface;
  });
}

/** The Markdown report of one package. */
export function renderReport(pkg: ReportedPackage, surface: ApiSurface): string {
  const lines = [
    `# API report: \`${pkg.name}\``,
    '',
    `Generated by \`${WRITE_COMMAND}\` from the built declaration files; do not edit by hand.`,
    `A change to this file is a change to the package's public surface: commit it with a`,
    `changeset naming \`${pkg.name}\` (see docs/releasing.md, "The public API").`,
  ];
  for (const [entry, names] of surface) {
    lines.push('', `## \`${entry}\``, '', `${names.size} exports.`, '');
    lines.push('| Export | Kind |', '| --- | --- |');
    for (const [name, kind] of names) lines.push(`| \`${name}\` | ${kind} |`);
  }
  return `${lines.join('\n')}\n`;
}

/** Reads a report back into a surface (the inverse of `renderReport`). */
export function parseReport(text: string): ApiSurface {
  const surface: ApiSurface = new Map();
  let names: Map<string, string> | undefined;
  for (const line of text.split('\n')) {
    const heading = /^## `(.+)`$/.exec(line);
    if (heading) {
      names = new Map();
      surface.set(heading[1]!, names);
      continue;
    }
    const row = /^\| `(.+)` \| (.+) \|$/.exec(line);
    if (row && names) names.set(row[1]!, row[2]!);
  }
  return surface;
}

/** Human-readable differences between a checked-in surface and the built one; empty if equal. */
export function describeDifferences(checkedIn: ApiSurface, built: ApiSurface): string[] {
  const differences: string[] = [];
  for (const entry of new Set([...checkedIn.keys(), ...built.keys()])) {
    const before = checkedIn.get(entry);
    const after = built.get(entry);
    if (!before) {
      differences.push(`new entry point ${entry} (${after?.size ?? 0} exports)`);
      continue;
    }
    if (!after) {
      differences.push(`entry point ${entry} removed`);
      continue;
    }
    const added = [...after.keys()].filter((name) => !before.has(name));
    const removed = [...before.keys()].filter((name) => !after.has(name));
    const changed = [...after.keys()].filter(
      (name) => before.has(name) && before.get(name) !== after.get(name),
    );
    if (added.length > 0) differences.push(`${entry}: added ${added.join(', ')}`);
    if (removed.length > 0) differences.push(`${entry}: removed ${removed.join(', ')}`);
    for (const name of changed) {
      differences.push(`${entry}: ${name} changed from ${before.get(name)} to ${after.get(name)}`);
    }
  }
  return differences;
}

export interface SurfaceCheck {
  pkg: ReportedPackage;
  file: string;
  /** Empty when the checked-in report matches the build. */
  differences: string[];
}

/** Compares each package's built surface with its checked-in report. */
export function checkSurfaces(root = repositoryRoot): SurfaceCheck[] {
  const packages = reportedPackages(root);
  const surfaces = readSurfaces(packages);
  return packages.map((pkg, index) => {
    const file = reportFile(pkg);
    const path = join(root, file);
    const built = surfaces[index]!;
    if (!existsSync(path)) {
      return { pkg, file, differences: [`${file} does not exist`] };
    }
    const checkedIn = parseReport(readFileSync(path, 'utf8'));
    return { pkg, file, differences: describeDifferences(checkedIn, built) };
  });
}

/** The commit reports are compared with for the changeset rule. */
export function baseCommit(root = repositoryRoot): string {
  try {
    return git(root, ['merge-base', 'HEAD', 'main']).trim();
  } catch {
    return 'HEAD';
  }
}

function git(root: string, args: string[]): string {
  return execFileSync('git', args, {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Package names that the pending changesets (`.changeset/*.md`) bump. */
export function changesetPackages(root = repositoryRoot): Map<string, string[]> {
  const named = new Map<string, string[]>();
  const directory = join(root, '.changeset');
  if (!existsSync(directory)) return named;
  for (const file of readdirSync(directory).sort()) {
    if (!file.endsWith('.md') || file === 'README.md') continue;
    const text = readFileSync(join(directory, file), 'utf8');
    const frontMatter = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)?.[1] ?? '';
    for (const line of frontMatter.split(/\r?\n/)) {
      const entry = /^\s*["']?([^"':\s]+)["']?\s*:\s*(major|minor|patch)\s*$/.exec(line);
      if (!entry) continue;
      named.set(entry[1]!, [...(named.get(entry[1]!) ?? []), `.changeset/${file}`]);
    }
  }
  return named;
}

export interface ChangesetCheck {
  pkg: ReportedPackage;
  file: string;
  /** Whether the checked-in report differs from the base commit's. */
  changed: boolean;
  /** The changesets naming the package. */
  changesets: string[];
}

/**
 * For each package whose checked-in report differs from the one at the base commit (a
 * report the base commit lacks is being introduced and needs none), the changesets that
 * name it; a changed report with none breaks the rule.
 */
export function checkChangesets(root = repositoryRoot, base = baseCommit(root)): ChangesetCheck[] {
  const named = changesetPackages(root);
  return reportedPackages(root).map((pkg) => {
    const file = reportFile(pkg);
    const path = join(root, file);
    let before: string | undefined;
    try {
      before = git(root, ['show', `${base}:${file}`]);
    } catch {
      before = undefined;
    }
    const now = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    const changed = before !== undefined && before !== now;
    return { pkg, file, changed, changesets: named.get(pkg.name) ?? [] };
  });
}

/** Writes every package's report; returns the files written. */
export function writeReports(root = repositoryRoot): string[] {
  mkdirSync(join(root, reportDirectory), { recursive: true });
  const packages = reportedPackages(root);
  const surfaces = readSurfaces(packages);
  return packages.map((pkg, index) => {
    const file = reportFile(pkg);
    writeFileSync(join(root, file), renderReport(pkg, surfaces[index]!));
    return file;
  });
}

function main(args: string[]): number {
  if (args.includes('--help') || args.includes('-h')) {
    console.log('usage: npx tsx scripts/api-report.ts [--write | --base REF]');
    return 0;
  }
  if (args.includes('--write')) {
    for (const file of writeReports()) console.log(`wrote ${file}`);
    return 0;
  }
  let failures = 0;
  for (const { pkg, file, differences } of checkSurfaces()) {
    if (differences.length === 0) {
      console.log(`ok   ${pkg.name} matches ${file}`);
      continue;
    }
    failures += 1;
    console.error(`FAIL ${pkg.name}: the built public API differs from ${file}:`);
    for (const difference of differences) console.error(`       ${difference}`);
    console.error(`     run \`${WRITE_COMMAND}\` and add a changeset (npx changeset)`);
  }
  const baseIndex = args.indexOf('--base');
  const base = baseIndex >= 0 && args[baseIndex + 1] ? args[baseIndex + 1]! : baseCommit();
  for (const { pkg, file, changed, changesets } of checkChangesets(repositoryRoot, base)) {
    if (!changed) continue;
    if (changesets.length > 0) {
      console.log(`ok   ${file} changed since ${base}; changeset: ${changesets.join(', ')}`);
      continue;
    }
    failures += 1;
    console.error(
      `FAIL ${file} changed since ${base} but no .changeset/*.md names ${pkg.name}: add one (npx changeset)`,
    );
  }
  return failures === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
