/**
 * Finding a domain's adapter package: domain `alfworld` (`--domain alfworld`) loads
 * `@dreamgym/alfworld` and calls its `createAlfworldAdapter(options)` factory (every adapter
 * exports `create<Domain>Adapter`). Third-party adapters are named by package
 * (`--adapter-package`). Packages are looked for from the working folder's project first,
 * then from where this package is installed: a global install (`npm install -g @dreamgym/cli
 * @dreamgym/alfworld`) keeps the adapters beside the CLI and its `@dreamgym/run`, outside any
 * project, and the lookup walks up to them.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, type DomainAdapter } from '@dreamgym/core';

/** `webarena-lite` -> `createWebarenaLiteAdapter`. */
export function adapterFactoryName(domain: string): string {
  const pascal = domain
    .split(/[-_]/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
  return `create${pascal}Adapter`;
}

/** Where packages are looked for: the working folder, then this package's own install. */
function searchRoots(): string[] {
  return [process.cwd(), dirname(fileURLToPath(import.meta.url))];
}

/** Adapter packages installed beside this package or in the working folder's project (keyword `dreamgym-adapter`). */
export function installedAdapterPackages(
  from: string | readonly string[] = searchRoots(),
): string[] {
  const found = new Set<string>();
  for (const root of typeof from === 'string' ? [from] : from) collectAdapterPackages(root, found);
  return [...found].sort();
}

function collectAdapterPackages(from: string, found: Set<string>): void {
  let directory = from;
  for (;;) {
    const scope = join(directory, 'node_modules', '@dreamgym');
    if (existsSync(scope)) {
      for (const name of readdirSync(scope)) {
        const manifestPath = join(scope, name, 'package.json');
        if (!existsSync(manifestPath)) continue;
        const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { keywords?: string[] };
        if (manifest.keywords?.includes('dreamgym-adapter')) found.add(`@dreamgym/${name}`);
      }
    }
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
}

/** The entry file of `packageName` resolved from the first root that has it. */
function resolvePackage(packageName: string): string {
  let failure: unknown;
  for (const root of searchRoots()) {
    try {
      return createRequire(join(root, 'noop.js')).resolve(packageName);
    } catch (error) {
      failure ??= error;
    }
  }
  throw failure;
}

/** The folder `node_modules/<packageName>` nearest above a search root, where one exists. */
function installedPackageFolder(packageName: string): string | undefined {
  for (const root of searchRoots()) {
    for (let directory = root; ; directory = dirname(directory)) {
      const folder = join(directory, 'node_modules', packageName);
      if (existsSync(join(folder, 'package.json'))) return realpathSync(folder);
      if (dirname(directory) === directory) break;
    }
  }
  return undefined;
}

/**
 * Why `packageName` did not resolve. An installed package whose entry is missing is a
 * workspace package not built yet: adapters are loaded from their `dist/`, which only a build makes
 * (npm links a workspace package's source folder at install time).
 */
function unresolvedError(domain: string, packageName: string, error: unknown): ConfigError {
  const folder = installedPackageFolder(packageName);
  if (folder !== undefined) {
    const what = existsSync(join(folder, 'dist'))
      ? `its entry does not resolve (${(error as Error).message.split('\n')[0]})`
      : 'it has no dist/, which is what is loaded';
    return new ConfigError(
      `Domain "${domain}": package ${packageName} is installed (${folder}) but not built: ${what}. Build it from the repository root: npx turbo run build --filter=${packageName} (again after every change to it).`,
      { field: 'domain', cause: error },
    );
  }
  const installed = installedAdapterPackages();
  return new ConfigError(
    `Unknown domain "${domain}": package ${packageName} is not installed. Installed adapters: ${installed.length > 0 ? installed.join(', ') : 'none'}. Install one (npm install @dreamgym/alfworld) or name a package with --adapter-package.`,
    { field: 'domain', cause: error },
  );
}

/** Loads the adapter of `domain` and builds it with `options`. */
export async function loadDomainAdapter(
  domain: string,
  options: Record<string, unknown>,
  packageName = `@dreamgym/${domain}`,
): Promise<DomainAdapter> {
  let entry: string;
  try {
    entry = resolvePackage(packageName);
  } catch (error) {
    throw unresolvedError(domain, packageName, error);
  }
  let module: Record<string, unknown>;
  try {
    module = (await import(entry)) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(
      `Domain "${domain}": package ${packageName} (${entry}) failed to load: ${(error as Error)?.message ?? String(error)}. Rebuild it (npx turbo run build --filter=${packageName} in its repository) or reinstall it.`,
      { field: 'domain', cause: error },
    );
  }
  const factoryName = adapterFactoryName(domain);
  const factory = module[factoryName];
  if (typeof factory !== 'function') {
    throw new ConfigError(
      `Package ${packageName} does not export ${factoryName}(options); it is not a DreamGym adapter for "${domain}".`,
      { field: 'domain' },
    );
  }
  return (await factory(options)) as DomainAdapter;
}
