/**
 * Finding a domain's adapter package: `--domain alfworld` loads `@dreamgym/alfworld` and
 * calls its `createAlfworldAdapter(options)` factory (every adapter exports
 * `create<Domain>Adapter`). Third-party adapters are named with `--adapter-package`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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

/** Adapter packages installed next to the CLI (keyword `dreamgym-adapter`). */
export function installedAdapterPackages(from = process.cwd()): string[] {
  const found = new Set<string>();
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
  return [...found].sort();
}

/** Loads the adapter of `domain` and builds it with `options`. */
export async function loadDomainAdapter(
  domain: string,
  options: Record<string, unknown>,
  packageName = `@dreamgym/${domain}`,
): Promise<DomainAdapter> {
  let module: Record<string, unknown>;
  try {
    const require = createRequire(join(process.cwd(), 'noop.js'));
    module = (await import(require.resolve(packageName))) as Record<string, unknown>;
  } catch (error) {
    const installed = installedAdapterPackages();
    throw new ConfigError(
      `Unknown domain "${domain}": package ${packageName} is not installed. Installed adapters: ${installed.length > 0 ? installed.join(', ') : 'none'}. Install one (npm install @dreamgym/alfworld) or name a package with --adapter-package.`,
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
