/**
 * `dreamgym new adapter NAME`: scaffolds `adapters/NAME/`, the package `@dreamgym/NAME`, from
 * the templates shipped in this package (`templates/adapter/`): the `DomainAdapter` parts as
 * typed stubs that throw a `NotImplementedError` naming what to write, a conformance test on
 * `@dreamgym/core/testing`, a README, build and type-check set-up, and a changeset. It checks
 * the workspace wiring (npm workspaces, the root vitest config, turbo) and says what to run
 * next.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '@dreamgym/core';
import { adapterFactoryName } from '@dreamgym/run';
import { type Command, type CommandIo, fail } from '../command-arguments.js';
import { shippedFile } from '../package-files.js';

const USAGE = `Usage: dreamgym new adapter NAME [options]

Writes adapters/NAME/, the package @dreamgym/NAME: the DomainAdapter parts as typed stubs
that throw NotImplementedError naming what to write, a conformance test on
@dreamgym/core/testing, README, tsup and TypeScript set-up, and a changeset. NAME is
lower-case kebab (miniwob, my-site). Then run npm install (it links the new workspace
package) and fill the stubs in the order of docs/adding-a-benchmark.md until
npx vitest run --project @dreamgym/NAME passes.

  --root DIR          the repository to write into (default: the nearest folder at or above
                      the current one whose package.json has workspaces)
  --title TEXT        the benchmark's display name (default NAME)
  --description TEXT  one line for package.json and the README
  --dry-run           list what would be written, write nothing`;

/** The names a scaffolded adapter's identifiers are made of. */
export interface AdapterNames {
  /** Package folder and domain: `webarena-lite`. */
  name: string;
  /** `WebarenaLite`: `createWebarenaLiteAdapter`, the CLI's factory convention. */
  pascal: string;
  /** `webarenaLite`. */
  camel: string;
  /** `WEBARENA_LITE`. */
  constant: string;
  /** Display name: `WebArena-Lite`. */
  title: string;
  description: string;
}

/** Derives every identifier of an adapter from its kebab-case name. */
export function adapterNames(
  name: string,
  options: { title?: string; description?: string } = {},
): AdapterNames {
  if (!/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(name)) {
    throw new ConfigError(
      `"${name}" is not an adapter name: use lower-case letters, digits and single hyphens, starting with a letter (miniwob, my-site).`,
      { field: 'name' },
    );
  }
  const pascal = adapterFactoryName(name).slice('create'.length, -'Adapter'.length);
  const title = options.title ?? name;
  return {
    name,
    pascal,
    camel: pascal[0]!.toLowerCase() + pascal.slice(1),
    constant: name.replace(/-/g, '_').toUpperCase(),
    title,
    description: options.description ?? `DreamGym adapter for ${title}.`,
  };
}

/** The `templates/` folder of this package, from the source tree (tests) or from `dist/`. */
export function templatesDirectory(): string {
  return dirname(shippedFile('templates/adapter'));
}

/** Fills the placeholders of a template file. */
/**
 * The peer range on core: the same major (`0.x` before 1.0, whose releases move every package
 * of the fixed group together), so a release of core never forces a major bump of the adapter.
 */
export function corePeerRange(coreVersion: string): string {
  const major = Number(coreVersion.split('.')[0]);
  return Number.isInteger(major) ? `${major}.x` : `^${coreVersion}`;
}

export function fillTemplate(text: string, names: AdapterNames, coreVersion: string): string {
  return text
    .replaceAll('__CONSTANT__', names.constant)
    .replaceAll('__PASCAL__', names.pascal)
    .replaceAll('__CAMEL__', names.camel)
    .replaceAll('__TITLE__', names.title)
    .replaceAll('__DESCRIPTION__', names.description.replaceAll('"', '\\"'))
    .replaceAll('__CORE_PEER_RANGE__', corePeerRange(coreVersion))
    .replaceAll('__CORE_VERSION__', coreVersion)
    .replaceAll('__NAME__', names.name);
}

async function filesUnder(directory: string, prefix = ''): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) files.push(...(await filesUnder(join(directory, entry.name), path)));
    else files.push(path);
  }
  return files.sort();
}

/** The nearest folder at or above `from` whose package.json declares workspaces. */
export function findWorkspaceRoot(from: string): string | undefined {
  let directory = resolve(from);
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { workspaces?: unknown };
        if (parsed.workspaces !== undefined) return directory;
      } catch {
        // an unreadable manifest is not a workspace root
      }
    }
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** Whether an npm workspaces glob list covers `adapters/NAME`. */
export function workspacesCover(workspaces: unknown, folder: string): boolean {
  const globs = Array.isArray(workspaces)
    ? workspaces
    : typeof workspaces === 'object' && workspaces !== null
      ? ((workspaces as { packages?: unknown }).packages ?? [])
      : [];
  if (!Array.isArray(globs)) return false;
  return globs.some((glob) => {
    if (typeof glob !== 'string') return false;
    const pattern = glob.replace(/\/$/, '');
    if (pattern === folder) return true;
    const source = pattern
      .split('/')
      .map((part) =>
        part === '**' ? '.*' : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'),
      )
      .join('/');
    return new RegExp(`^${source}$`).test(folder);
  });
}

/**
 * Formats and import-sorts the written TypeScript with the workspace's Biome, when it has one:
 * filled-in names change line lengths and the order of imports.
 */
async function formatWithBiome(root: string, files: string[]): Promise<string> {
  const biome = join(root, 'node_modules', '.bin', 'biome');
  const configured = ['biome.json', 'biome.jsonc'].some((file) => existsSync(join(root, file)));
  if (!existsSync(biome) || !configured) {
    return 'biome: not set up in this workspace; format the new files with your formatter';
  }
  return new Promise((done) => {
    execFile(
      biome,
      ['check', '--write', ...files],
      { cwd: root, timeout: 120_000 },
      (error, stdout, stderr) => {
        done(
          error
            ? `biome: could not format the new files (${`${stderr}${stdout}`.trim().split('\n')[0]}); run npx biome check --write adapters/`
            : 'biome: the new files are formatted and their imports sorted',
        );
      },
    );
  });
}

/** What `scaffoldAdapter` wrote and found. */
export interface ScaffoldResult {
  /** The adapter folder. */
  directory: string;
  /** Files written (or that would be), relative to the repository root. */
  files: string[];
  /** What was checked or changed in the workspace wiring, one line each. */
  wiring: string[];
}

/** Options of {@link scaffoldAdapter}. */
export interface ScaffoldOptions {
  /** The repository root (a package.json with workspaces). */
  root: string;
  name: string;
  title?: string;
  description?: string;
  /** List the files without writing. */
  dryRun?: boolean;
}

/**
 * Writes `adapters/NAME/` and `.changeset/NAME-adapter.md` into `root` from the templates,
 * and checks the wiring. Refuses to overwrite an existing adapter folder.
 *
 * @throws ConfigError for a bad name, a root that is not a workspace, or an existing folder.
 */
export async function scaffoldAdapter(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const names = adapterNames(options.name, {
    ...(options.title === undefined ? {} : { title: options.title }),
    ...(options.description === undefined ? {} : { description: options.description }),
  });
  const root = resolve(options.root);
  const manifestPath = join(root, 'package.json');
  if (!existsSync(manifestPath)) {
    throw new ConfigError(
      `${root} has no package.json: pass --root, the DreamGym repository (or your own workspace) to add the adapter to.`,
      { field: '--root' },
    );
  }
  const manifestText = await readFile(manifestPath, 'utf8');
  const manifest = JSON.parse(manifestText) as { workspaces?: unknown };
  if (manifest.workspaces === undefined) {
    throw new ConfigError(
      `${manifestPath} declares no workspaces: the adapter is an npm workspace package under adapters/. Run this in the DreamGym repository or pass --root.`,
      { field: '--root' },
    );
  }
  const folder = `adapters/${names.name}`;
  const directory = join(root, folder);
  if (existsSync(directory)) {
    throw new ConfigError(
      `${directory} already exists: pick another name, or remove the folder to scaffold it again.`,
      { field: 'name' },
    );
  }
  const templates = templatesDirectory();
  const coreManifest = join(root, 'packages', 'core', 'package.json');
  const coreVersion = existsSync(coreManifest)
    ? (JSON.parse(await readFile(coreManifest, 'utf8')) as { version: string }).version
    : (
        JSON.parse(await readFile(join(templates, '..', 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;

  const outputs: Array<{ path: string; content: string }> = [];
  for (const file of await filesUnder(join(templates, 'adapter'))) {
    const content = await readFile(join(templates, 'adapter', file), 'utf8');
    // `package.json.template`: a package.json inside this package would be linted as one of its own.
    const target = file.endsWith('.template') ? file.slice(0, -'.template'.length) : file;
    outputs.push({
      path: `${folder}/${target}`,
      content: fillTemplate(content, names, coreVersion),
    });
  }
  const changeset = `.changeset/${names.name}-adapter.md`;
  if (!existsSync(join(root, changeset))) {
    const content = await readFile(join(templates, 'changeset.md'), 'utf8');
    outputs.push({ path: changeset, content: fillTemplate(content, names, coreVersion) });
  }

  const wiring: string[] = [];
  let newManifest: string | undefined;
  if (workspacesCover(manifest.workspaces, folder)) {
    wiring.push(`npm workspaces: ${folder} is covered by package.json workspaces`);
  } else if (Array.isArray(manifest.workspaces)) {
    (manifest.workspaces as string[]).push('adapters/*');
    newManifest = `${JSON.stringify(manifest, null, 2)}\n`;
    wiring.push('npm workspaces: added "adapters/*" to package.json workspaces');
  } else {
    wiring.push(
      `npm workspaces: package.json workspaces do not cover ${folder}; add "adapters/*" to them`,
    );
  }
  const vitestConfig = ['vitest.config.ts', 'vitest.config.mts', 'vitest.config.js'].find((file) =>
    existsSync(join(root, file)),
  );
  if (vitestConfig === undefined) {
    wiring.push(
      `vitest: no root vitest config; run the adapter's tests with npx vitest run --root ${folder}`,
    );
  } else if (coversAdapters(await readFile(join(root, vitestConfig), 'utf8'))) {
    wiring.push(
      `vitest: ${vitestConfig} makes a project of every adapters/* package (@dreamgym/${names.name}, imports of @dreamgym/* resolved to src/)`,
    );
  } else {
    wiring.push(
      `vitest: ${vitestConfig} does not list adapters/: add a project with root ${folder} and include src/**/*.test.ts`,
    );
  }
  if (existsSync(join(root, 'turbo.json'))) {
    const turbo = JSON.parse(await readFile(join(root, 'turbo.json'), 'utf8')) as {
      tasks?: Record<string, unknown>;
      pipeline?: Record<string, unknown>;
    };
    const tasks = turbo.tasks ?? turbo.pipeline ?? {};
    const missing = ['build', 'typecheck'].filter((task) => !(task in tasks));
    wiring.push(
      missing.length === 0
        ? `turbo: build and typecheck run for every workspace package (npx turbo run build --filter=@dreamgym/${names.name})`
        : `turbo: turbo.json has no ${missing.join(' or ')} task; add them (build outputs dist/**)`,
    );
  }
  if (!existsSync(join(root, 'tsconfig.base.json'))) {
    wiring.push(
      `typescript: ${folder}/tsconfig.json extends ../../tsconfig.base.json, which is missing: add it or edit the adapter's tsconfig`,
    );
  }

  if (!options.dryRun) {
    for (const output of outputs) {
      await mkdir(dirname(join(root, output.path)), { recursive: true });
      await writeFile(join(root, output.path), output.content, { flag: 'wx' });
    }
    if (newManifest !== undefined) await writeFile(manifestPath, newManifest);
    wiring.push(
      await formatWithBiome(
        root,
        outputs.map((output) => output.path).filter((path) => path.endsWith('.ts')),
      ),
    );
  }
  return {
    directory,
    files: [...outputs.map((output) => output.path), ...(newManifest ? ['package.json'] : [])],
    wiring,
  };
}

function parseNewAdapterArguments(args: string[]) {
  return parseArgs({
    args,
    options: {
      root: { type: 'string' },
      title: { type: 'string' },
      description: { type: 'string' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
}

async function run(args: string[], io: CommandIo): Promise<number> {
  let parsed: ReturnType<typeof parseNewAdapterArguments>;
  try {
    parsed = parseNewAdapterArguments(args);
  } catch (error) {
    fail(`${(error as Error).message}\n\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) {
    fail(
      positionals.length === 0
        ? `Name the adapter: dreamgym new adapter NAME.\n\n${USAGE}`
        : `One adapter name, got ${positionals.length}: ${positionals.join(' ')}.`,
      'name',
    );
  }
  const root =
    typeof values.root === 'string' ? resolve(io.cwd, values.root) : findWorkspaceRoot(io.cwd);
  if (root === undefined) {
    fail(
      `No workspace root (a package.json with workspaces) at or above ${io.cwd}: run this in the DreamGym repository or pass --root DIR.`,
      '--root',
    );
  }
  const dryRun = values['dry-run'] === true;
  const result = await scaffoldAdapter({
    root,
    name: positionals[0]!,
    ...(typeof values.title === 'string' ? { title: values.title } : {}),
    ...(typeof values.description === 'string' ? { description: values.description } : {}),
    dryRun,
  });
  const name = positionals[0]!;
  const folder = relative(root, result.directory);
  io.stdout.write(
    [
      `${dryRun ? 'Would write' : 'Wrote'} @dreamgym/${name} in ${relative(io.cwd, result.directory) || '.'}:`,
      ...result.files.map((file) => `  ${file}`),
      '',
      'Wiring:',
      ...result.wiring.map((line) => `  ${line}`),
      '',
      'Next:',
      `  npm install   (links @dreamgym/${name} into the workspace)`,
      `  npx vitest run --project @dreamgym/${name}   (the conformance test: each check fails on a stub until you write it)`,
      '  fill the stubs in the order of docs/adding-a-benchmark.md: each error names its file and step',
      `  npx turbo run build typecheck --filter=@dreamgym/${name}   (dreamgym train --domain ${name} loads dist/: build again after every change)`,
      `  an engine in Python goes in ${folder}/python/ with a pinned requirements.txt; add "python" to files in package.json (docs/adding-a-benchmark.md, step 8)`,
      `  remove "private": true from ${folder}/package.json when it is ready to ship`,
      '',
    ].join('\n'),
  );
  return 0;
}

/**
 * Whether a root vitest config makes a project of the adapters: it names `adapters`, or it
 * builds its projects from the npm workspaces (this repository's `workspacePackages`).
 */
function coversAdapters(config: string): boolean {
  return config.includes("'adapters'") || config.includes('workspacePackages(');
}

/** `dreamgym new adapter`. */
export const newAdapterCommand: Command = {
  name: ['new', 'adapter'],
  summary: 'scaffold adapters/NAME: a DomainAdapter package with stubs and its conformance test',
  run,
};
