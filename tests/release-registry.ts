/**
 * A release on a real npm registry, end to end: Verdaccio on 127.0.0.1 in a scratch folder,
 * `changeset version` and `changeset publish` of every public package from a scratch copy of
 * the repository, and consumer folders outside the workspace that install single packages
 * from that registry (third-party packages come through Verdaccio's uplink to npmjs) and run
 * the README examples. Used by `tests/release-registry.test.ts` (the quick variant) and
 * `scripts/release-registry.ts` (every adapter, built from source).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { transform } from 'esbuild';
import { publicPackages, repositoryRoot } from './workspace.js';

const execFileAsync = promisify(execFile);

/** The code blocks of `language` in the Markdown section headed `heading` (`## ...`). */
export function codeBlocks(markdown: string, heading: string, language: string): string[] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`No section "${heading}" in the Markdown.`);
  const next = markdown.indexOf('\n## ', start + heading.length + 2);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter((match) => match[1] === language)
    .map((match) => match[2]!);
}

/** What the core quick start prints: the real success rates before and after training, in %. */
export function quickStartSuccess(output: string): { before: number; after: number } {
  const before = /real success before training: (\d+)%/.exec(output);
  const after = /real success after training: (\d+)%/.exec(output);
  if (!before || !after) throw new Error(`The quick start printed no success lines:\n${output}`);
  return { before: Number(before[1]), after: Number(after[1]) };
}

/** One command as a user types it, with what it printed: the release transcript. */
export interface TranscriptEntry {
  cwd: string;
  command: string;
  output: string;
  seconds: number;
}

/** Runs commands, recording each with its output; a failure throws with the full output. */
export class Shell {
  readonly transcript: TranscriptEntry[] = [];

  constructor(private readonly log: (line: string) => void = () => {}) {}

  async run(
    command: string,
    args: string[],
    options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
  ): Promise<string> {
    const shown = [command, ...args]
      .map((a) => (/^[\w@%+=:,./^~-]+$/.test(a) ? a : `'${a}'`))
      .join(' ');
    this.log(`$ ${shown}    (in ${options.cwd})`);
    const started = performance.now();
    let output: string;
    try {
      const { stdout, stderr } = await execFileAsync(command, args, {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        maxBuffer: 64 * 1024 * 1024,
        timeout: options.timeoutMs ?? 600_000,
      });
      output = `${stdout}${stderr}`;
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`${shown} failed in ${options.cwd}:\n${stdout}${stderr}`);
    }
    const seconds = (performance.now() - started) / 1000;
    this.transcript.push({ cwd: options.cwd, command: shown, output, seconds });
    this.log(`  (${seconds.toFixed(1)} s)`);
    return output;
  }
}

/** The author and committer of the release copy's commits. */
const releaseAuthor = {
  GIT_AUTHOR_NAME: 'release',
  GIT_AUTHOR_EMAIL: 'release@example.invalid',
  GIT_COMMITTER_NAME: 'release',
  GIT_COMMITTER_EMAIL: 'release@example.invalid',
};

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Where the release check keeps downloads between runs (third-party packages only). */
export function releaseCheckCache(): string {
  const cache = process.env.XDG_CACHE_HOME?.trim() || join(homedir(), '.cache');
  return join(cache, 'dreamgym', 'release-check');
}

/** A Verdaccio registry on 127.0.0.1 with a user whose token publishes. */
export interface Registry {
  url: string;
  /** `.npmrc` lines that point npm at this registry only, with the token. */
  npmrc: string;
  stop(): Promise<void>;
}

/**
 * Starts Verdaccio (the root devDependency) on a free port of 127.0.0.1 with its storage in
 * `directory`: `@dreamgym/*` lives only here (no uplink, so nothing of the public registry
 * mixes in), every other package is proxied from registry.npmjs.org.
 */
export async function startVerdaccio(directory: string): Promise<Registry> {
  await mkdir(join(directory, 'storage'), { recursive: true });
  // Third-party packages proxied from npmjs are kept between runs (they only save downloads);
  // what is published here (`@dreamgym/*`) lives in this run's storage and goes with it.
  const uplinkCache = join(releaseCheckCache(), 'uplinks');
  await mkdir(uplinkCache, { recursive: true });
  const uplinkStorage = relative(join(directory, 'storage'), uplinkCache);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  await writeFile(
    join(directory, 'config.yaml'),
    [
      'storage: ./storage',
      'auth:',
      '  htpasswd:',
      '    file: ./htpasswd',
      '    max_users: 10',
      'uplinks:',
      '  npmjs:',
      '    url: https://registry.npmjs.org/',
      '    timeout: 60s',
      '    maxage: 30m',
      'packages:',
      "  '@dreamgym/*':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      '    proxy: npmjs',
      `    storage: ${uplinkStorage}`,
      'server:',
      '  keepAliveTimeout: 60',
      'max_body_size: 200mb',
      'logs: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const verdaccio = join(repositoryRoot, 'node_modules/verdaccio/bin/verdaccio');
  const child: ChildProcess = spawn(
    process.execPath,
    [verdaccio, '--config', join(directory, 'config.yaml'), '--listen', `127.0.0.1:${port}`],
    {
      cwd: directory,
      // The machine's npm trusts this CA bundle (npm config cafile); Verdaccio's uplink must too.
      env: { ...process.env, NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
  child.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`Verdaccio exited with ${child.exitCode}:\n${log}`);
    try {
      if ((await fetch(`${url}/-/ping`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Verdaccio did not answer ${url}/-/ping within 60 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const user = await fetch(`${url}/-/user/org.couchdb.user:release`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'release',
      password: 'release-test-only',
      type: 'user',
      roles: [],
    }),
  });
  const { token } = (await user.json()) as { token?: string };
  if (!user.ok || !token) {
    await stop();
    throw new Error(`Verdaccio did not create the release user (${user.status}):\n${log}`);
  }
  const host = `//127.0.0.1:${port}/`;
  const npmrc = `registry=${url}/\n${host}:_authToken=${token}\naudit=false\nfund=false\nupdate-notifier=false\n`;
  return { url, npmrc, stop };
}

/** Environment for npm and changesets: this registry only, a private npm cache. */
export function registryEnvironment(registry: Registry, home: string): NodeJS.ProcessEnv {
  return {
    npm_config_registry: `${registry.url}/`,
    npm_config_userconfig: join(home, '.npmrc'),
    npm_config_cache: join(releaseCheckCache(), 'npm-cache'),
    npm_config_provenance: 'false',
    // changesets reads npm's registry from this too.
    NPM_CONFIG_REGISTRY: `${registry.url}/`,
  };
}

/**
 * A scratch copy of the repository for releasing: the working tree's tracked and untracked
 * (not ignored) files, a `node_modules` of links to the repository's except `@dreamgym/*`,
 * which link to the copy's own packages; with `withDist` each package's built `dist/` too
 * (the suite runs after `turbo run build`); a git repository, since changesets tags releases.
 */
export async function prepareReleaseCopy(
  target: string,
  shell: Shell,
  options: { withDist: boolean; ref?: string },
): Promise<string> {
  await mkdir(target, { recursive: true });
  if (options.ref) {
    await shell.run(
      'bash',
      [
        '-c',
        `git -C ${repositoryRoot} archive --format=tar ${options.ref} | tar -xf - -C ${target}`,
      ],
      {
        cwd: repositoryRoot,
      },
    );
  } else {
    const { stdout } = await execFileAsync(
      'git',
      ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
      { cwd: repositoryRoot, maxBuffer: 64 * 1024 * 1024 },
    );
    const files = stdout
      .split('\0')
      .filter((file) => file && existsSync(join(repositoryRoot, file)))
      .filter((file) => !file.startsWith('benchmarks/results/'));
    await Promise.all(
      files.map(async (file) => {
        await mkdir(join(target, file, '..'), { recursive: true });
        await cp(join(repositoryRoot, file), join(target, file), { verbatimSymlinks: true });
      }),
    );
  }
  await mkdir(join(target, 'node_modules/@dreamgym'), { recursive: true });
  for (const entry of readdirSync(join(repositoryRoot, 'node_modules'))) {
    if (entry === '@dreamgym' || entry === '.bin' || entry === '.package-lock.json') continue;
    await symlink(join(repositoryRoot, 'node_modules', entry), join(target, 'node_modules', entry));
  }
  await symlink(join(repositoryRoot, 'node_modules/.bin'), join(target, 'node_modules/.bin'));
  for (const pkg of publicPackages()) {
    const relative = pkg.directory.slice(repositoryRoot.length + 1);
    await symlink(join(target, relative), join(target, 'node_modules', pkg.name));
    if (options.withDist) {
      if (!existsSync(join(pkg.directory, 'dist'))) {
        throw new Error(`${relative}/dist is not built: run \`npx turbo run build\` first.`);
      }
      await cp(join(pkg.directory, 'dist'), join(target, relative, 'dist'), { recursive: true });
    }
  }
  const git = { cwd: target, env: releaseAuthor };
  await shell.run('git', ['init', '-q', '-b', 'main'], git);
  await shell.run('git', ['add', '-A'], git);
  await shell.run('git', ['commit', '-q', '-m', 'release copy'], git);
  return target;
}

/** Public packages in build order (dependencies first). */
export function buildOrder(): string[] {
  const packages = publicPackages();
  const names = new Set(packages.map((p) => p.name));
  const dependsOn = new Map(
    packages.map((p) => {
      const manifest = JSON.parse(readFileSync(join(p.directory, 'package.json'), 'utf8'));
      const all = {
        ...manifest.dependencies,
        ...manifest.peerDependencies,
        ...manifest.devDependencies,
      };
      return [p.name, Object.keys(all).filter((name) => names.has(name) && name !== p.name)];
    }),
  );
  const order: string[] = [];
  const visit = (name: string) => {
    if (order.includes(name)) return;
    for (const dependency of dependsOn.get(name) ?? []) visit(dependency);
    order.push(name);
  };
  for (const p of packages) visit(p.name);
  return order;
}

/** The version of every public package in `copy`. */
export function releasedVersions(copy: string): Record<string, string> {
  return Object.fromEntries(
    publicPackages()
      .map((p) =>
        JSON.parse(
          readFileSync(
            join(copy, p.directory.slice(repositoryRoot.length + 1), 'package.json'),
            'utf8',
          ),
        ),
      )
      .filter((manifest) => !manifest.private)
      .map((manifest) => [manifest.name, manifest.version]),
  );
}

/** What one release left: the versions on the registry and what a maintainer sees after it. */
export interface Release {
  /** The version of every public package, read back as the registry's `latest`. */
  versions: Record<string, string>;
  /** Each published manifest's `peerDependencies` on `@dreamgym/*` packages, from the registry. */
  peerRanges: Record<string, Record<string, string>>;
  /**
   * npm's warnings on publishing each package that has a `bin` (`npm publish --dry-run`:
   * `changeset publish` shows npm's output only when a publish fails). npm drops or rewrites
   * a `bin` entry it finds invalid, with a warning.
   */
  binPublishWarnings: Record<string, string[]>;
  /** `git status --porcelain` after the release commit: empty when the commit holds everything. */
  statusAfterCommit: string;
  /** The git tags of the copy after `changeset publish`. */
  tags: string[];
}

/**
 * One release, as docs/releasing.md cuts it: `changeset version` (consumes `.changeset/*.md`,
 * bumps the fixed group, writes each CHANGELOG.md), optionally a build of every public
 * package, `git add --all` and the release commit, then `changeset publish` to the registry
 * (which tags each published package in git).
 */
export async function release(
  copy: string,
  registry: Registry,
  shell: Shell,
  options: { build: boolean; home: string },
): Promise<Release> {
  const env = registryEnvironment(registry, options.home);
  await shell.run('npx', ['changeset', 'version'], { cwd: copy, env });
  if (options.build) {
    const published = releasedVersions(copy);
    for (const name of buildOrder().filter((candidate) => candidate in published)) {
      const pkg = publicPackages().find((p) => p.name === name)!;
      await shell.run('npx', ['tsup'], {
        cwd: join(copy, pkg.directory.slice(repositoryRoot.length + 1)),
        env,
      });
    }
  }
  await shell.run('git', ['add', '--all'], { cwd: copy });
  await shell.run('git', ['commit', '-q', '-m', 'Version packages'], {
    cwd: copy,
    env: releaseAuthor,
  });
  const statusAfterCommit = await shell.run('git', ['status', '--porcelain'], { cwd: copy });
  const binPublishWarnings: Record<string, string[]> = {};
  for (const pkg of publicPackages()) {
    const directory = join(copy, pkg.directory.slice(repositoryRoot.length + 1));
    if (!JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')).bin) continue;
    const output = await shell.run('npm', ['publish', '--dry-run'], { cwd: directory, env });
    binPublishWarnings[pkg.name] = output.split('\n').filter((line) => /^npm warn/i.test(line));
  }
  await shell.run('npx', ['changeset', 'publish'], { cwd: copy, env });
  const tags = (await shell.run('git', ['tag', '--list'], { cwd: copy }))
    .split('\n')
    .filter(Boolean);
  const versions = releasedVersions(copy);
  const peerRanges: Record<string, Record<string, string>> = {};
  for (const [name, version] of Object.entries(versions)) {
    const response = await fetch(`${registry.url}/${name.replace('/', '%2f')}`);
    const packument = (await response.json()) as {
      versions?: Record<string, { peerDependencies?: Record<string, string> }>;
      'dist-tags'?: Record<string, string>;
    };
    const manifest = packument.versions?.[version];
    if (!manifest || packument['dist-tags']?.latest !== version) {
      throw new Error(
        `${name}@${version} is not the latest version on ${registry.url} after changeset publish`,
      );
    }
    peerRanges[name] = Object.fromEntries(
      Object.entries(manifest.peerDependencies ?? {}).filter(([peer]) =>
        peer.startsWith('@dreamgym/'),
      ),
    );
  }
  return { versions, peerRanges, binPublishWarnings, statusAfterCommit, tags };
}

/** A consumer project outside the workspace whose npm sees only the local registry. */
export async function createConsumer(directory: string, registry: Registry): Promise<string> {
  await mkdir(directory, { recursive: true });
  await writeFile(join(directory, '.npmrc'), registry.npmrc);
  await writeFile(
    join(directory, 'package.json'),
    `${JSON.stringify({ name: 'dreamgym-consumer', private: true, type: 'module' }, null, 2)}\n`,
  );
  return directory;
}

/** npm's settings in a consumer (its `.npmrc`, the check's cache): `npx` there fetches from the registry. */
function consumerNpmEnvironment(consumer: string): NodeJS.ProcessEnv {
  return {
    npm_config_cache: join(releaseCheckCache(), 'npm-cache'),
    npm_config_userconfig: join(consumer, '.npmrc'),
  };
}

/** `npm install` in a consumer, from the local registry only. */
export function consumerInstall(
  consumer: string,
  registry: Registry,
  specs: string[],
  shell: Shell,
): Promise<string> {
  return shell.run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--registry', `${registry.url}/`, ...specs],
    { cwd: consumer, env: consumerNpmEnvironment(consumer) },
  );
}

/** What the trainer script prints: the installed worker's health, then `start`'s error. */
const TRAINER_SCRIPT = `import { TorchTrainerBackend } from '@dreamgym/llama';
const backend = TorchTrainerBackend.spawn({ python: 'python3' });
const health = await backend.request('health');
const startError = await backend.request('start', { model: 'no-model.gguf' }).then(
  () => 'started',
  (error) => error.message,
);
await backend.close();
console.log(JSON.stringify({ health, startError }));
`;

/**
 * `@dreamgym/llama` alone in a bare consumer, and the torch trainer it ships: its files in the
 * published tarball; the installed package starting its own worker (with the bare `python3`,
 * which answers `health` and lacks torch for `start`); doctor's trainer check there, without and
 * with a virtualenv that has the trainer's requirements.
 */
async function checkShippedTrainer(
  directory: string,
  registry: Registry,
  shell: Shell,
  options: { version: string; venv: string },
): Promise<TrainerCheck> {
  const packument = (await (await fetch(`${registry.url}/@dreamgym%2fllama`)).json()) as {
    versions: Record<string, { dist: { tarball: string } }>;
  };
  const tarballUrl = packument.versions[options.version]?.dist.tarball;
  if (!tarballUrl)
    throw new Error(`@dreamgym/llama@${options.version} has no tarball on ${registry.url}`);
  await mkdir(directory, { recursive: true });
  await writeFile(
    join(directory, 'llama.tgz'),
    Buffer.from(await (await fetch(tarballUrl)).arrayBuffer()),
  );
  const tarballFiles = (await shell.run('tar', ['-tzf', 'llama.tgz'], { cwd: directory }))
    .split('\n')
    .filter((entry) => entry.startsWith('package/trainer/'));
  await rm(join(directory, 'llama.tgz'));
  const consumer = await createConsumer(directory, registry);
  await consumerInstall(consumer, registry, ['@dreamgym/llama'], shell);
  await writeFile(join(consumer, 'trainer.mjs'), TRAINER_SCRIPT);
  const { health, startError } = JSON.parse(
    (await shell.run('node', ['trainer.mjs'], { cwd: consumer })).trim().split('\n').at(-1)!,
  ) as { health: Record<string, unknown>; startError: string };
  const env = consumerNpmEnvironment(consumer);
  const doctorMissing = await shell
    .run('npx', ['@dreamgym/cli', 'doctor', '--only', 'trainer'], { cwd: consumer, env })
    .then(
      (output) => {
        throw new Error(
          `doctor --only trainer found nothing missing without a virtualenv:\n${output}`,
        );
      },
      (error: Error) => error.message,
    );
  const doctorOk = await shell.run(
    'npx',
    ['@dreamgym/cli', 'doctor', '--only', 'trainer', '--venv', options.venv],
    { cwd: consumer, env },
  );
  return {
    tarballFiles,
    installedWorker: existsSync(
      join(consumer, 'node_modules/@dreamgym/llama/trainer/dreamgym_trainer/worker.py'),
    ),
    health,
    startError,
    doctorMissing,
    doctorOk,
  };
}

/**
 * Runs a README's TypeScript example as a user would after compiling it: the types stripped
 * (esbuild), written as `<name>.mjs` in the consumer, run with node there.
 */
export async function runReadmeExample(
  consumer: string,
  code: string,
  name: string,
  shell: Shell,
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  const { code: javascript } = await transform(code, {
    loader: 'ts',
    format: 'esm',
    target: 'node20',
  });
  await writeFile(join(consumer, `${name}.mjs`), javascript);
  return shell.run('node', [`${name}.mjs`], { cwd: consumer, env, timeoutMs: 300_000 });
}

/** The first example of a package's README (`## Example`, else `## Quick start`). */
export async function readmeExample(
  packageDirectory: string,
): Promise<{ code: string; language: string }> {
  const readme = await readFile(join(packageDirectory, 'README.md'), 'utf8');
  for (const [heading, language] of [
    ['## Example', 'ts'],
    ['## Quick start', 'js'],
  ] as const) {
    if (!readme.includes(`\n${heading}\n`)) continue;
    const [code] = codeBlocks(readme, heading, language);
    if (code) return { code, language };
  }
  throw new Error(`${packageDirectory}/README.md has no example block.`);
}

/** Adds a changeset to the release copy (what a contributor commits with a change). */
export async function addChangeset(
  copy: string,
  name: string,
  bumps: Record<string, 'patch' | 'minor'>,
  summary: string,
): Promise<void> {
  const header = Object.entries(bumps)
    .map(([pkg, bump]) => `'${pkg}': ${bump}`)
    .join('\n');
  await writeFile(join(copy, '.changeset', `${name}.md`), `---\n${header}\n---\n\n${summary}\n`);
}

/** The transcript as text: each command, its folder, time and output. */
export function formatTranscript(
  entries: readonly TranscriptEntry[],
  filter: (entry: TranscriptEntry) => boolean = () => true,
): string {
  return entries
    .filter(filter)
    .map(
      (entry) =>
        `$ ${entry.command}    # in ${entry.cwd}, ${entry.seconds.toFixed(1)} s\n${entry.output.trimEnd()}\n`,
    )
    .join('\n');
}

export async function removeFolder(directory: string): Promise<void> {
  await rm(directory, { recursive: true, force: true });
}

/** What {@link runReleaseCheck} does. */
export interface ReleaseCheckOptions {
  /** Build every public package from source in the copy (else reuse the repository's `dist/`). */
  build: boolean;
  /** Release the repository at this git ref (default: the working tree). */
  ref?: string;
  /** Packages each installed alone in a fresh consumer after the first release. */
  consumers: string[];
  /** The consumers whose README example then runs (default: every consumer). */
  examples?: readonly string[];
  /**
   * Consumers whose README example runs without the runtime its README asks for (no
   * `consumerSetup`): it must fail, and what it printed is recorded as `exampleError`.
   */
  runtimeMissing?: readonly string[];
  /**
   * Commands run in a package's consumer after its install and before its example, as that
   * package's README asks of a user (a Python package, say).
   */
  consumerSetup?: Record<string, Array<[string, ...string[]]>>;
  /**
   * For `runtimeMissing` consumers: what their error told the user to run (`npx @dreamgym/cli
   * doctor --fix ...`), run in the consumer after the failure; the example then runs again and
   * must pass (`exampleOutput`).
   */
  runtimeFix?: Record<string, Array<[string, ...string[]]>>;
  /**
   * Also install `@dreamgym/llama` alone in a consumer and check the torch trainer it ships: in
   * the published tarball, found and started by the installed package, its errors and doctor's
   * check run from there. `python` is a Python with the trainer's requirements (the doctor
   * check with `--venv` of it passes); the bare `python3` stands for a user's Python without them.
   */
  llamaTrainer?: { venv: string };
  /** Also run the core README quick start in a consumer (with `dreamgym doctor --fix`). */
  quickStart: boolean;
  /** Environment of the examples (`DREAMGYM_DATA_DIR`). */
  exampleEnv: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** Keep the scratch folder (its path is in the result). */
  keep?: boolean;
}

export interface ConsumerResult {
  package: string;
  installed: Record<string, string>;
  installSeconds: number;
  /** What the README example printed, when it ran and passed. */
  exampleOutput?: string;
  /** What the README example printed when it failed (a `runtimeMissing` consumer). */
  exampleError?: string;
  /** What the `runtimeFix` commands printed. */
  fixOutput?: string;
}

/** What {@link ReleaseCheckOptions.llamaTrainer} found. */
export interface TrainerCheck {
  /** The `package/trainer/...` entries of the published @dreamgym/llama tarball. */
  tarballFiles: string[];
  /** Whether the installed package holds `trainer/dreamgym_trainer/worker.py`. */
  installedWorker: boolean;
  /** The worker's `health` answer, started by the installed package with a bare Python. */
  health: Record<string, unknown>;
  /** The error of `start` with that Python (it lacks torch). */
  startError: string;
  /** `npx @dreamgym/cli doctor --only trainer` there: missing, with its fix. */
  doctorMissing: string;
  /** The same with `--venv` of a virtualenv that has the trainer's requirements. */
  doctorOk: string;
}

/** A package's CHANGELOG.md after both releases. */
export interface Changelog {
  /** Whether the release commits hold it (`git ls-files`). */
  tracked: boolean;
  /** Its `## <version>` headings, newest first. */
  versions: string[];
}

export interface ReleaseCheckResult {
  scratch: string;
  registry: string;
  first: Release;
  second: Release;
  consumers: ConsumerResult[];
  changelogs: Record<string, Changelog>;
  quickStart?: { before: number; after: number; doctor: string };
  trainer?: TrainerCheck;
  upgrade: {
    package: string;
    before: Record<string, string>;
    after: Record<string, string>;
    exampleOutput: string;
  };
  transcript: TranscriptEntry[];
  seconds: number;
}

/** `@dreamgym/*` versions installed in a consumer. */
export function installedDreamgym(consumer: string): Record<string, string> {
  const folder = join(consumer, 'node_modules/@dreamgym');
  if (!existsSync(folder)) return {};
  return Object.fromEntries(
    readdirSync(folder).map((name) => [
      `@dreamgym/${name}`,
      JSON.parse(readFileSync(join(folder, name, 'package.json'), 'utf8')).version as string,
    ]),
  );
}

/**
 * The whole release check; throws on the first thing that does not work. Two releases of
 * every public package: the first consumes the repository's changesets, the second one
 * `minor` changeset on `@dreamgym/core` (the fixed group moves every package with it).
 */
export async function runReleaseCheck(options: ReleaseCheckOptions): Promise<ReleaseCheckResult> {
  const started = performance.now();
  const log = options.log ?? (() => {});
  const shell = new Shell(log);
  const { mkdtemp } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-release-registry-'));
  const registry = await startVerdaccio(join(scratch, 'verdaccio'));
  log(`Verdaccio at ${registry.url} (storage ${scratch}/verdaccio/storage)`);
  try {
    const home = join(scratch, 'home');
    await mkdir(home, { recursive: true });
    await writeFile(join(home, '.npmrc'), registry.npmrc);
    const copy = await prepareReleaseCopy(join(scratch, 'repository'), shell, {
      withDist: !options.build,
      ...(options.ref ? { ref: options.ref } : {}),
    });
    const first = await release(copy, registry, shell, { build: options.build, home });
    log(`first release: ${JSON.stringify(first.versions)}`);
    const directoryOf = (name: string) => {
      const pkg = publicPackages().find((p) => p.name === name);
      if (!pkg) throw new Error(`${name} is not a public package of this repository.`);
      return join(copy, pkg.directory.slice(repositoryRoot.length + 1));
    };
    // Each adapter in its own bare folder, installed and run side by side (npm mostly waits on
    // the registry: on two cores the four installs take half the time they take in turn).
    // @dreamgym/llama's consumer beside them.
    const checkingTrainer = options.llamaTrainer
      ? checkShippedTrainer(join(scratch, 'consumers', 'llama'), registry, shell, {
          version: first.versions['@dreamgym/llama']!,
          venv: options.llamaTrainer.venv,
        })
      : undefined;
    // Awaited after the adapters; a failure of theirs first must not leave it unhandled.
    checkingTrainer?.catch(() => {});
    const consumers = await Promise.all(
      options.consumers.map(async (name): Promise<ConsumerResult> => {
        const consumer = await createConsumer(
          join(scratch, 'consumers', name.replace('@dreamgym/', '')),
          registry,
        );
        const installStarted = performance.now();
        await consumerInstall(consumer, registry, [name], shell);
        const installSeconds = (performance.now() - installStarted) / 1000;
        const installed = installedDreamgym(consumer);
        if (
          installed[name] !== first.versions[name] ||
          installed['@dreamgym/core'] !== first.versions['@dreamgym/core']
        ) {
          throw new Error(
            `npm install ${name} installed ${JSON.stringify(installed)}, expected ${name}@${first.versions[name]} with @dreamgym/core@${first.versions['@dreamgym/core']}`,
          );
        }
        const result: ConsumerResult = { package: name, installed, installSeconds };
        if (options.examples && !options.examples.includes(name)) return result;
        for (const [command, ...args] of options.consumerSetup?.[name] ?? []) {
          await shell.run(command, args, { cwd: consumer });
        }
        const example = await readmeExample(directoryOf(name));
        const running = runReadmeExample(
          consumer,
          example.code,
          'example',
          shell,
          options.exampleEnv,
        );
        if (options.runtimeMissing?.includes(name)) {
          result.exampleError = await running.then(
            (output) => {
              throw new Error(`${name}'s README example ran without its runtime:\n${output}`);
            },
            (error: Error) => error.message,
          );
          const fixes = options.runtimeFix?.[name] ?? [];
          if (fixes.length > 0) {
            let fixOutput = '';
            for (const [command, ...args] of fixes) {
              fixOutput += await shell.run(command, args, {
                cwd: consumer,
                env: consumerNpmEnvironment(consumer),
              });
            }
            result.fixOutput = fixOutput;
            result.exampleOutput = await shell.run('node', ['example.mjs'], {
              cwd: consumer,
              env: options.exampleEnv,
              timeoutMs: 300_000,
            });
          }
        } else {
          result.exampleOutput = await running;
        }
        return result;
      }),
    );
    const trainer = await checkingTrainer;
    let quickStart: ReleaseCheckResult['quickStart'];
    if (options.quickStart) {
      const consumer = await createConsumer(join(scratch, 'consumers', 'quickstart'), registry);
      await consumerInstall(
        consumer,
        registry,
        ['@dreamgym/core', '@dreamgym/cli', 'vitest'],
        shell,
      );
      const doctor = await shell.run('npx', ['dreamgym', 'doctor', '--fix', '--only', 'faiss'], {
        cwd: consumer,
      });
      const readme = await readFile(join(directoryOf('@dreamgym/core'), 'README.md'), 'utf8');
      const [code] = codeBlocks(readme, '## Quick start', 'js');
      await writeFile(join(consumer, 'quickstart.mjs'), code!);
      const output = await shell.run('node', ['quickstart.mjs'], {
        cwd: consumer,
        timeoutMs: 300_000,
      });
      quickStart = { ...quickStartSuccess(output), doctor };
    }
    // The second release: one minor changeset on core; the fixed group moves every package.
    await addChangeset(
      copy,
      'second-release',
      { '@dreamgym/core': 'minor' },
      'A minor release of core, to check that the fixed group moves together and stays in 0.x.',
    );
    const second = await release(copy, registry, shell, { build: false, home });
    log(`second release: ${JSON.stringify(second.versions)}`);
    const changelogs: Record<string, Changelog> = {};
    const tracked = new Set(
      (await shell.run('git', ['ls-files'], { cwd: copy })).split('\n').filter(Boolean),
    );
    for (const name of Object.keys(second.versions)) {
      const relativeChangelog = join(relative(copy, directoryOf(name)), 'CHANGELOG.md');
      const text = existsSync(join(copy, relativeChangelog))
        ? await readFile(join(copy, relativeChangelog), 'utf8')
        : '';
      changelogs[name] = {
        tracked: tracked.has(relativeChangelog),
        versions: [...text.matchAll(/^## (\S+)$/gm)].map((match) => match[1]!),
      };
    }
    // A 0.x minor may break, so `npm update` stays within the installed minor: the user moves
    // the adapter and its peer core to the new release together (docs/releasing.md).
    const upgraded = options.consumers[0]!;
    const consumer = join(scratch, 'consumers', upgraded.replace('@dreamgym/', ''));
    const before = installedDreamgym(consumer);
    await consumerInstall(
      consumer,
      registry,
      [`${upgraded}@latest`, '@dreamgym/core@latest'],
      shell,
    );
    const after = installedDreamgym(consumer);
    const exampleOutput = await shell.run('node', ['example.mjs'], {
      cwd: consumer,
      env: options.exampleEnv,
    });
    return {
      scratch,
      registry: registry.url,
      first,
      second,
      consumers,
      changelogs,
      ...(quickStart ? { quickStart } : {}),
      ...(trainer ? { trainer } : {}),
      upgrade: { package: upgraded, before, after, exampleOutput },
      transcript: shell.transcript,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await registry.stop();
    if (!options.keep) await removeFolder(scratch);
  }
}
